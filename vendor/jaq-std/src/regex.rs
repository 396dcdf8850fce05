//! Helpers to interface with the `regex` crate.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use bstr::ByteSlice;
// lro: the `regex` crate, whose Unicode classes and case folding are jq's (vendor/README.md)
use ::regex::bytes::{self as regex, Regex, RegexBuilder};
use ::regex::Error;

#[derive(Copy, Clone, Default)]
pub struct Flags {
    // global search
    g: bool,
    // ignore empty matches
    n: bool,
    // case-insensitive
    i: bool,
    // multi-line mode: ^ and $ match begin/end of line
    m: bool,
    // single-line mode: allow . to match \n
    s: bool,
    // greedy
    l: bool,
    // extended mode: ignore whitespace and allow line comments (starting with `#`)
    x: bool,
}

impl Flags {
    pub fn new(flags: &str) -> Result<Self, char> {
        let mut out = Self::default();
        for flag in flags.chars() {
            match flag {
                'g' => out.g = true,
                'n' => out.n = true,
                'i' => out.i = true,
                'm' => out.m = true,
                's' => out.s = true,
                'l' => out.l = true,
                'x' => out.x = true,
                'p' => {
                    out.m = true;
                    out.s = true;
                }
                c => return Err(c),
            }
        }
        Ok(out)
    }

    pub fn ignore_empty(self) -> bool {
        self.n
    }

    pub fn global(self) -> bool {
        self.g
    }

    fn impact(self, builder: &mut RegexBuilder) -> &mut RegexBuilder {
        builder
            .case_insensitive(self.i)
            .multi_line(self.m)
            .dot_matches_new_line(self.s)
            .swap_greed(self.l)
            .ignore_whitespace(self.x)
    }

    /// lro: Err is a one-line message (`invalid regex "(": unclosed group (at offset 0)`); the
    /// `regex` crate's own text spans lines, with the pattern and a caret under the construct.
    pub fn regex(self, re: &str) -> Result<Regex, String> {
        let mut builder = RegexBuilder::new(re);
        self.impact(&mut builder).build().map_err(|e| self.error(re, e))
    }

    /// The `regex` crate gives its syntax errors as text only, so the pattern is parsed again,
    /// with the same flags, to get the error's kind and position.
    fn error(self, re: &str, e: Error) -> String {
        let parsed = regex_syntax::ParserBuilder::new()
            .case_insensitive(self.i)
            .multi_line(self.m)
            .dot_matches_new_line(self.s)
            .swap_greed(self.l)
            .ignore_whitespace(self.x)
            .utf8(false)
            .build()
            .parse(re);
        let (kind, at) = match parsed {
            Err(regex_syntax::Error::Parse(e)) => (e.kind().to_string(), Some(e.span().start)),
            Err(regex_syntax::Error::Translate(e)) => (e.kind().to_string(), Some(e.span().start)),
            // A compiled regex over the size limit, or a parser that disagrees: the crate's
            // text, whose last line names the error.
            _ => {
                let text = e.to_string();
                let kind = text.rsplit_once("error: ").map_or(&*text, |(_, kind)| kind);
                (kind.trim_end_matches('.').to_string(), None)
            }
        };
        // jq's match offsets count characters, so this one does too.
        let at = at.map(|at| re[..at.offset].chars().count());
        let shown = shown_pattern(re, at.unwrap_or(0));
        match at {
            Some(at) => alloc::format!("invalid regex {shown}: {kind} (at offset {at})"),
            None => alloc::format!("invalid regex {shown}: {kind}"),
        }
    }
}

/// The pattern, quoted; a long one only around `at` (a character offset), so that an error does
/// not repeat a pattern of kilobytes.
fn shown_pattern(re: &str, at: usize) -> String {
    const WHOLE: usize = 80;
    const BEFORE: usize = 30;
    let chars = re.chars().count();
    if chars <= WHOLE {
        return alloc::format!("{re:?}");
    }
    let start = at.saturating_sub(BEFORE).min(chars - WHOLE);
    let part: String = re.chars().skip(start).take(WHOLE).collect();
    let before = if start > 0 { "…" } else { "" };
    let after = if start + WHOLE < chars { "…" } else { "" };
    alloc::format!("{before}{part:?}{after}")
}

type CharIndices<'a> =
    core::iter::Chain<bstr::CharIndices<'a>, core::iter::Once<(usize, usize, char)>>;

/// Mapping between byte and character indices.
pub struct ByteChar<'a>(core::iter::Peekable<core::iter::Enumerate<CharIndices<'a>>>);

impl<'a> ByteChar<'a> {
    pub fn new(s: &'a [u8]) -> Self {
        let last = core::iter::once((s.len(), 0, '\0'));
        Self(s.char_indices().chain(last).enumerate().peekable())
    }

    /// Convert byte offset to UTF-8 character offset.
    ///
    /// This needs to be called with monotonically increasing values of `byte_offset`.
    /// lro: None when `byte_offset` falls inside a character (before, it looped to the end and
    /// every later offset got None too).
    fn char_of_byte(&mut self, byte_offset: usize) -> Option<usize> {
        loop {
            let (char_i, (byte_i, _, _char)) = self.0.peek()?;
            if byte_offset == *byte_i {
                return Some(*char_i);
            } else if *byte_i > byte_offset {
                return None;
            } else {
                self.0.next();
            }
        }
    }
}

pub struct Match<B, S> {
    pub offset: usize,
    pub length: usize,
    pub string: B,
    pub name: Option<S>,
}

impl<'a> Match<&'a [u8], &'a str> {
    /// lro: `whole` is where the whole match starts, in bytes and in characters; `m` starts
    /// there or later. Capture groups are not in the text's order (in `(?:(a)|(b))+` over `"ba"`,
    /// group 2 comes before group 1), so their offsets cannot come from the forward-only
    /// [`ByteChar`], which panicked on them.
    pub fn new(s: &[u8], whole: (usize, usize), m: regex::Match<'a>, name: Option<&'a str>) -> Self {
        let before = s.get(whole.0..m.start()).unwrap_or_default();
        Self {
            offset: whole.1 + before.chars().count(),
            length: m.as_bytes().chars().count(),
            string: m.as_bytes(),
            name,
        }
    }

    pub fn fields<T: From<isize> + From<String> + 'a>(
        &self,
        f: impl Fn(&'a [u8]) -> T,
    ) -> impl Iterator<Item = (T, T)> + '_ {
        [
            ("offset", (self.offset as isize).into()),
            ("length", (self.length as isize).into()),
            ("string", f(self.string)),
        ]
        .into_iter()
        .chain(self.name.iter().map(|n| ("name", (*n).to_string().into())))
        .map(|(k, v)| (k.to_string().into(), v))
    }
}

pub enum Part<B, S> {
    Matches(Vec<Match<B, S>>),
    Mismatch(B),
}

/// Apply a regular expression to the given input value.
///
/// `sm` indicates whether to
/// 1. output strings that do *not* match the regex, and
/// 2. output the matches.
pub fn regex<'a>(
    s: &'a [u8],
    re: &'a Regex,
    flags: Flags,
    sm: (bool, bool),
) -> Vec<Part<&'a [u8], &'a str>> {
    // mismatches & matches
    let (mi, ma) = sm;

    let mut last_byte = 0;
    let mut bc = ByteChar::new(s);
    let mut out = Vec::new();

    for c in re.captures_iter(s) {
        let whole = c.get(0).unwrap();
        if flags.ignore_empty() && whole.as_bytes().is_empty() {
            continue;
        }
        // lro: jq matches only between characters; the `regex` crate's byte regexes also match
        // from between the bytes of one character: the empty string (`"é" | match(""; "g")`),
        // or any match where `(?-u)` turns Unicode off. Those matches are skipped.
        let Some(start) = bc.char_of_byte(whole.start()) else {
            continue;
        };
        let match_names = c.iter().zip(re.capture_names());
        let matches = match_names.filter_map(|(m, n)| Some(Match::new(s, (whole.start(), start), m?, n)));
        if mi {
            out.push(Part::Mismatch(&s[last_byte..whole.start()]));
            last_byte = whole.end();
        }
        if ma {
            out.push(Part::Matches(matches.collect()));
        }
        if !flags.global() {
            break;
        }
    }
    if mi {
        out.push(Part::Mismatch(&s[last_byte..]));
    }
    out
}
