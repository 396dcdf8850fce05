//! jq, as jaq 3 runs it, with what agents expect from jq 1.6 on top: `@tsv` and `@csv`, JSON
//! written the way jq writes it (numbers, escapes), errors that say where, and no way to hang
//! the caller through `halt` or deep input.
//!
//! Known differences from jq 1.6 are listed in the README ("jq compatibility").

use std::fmt::Write as _;

use jaq_core::load::{self, Arena, File, Loader};
use jaq_core::native::{Fun, bome, run, unary, v};
use jaq_core::{Compiler, Ctx, DataT, RunPtr, Vars, data::JustLut};
use jaq_json::{Num, Val};

use crate::Error;

/// The data kind filters run with: values only, no `input`/`inputs` (every value comes in as `.`).
type Kind = JustLut<Val>;

/// A compiled filter.
pub struct Filter {
    filter: jaq_core::Filter<Kind>,
    vars: usize,
}

/// Definitions layered over jaq's standard library (later definitions shadow earlier ones): the
/// string builtins agents use most name themselves when given a non-string, as jq's do, instead
/// of jaq's anonymous "cannot use null as string"; and where jaq and jq 1.6 disagree on
/// something agents write (`tostring` of `3.0`, `from_entries` with `name`, `null | index(x)`,
/// `ltrimstr` of a non-string, `leaf_paths`, `tostream`), jq's behaviour wins.
const JQ_COMPAT: &str = r#"
def lro_not_string($op; $what):
  error("\($op): \(type) (\(tojson | if length > 60 then .[:57] + "..." else . end)) \($what)");
def lro_unmatchable($op): lro_not_string($op; "cannot be matched, as it is not a string");
def test(re; flags): if isstring then lro_test_(re; flags) else lro_unmatchable("test") end;
def test(re): test(re; "");
def match(re; flags): if isstring then matches(re; flags)[] | .[0] + { captures: .[1:] } else lro_unmatchable("match") end;
def match(re): match(re; "");
def capture(re; flags): if isstring then matches(re; flags)[] | capture_of_match else lro_unmatchable("capture") end;
def capture(re): capture(re; "");
def scan(re; flags): if isstring then scan_(re; "g" + flags) else lro_unmatchable("scan") end;
def scan(re): scan(re; "");
def split(re; flags): if isstring then split_(re; flags + "g") else lro_unmatchable("split") end;
def splits(re; flags): split(re; flags)[];
def splits(re): splits(re; "");
def sub(re; f; flags):
  def handle: if isarray then capture_of_match | f end;
  if isstring then reduce split_matches(re; flags)[] as $x (""; . + ($x | handle)) else lro_unmatchable("sub") end;
def sub(re; f): sub(re; f; "");
def gsub(re; f; flags): sub(re; f; "g" + flags);
def gsub(re; f): sub(re; f; "g");
def startswith($s): lro_affix_($s; true);
def endswith($s): lro_affix_($s; false);
def ltrimstr($s): if isstring and ($s | isstring) then lro_ltrimstr_($s) else . end;
def rtrimstr($s): if isstring and ($s | isstring) then lro_rtrimstr_($s) else . end;
def tojson: lro_tojson_;
def tostring: if isstring then . else lro_tojson_ end;
def @json: lro_tojson_;
def @text: tostring;
def join($x): reduce .[] as $i (null;
  (if . == null then "" else . + $x end) + ($i | if . == null then "" elif isstring then . else lro_tojson_ end)) // "";
def from_entries: map({(.key // .k // .name // .Name // .K // .Key | if isstring then . else lro_tojson_ end):
  (if has("value") then .value else .v end)}) | add + {} // {};
def with_entries(f): to_entries | map(f) | from_entries;
def index($i): if . == null then null else indices($i) | .[0] end;
def rindex($i): if . == null then null else indices($i) | .[-1:][0] end;
def leaf_paths: paths(scalars);
def tostream: path(def r: (.[]? | r), .; r) as $p | getpath($p) | reduce path(.[]?) as $q ([$p, .]; [$p + $q]);
def @html: tostring | escape_html;
def @uri: tostring | encode_uri;
def @base64: tostring | encode_base64;
def @base64d: tostring | decode_base64;
def input_filename: null;
def env: $ENV;
"#;

fn jq_compat_defs() -> impl Iterator<Item = load::parse::Def<&'static str>> {
    load::parse(JQ_COMPAT, |p| p.defs())
        .expect("JQ_COMPAT parses")
        .into_iter()
}

/// Deepest nesting of arrays and objects accepted in input. jq 1.6 stops at 10,000; jaq's parser
/// recurses, so the limit is lower to stay well inside the component's stack.
pub const MAX_DEPTH: usize = 1000;

fn tabular_base<D: for<'a> DataT<V<'a> = Val>>() -> Box<[jaq_core::native::Filter<RunPtr<D>>]> {
    Box::new([
        ("@tsv", v(0), |cv| bome(tabular(&cv.1, Tabular::Tsv))),
        ("@csv", v(0), |cv| bome(tabular(&cv.1, Tabular::Csv))),
        ("lro_tojson_", v(0), |cv| {
            bome(Ok(Val::utf8_str(to_json(&cv.1).into_bytes())))
        }),
        ("lro_ltrimstr_", v(1), |cv| unary(cv, |v, p| Ok(trim(v, &p, true)))),
        ("lro_affix_", v(2), |mut cv| {
            let prefix = cv.0.pop_var();
            let affix = cv.0.pop_var();
            // The type check is here, not in the jq definition: run per record, a jq-level
            // check cost more than the comparison (`type` builds a string each time).
            let (Val::TStr(s) | Val::BStr(s), Val::TStr(a) | Val::BStr(a)) = (&cv.1, &affix) else {
                let op = if matches!(prefix, Val::Bool(true)) {
                    "startswith"
                } else {
                    "endswith"
                };
                return bome(Err(not_string(op, &cv.1, "and its argument must both be strings")));
            };
            bome(Ok(Val::Bool(if matches!(prefix, Val::Bool(true)) {
                s.starts_with(a)
            } else {
                s.ends_with(a)
            })))
        }),
        ("lro_test_", v(2), |mut cv| {
            let flags = cv.0.pop_var();
            let re = cv.0.pop_var();
            bome(regex_test(&cv.1, &re, &flags).map(Val::Bool))
        }),
        ("lro_rtrimstr_", v(1), |cv| unary(cv, |v, p| Ok(trim(v, &p, false)))),
    ])
}

/// The error `lro_not_string` raises: `OP: TYPE (JSON, cut at 60 characters) WHAT`.
fn not_string(op: &str, value: &Val, what: &str) -> jaq_core::Error<Val> {
    let json = to_json(value);
    let shown = if json.chars().count() > 60 {
        json.chars().take(57).collect::<String>() + "..."
    } else {
        json
    };
    jaq_core::Error::str(format_args!("{op}: {} ({shown}) {what}", type_name(value)))
}

/// jq's `ltrimstr`/`rtrimstr` on two strings: the input without the affix, or unchanged.
fn trim(value: Val, affix: &Val, prefix: bool) -> Val {
    let (Val::TStr(s), Val::TStr(a)) = (&value, affix) else {
        return value;
    };
    let rest = if prefix {
        s.strip_prefix(&a[..])
    } else {
        s.strip_suffix(&a[..])
    };
    match rest {
        Some(rest) => Val::utf8_str(rest.to_vec()),
        None => value,
    }
}

/// `test(re; flags)` on a string: whether `re` matches, as jaq's `matches(re; flags) | any` says,
/// without building match objects, and with the compiled regex kept for the next input. jaq
/// compiles the regex again for every call, which cost most of a per-record `test` over a file.
fn regex_test(input: &Val, re: &Val, flags: &Val) -> Result<bool, jaq_core::Error<Val>> {
    use jaq_std::ValT as _;
    let text = input.try_as_utf8_bytes()?;
    let flags = std::str::from_utf8(flags.try_as_utf8_bytes()?).map_err(jaq_core::Error::str)?;
    let re = std::str::from_utf8(re.try_as_utf8_bytes()?).map_err(jaq_core::Error::str)?;
    if let Some(found) = literal_test(text, re, flags) {
        return Ok(found);
    }
    let compiled = REGEXES.with_borrow_mut(|cache| -> Result<_, jaq_core::Error<Val>> {
        if let Some(at) = cache.iter().position(|(r, f, _)| r == re && f == flags) {
            return Ok(cache[at].2.clone());
        }
        let mut builder = regex_bites::bytes::RegexBuilder::new(re);
        let mut ignore_empty = false;
        for flag in flags.chars() {
            match flag {
                'g' => {}
                'n' => ignore_empty = true,
                'i' => _ = builder.case_insensitive(true),
                'm' => _ = builder.multi_line(true),
                's' => _ = builder.dot_matches_new_line(true),
                'l' => _ = builder.swap_greed(true),
                'x' => _ = builder.ignore_whitespace(true),
                'p' => _ = builder.multi_line(true).dot_matches_new_line(true),
                c => return Err(jaq_core::Error::str(format_args!("invalid regex flag: {c}"))),
            }
        }
        let regex = builder
            .build()
            .map_err(|e| jaq_core::Error::str(format_args!("invalid regex: {e}")))?;
        let compiled = std::rc::Rc::new((regex, ignore_empty));
        if cache.len() == REGEX_CACHE {
            cache.remove(0);
        }
        cache.push((re.to_owned(), flags.to_owned(), compiled.clone()));
        Ok(compiled)
    })?;
    let (regex, ignore_empty) = &*compiled;
    Ok(if *ignore_empty {
        regex.find_iter(text).any(|m| !m.as_bytes().is_empty())
    } else {
        regex.is_match(text)
    })
}

/// `test` of a regex without metacharacters, with no flag but `i` (ASCII case-insensitive, as
/// regex-bites has it) or `g` (no effect on a test): a substring search, much faster than the
/// regex engine. None when the regex is not such a literal.
fn literal_test(text: &[u8], re: &str, flags: &str) -> Option<bool> {
    if re.is_empty()
        || re
            .bytes()
            .any(|c| b"\\.+*?()|[]{}^$#".contains(&c) || c.is_ascii_whitespace())
    {
        return None;
    }
    let ignore_case = match flags {
        "" | "g" => false,
        "i" | "gi" | "ig" => true,
        _ => return None,
    };
    let needle = re.as_bytes();
    if !ignore_case {
        return Some(memchr::memmem::find(text, needle).is_some());
    }
    let first = needle[0];
    let mut from = 0;
    while let Some(at) = memchr::memchr2(first.to_ascii_lowercase(), first.to_ascii_uppercase(), &text[from..]) {
        let start = from + at;
        if text.len() - start < needle.len() {
            return Some(false);
        }
        if text[start..start + needle.len()].eq_ignore_ascii_case(needle) {
            return Some(true);
        }
        from = start + 1;
    }
    Some(false)
}

/// How many compiled regexes `test` keeps (a filter rarely has more than a few).
const REGEX_CACHE: usize = 16;

type CompiledRegex = std::rc::Rc<(regex_bites::bytes::Regex, bool)>;

thread_local! {
    static REGEXES: std::cell::RefCell<Vec<(String, String, CompiledRegex)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

// Built in two steps, as jaq-json builds its own natives: the fn pointers only unify with
// `RunPtr<D>` when their type is stated in a generic signature.
fn tabular_funs<D: for<'a> DataT<V<'a> = Val>>() -> impl Iterator<Item = Fun<D>> {
    tabular_base().into_vec().into_iter().map(run)
}

#[derive(Clone, Copy)]
enum Tabular {
    Tsv,
    Csv,
}

/// jq 1.6's `@tsv` and `@csv`: an array of scalars to one line.
fn tabular(value: &Val, kind: Tabular) -> Result<Val, jaq_core::Error<Val>> {
    let (name, sep) = match kind {
        Tabular::Tsv => ("tsv", '\t'),
        Tabular::Csv => ("csv", ','),
    };
    let Val::Arr(items) = value else {
        return Err(jaq_core::Error::str(format!(
            "{} ({}) cannot be {name}-formatted, only an array can be",
            type_name(value),
            to_json(value)
        )));
    };
    let mut line = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            line.push(sep);
        }
        match item {
            Val::Null => {}
            Val::Bool(b) => line.push_str(if *b { "true" } else { "false" }),
            Val::Num(n) => write_num(&mut line, n),
            Val::TStr(s) | Val::BStr(s) => {
                let s = String::from_utf8_lossy(s);
                match kind {
                    Tabular::Tsv => {
                        for c in s.chars() {
                            match c {
                                '\t' => line.push_str("\\t"),
                                '\n' => line.push_str("\\n"),
                                '\r' => line.push_str("\\r"),
                                '\\' => line.push_str("\\\\"),
                                c => line.push(c),
                            }
                        }
                    }
                    Tabular::Csv => {
                        line.push('"');
                        line.push_str(&s.replace('"', "\"\""));
                        line.push('"');
                    }
                }
            }
            Val::Arr(_) | Val::Obj(_) => {
                return Err(jaq_core::Error::str(format!(
                    "{} ({}) is not valid in a csv row",
                    type_name(item),
                    to_json(item)
                )));
            }
        }
    }
    Ok(Val::utf8_str(line.into_bytes()))
}

/// jq's name for a value's type.
pub fn type_name(value: &Val) -> &'static str {
    match value {
        Val::Null => "null",
        Val::Bool(_) => "boolean",
        Val::Num(_) => "number",
        Val::TStr(_) | Val::BStr(_) => "string",
        Val::Arr(_) => "array",
        Val::Obj(_) => "object",
    }
}

impl Filter {
    /// Compiles `code` with global variables `vars` (names without `$`), in that order.
    /// `$ENV` is always defined, as an empty object: the sandbox has no environment.
    pub fn compile(code: &str, vars: &[&str]) -> Result<Filter, Error> {
        let names: Vec<String> = std::iter::once("$ENV".to_owned())
            .chain(vars.iter().map(|v| format!("${v}")))
            .collect();
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs())
            .chain(jq_compat_defs());
        let loader = Loader::new(defs);
        let arena = Arena::default();
        let modules = loader.load(&arena, File { code, path: () }).map_err(|errors| {
            let mut message = String::new();
            for (_, error) in errors {
                describe_load_error(code, error, &mut message);
            }
            Error::InvalidFilter(message.trim_end().to_owned())
        })?;
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs())
            .chain(tabular_funs());
        let filter = Compiler::default()
            .with_funs(funs)
            .with_global_vars(names.iter().map(String::as_str))
            .compile(modules)
            .map_err(|errors| {
                let mut message = String::new();
                for (_, errors) in errors {
                    for (found, undefined) in errors {
                        let what = match (found, &undefined) {
                            ("reduce", _) | ("foreach", _) => "wrong number of arguments to".to_owned(),
                            _ => format!("undefined {}", undefined.as_str()),
                        };
                        let _ = writeln!(message, "{what} `{found}` at {}", position(code, found));
                    }
                }
                Error::InvalidFilter(message.trim_end().to_owned())
            })?;
        Ok(Filter {
            filter,
            vars: vars.len(),
        })
    }

    /// Runs the filter on `input` with `vars` (in the order given to `compile`), calling `each`
    /// for every output until it returns false. Stops at the first error, which it returns.
    pub fn run(&self, input: Val, vars: &[Val], each: &mut dyn FnMut(Val) -> bool) -> Result<Flow, String> {
        assert_eq!(vars.len(), self.vars, "one value per variable");
        let env = Val::obj(Default::default());
        let ctx = Ctx::<Kind>::new(
            &self.filter.lut,
            Vars::new(std::iter::once(env).chain(vars.iter().cloned())),
        );
        for output in self.filter.id.run((ctx, input)) {
            match output {
                Ok(value) => {
                    if !each(value) {
                        return Ok(Flow::Stop);
                    }
                }
                Err(exn) => {
                    return match exn.get_err() {
                        Ok(error) => Err(describe_runtime_error(error)),
                        // `halt` ends the program in jq; here it ends the outputs.
                        Err(exn) => match exn.get_halt() {
                            Ok(_) => Ok(Flow::Halt),
                            Err(_) => Err("the filter broke out of a label it was not inside".to_owned()),
                        },
                    };
                }
            }
        }
        Ok(Flow::Continue)
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// All outputs were produced.
    Continue,
    /// The caller asked to stop.
    Stop,
    /// The filter called `halt`.
    Halt,
}

fn describe_runtime_error(error: jaq_core::Error<Val>) -> String {
    // A string given to `error` is the message itself, as jq prints it; anything else as JSON.
    match error.into_val() {
        Val::TStr(s) | Val::BStr(s) => String::from_utf8_lossy(&s).into_owned(),
        other => to_json(&other),
    }
}

fn describe_load_error(code: &str, error: load::Error<&str>, out: &mut String) {
    match error {
        load::Error::Io(errors) => {
            for (path, reason) in errors {
                let _ = writeln!(
                    out,
                    "cannot load module {path:?}: {reason} (modules are not available here)"
                );
            }
        }
        load::Error::Lex(errors) => {
            for (expected, found) in errors {
                let found_text = found
                    .chars()
                    .next()
                    .map_or("the end of the filter".to_owned(), |c| format!("`{c}`"));
                let _ = writeln!(
                    out,
                    "expected {} but found {found_text} at {}",
                    expected.as_str(),
                    position(code, found)
                );
            }
        }
        load::Error::Parse(errors) => {
            for (expected, found) in errors {
                let found_text = if found.is_empty() {
                    "the end of the filter".to_owned()
                } else {
                    format!("`{found}`")
                };
                let _ = writeln!(
                    out,
                    "expected {} but found {found_text} at {}",
                    expected.as_str(),
                    position(code, found)
                );
            }
        }
    }
}

/// "line L, column C" of the subslice `part` of `code` (1-based, columns in characters).
fn position(code: &str, part: &str) -> String {
    let start = load::span(code, part).start.min(code.len());
    let before = &code[..start];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    if line == 1 {
        format!("column {column}")
    } else {
        format!("line {line}, column {column}")
    }
}

/// The deepest nesting of arrays and objects in JSON text, ignoring brackets inside strings;
/// stops counting once `limit` is passed.
pub fn depth(text: &[u8], limit: usize) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    max = depth;
                    if max > limit {
                        return max;
                    }
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Parses one JSON value, refusing nesting deeper than [`MAX_DEPTH`].
pub fn parse(text: &str) -> Result<Val, String> {
    if depth(text.as_bytes(), MAX_DEPTH) > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    jaq_json::read::parse_single(text.as_bytes()).map_err(|e| e.to_string())
}

/// Parses whitespace-separated JSON values, refusing nesting deeper than [`MAX_DEPTH`].
pub fn parse_many(text: &str) -> Result<Vec<Val>, String> {
    if depth(text.as_bytes(), MAX_DEPTH) > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    jaq_json::read::parse_many(text.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

/// A JSON string value.
pub fn string(s: &str) -> Val {
    Val::utf8_str(s.as_bytes().to_vec())
}

/// Compact JSON, as `jq -c` writes it.
pub fn to_json(value: &Val) -> String {
    let mut out = String::new();
    write_json(&mut out, value);
    out
}

/// The value as `jq -r` prints it: strings raw, everything else as JSON.
pub fn to_raw(value: &Val) -> String {
    match value {
        Val::TStr(s) | Val::BStr(s) => String::from_utf8_lossy(s).into_owned(),
        other => to_json(other),
    }
}

/// Writes `value` as compact JSON the way jq 1.6 does.
pub fn write_json(out: &mut String, value: &Val) {
    match value {
        Val::Null => out.push_str("null"),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Num(n) => write_num(out, n),
        Val::TStr(s) | Val::BStr(s) => write_string(out, &String::from_utf8_lossy(s)),
        Val::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Val::Obj(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match k {
                    Val::TStr(s) | Val::BStr(s) => write_string(out, &String::from_utf8_lossy(s)),
                    other => write_string(out, &to_json(other)),
                }
                out.push(':');
                write_json(out, v);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Whether `text` is one valid JSON value that [`write_json`] would print exactly as it is, so
/// that it can be output without parsing and printing it again: compact, escapes as jq writes
/// them, numbers in jq's form, no repeated member names.
pub fn is_canonical(text: &str) -> bool {
    let b = text.as_bytes();
    // Member names of the objects open at this point (the innermost last) and whether the
    // next string in each container is a member name.
    let mut names: Vec<Vec<&[u8]>> = Vec::new();
    let mut containers: Vec<bool> = Vec::new();
    let mut name_next = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i + 1;
                i = start;
                loop {
                    match b.get(i) {
                        None => return false,
                        Some(b'"') => break,
                        Some(b'\\') => {
                            let ok = match b.get(i + 1) {
                                Some(b'"' | b'\\' | b'n' | b't' | b'r' | b'b' | b'f') => {
                                    i += 2;
                                    true
                                }
                                // jq writes \u only for the other control characters and DEL,
                                // in lower case.
                                Some(b'u') => {
                                    let hex = b.get(i + 2..i + 6).unwrap_or_default();
                                    let code = std::str::from_utf8(hex)
                                        .ok()
                                        .and_then(|h| u32::from_str_radix(h, 16).ok());
                                    i += 6;
                                    matches!(code, Some(c) if (c < 0x20 && !matches!(c, 0x8 | 0x9 | 0xa | 0xc | 0xd)) || c == 0x7f)
                                        && hex.iter().all(|h| !h.is_ascii_uppercase())
                                }
                                _ => false,
                            };
                            if !ok {
                                return false;
                            }
                        }
                        Some(&c) if c < 0x20 || c == 0x7f => return false,
                        Some(_) => i += 1,
                    }
                }
                if name_next {
                    let name = &b[start..i];
                    let seen = names.last_mut().expect("names are read inside objects");
                    if seen.contains(&name) {
                        return false;
                    }
                    seen.push(name);
                    name_next = false;
                }
                i += 1;
            }
            b'{' => {
                containers.push(true);
                names.push(Vec::new());
                name_next = true;
                i += 1;
            }
            b'[' => {
                containers.push(false);
                i += 1;
            }
            b'}' | b']' => {
                if containers.pop() == Some(true) {
                    names.pop();
                }
                name_next = false;
                i += 1;
            }
            b',' => {
                name_next = containers.last() == Some(&true);
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                let token = &text[start..i];
                let digits = token.strip_prefix('-').unwrap_or(token);
                let plain = !digits.is_empty()
                    && digits.len() <= 15
                    && digits.bytes().all(|d| d.is_ascii_digit())
                    && (digits == "0" && token.len() == 1 || !digits.starts_with('0'));
                if !plain {
                    let Some(n) = jaq_json::read::parse_single_num(token.as_bytes()) else {
                        return false;
                    };
                    let mut printed = String::new();
                    write_num(&mut printed, &n);
                    if printed != token {
                        return false;
                    }
                }
            }
            b':' => i += 1,
            b't' if b[i..].starts_with(b"true") => i += 4,
            b'f' if b[i..].starts_with(b"false") => i += 5,
            b'n' if b[i..].starts_with(b"null") => i += 4,
            _ => return false,
        }
    }
    // The scan checked the form; the grammar (commas, colons, brackets) is serde_json's to check.
    // Anything it refuses goes the general way, which reports what is wrong.
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// jq 1.6 holds every number as a double and prints it with `%.17g`-style shortest digits.
fn write_num(out: &mut String, n: &Num) {
    match n {
        Num::Int(i) if (*i as i64).unsigned_abs() <= 1u64 << 53 => {
            let _ = write!(out, "{i}");
        }
        Num::Int(i) => write_f64(out, *i as f64),
        Num::Float(f) => write_f64(out, *f),
        Num::BigInt(b) => write_f64(out, b.to_string().parse().unwrap_or(f64::NAN)),
        Num::Dec(d) => write_f64(out, d.parse().unwrap_or(f64::NAN)),
    }
}

/// Formats a double as jq 1.6 does (its `jvp_dtoa_fmt`): the shortest digits that round-trip,
/// positional unless the exponent is below -4 or more than 15 past the digits; NaN as null,
/// infinities as the largest double.
pub fn write_f64(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("null");
        return;
    }
    let f = if f.is_infinite() { f.signum() * f64::MAX } else { f };
    if f == 0.0 {
        out.push_str(if f.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    if f < 0.0 {
        out.push('-');
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').expect("LowerExp always writes an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exponent: i64 = exponent.parse().expect("LowerExp writes a decimal exponent");
    let decpt = exponent + 1;
    let ndigits = digits.len() as i64;
    if decpt <= -4 || decpt > ndigits + 15 {
        out.push_str(&digits[..1]);
        if ndigits > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-decpt) as usize));
        out.push_str(&digits);
    } else if decpt >= ndigits {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (decpt - ndigits) as usize));
    } else {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(code: &str, input: &str) -> Result<Vec<String>, String> {
        let filter = Filter::compile(code, &[]).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        filter.run(parse(input).unwrap(), &[], &mut |v| {
            out.push(to_json(&v));
            true
        })?;
        Ok(out)
    }

    #[test]
    fn numbers_print_like_jq_1_6() {
        let cases = [
            ("1.0", "1"),
            ("3.00", "3"),
            ("1e15", "1000000000000000"),
            ("1e16", "1e+16"),
            ("123456789012345678", "123456789012345680"),
            ("0.0001", "0.0001"),
            ("0.00001234", "1.234e-05"),
            ("1.5e300", "1.5e+300"),
            ("1e1000", "1.7976931348623157e+308"),
            ("-0.0", "-0"),
            ("12345678901234567890123", "12345678901234568000000"),
            ("5e-324", "5e-324"),
            ("1.25", "1.25"),
            ("100", "100"),
        ];
        for (input, expected) in cases {
            assert_eq!(run(".", input).unwrap(), [expected], "{input}");
        }
        assert_eq!(
            run("[nan, infinite, -infinite, 6 / 4, 6 / 2]", "null").unwrap(),
            ["[null,1.7976931348623157e+308,-1.7976931348623157e+308,1.5,3]"]
        );
    }

    #[test]
    fn strings_escape_like_jq() {
        assert_eq!(
            run(".", r#""a\"b\\c\n\t\r\b\f\u0001\u007f/é""#).unwrap(),
            [r#""a\"b\\c\n\t\r\b\f\u0001\u007f/é""#]
        );
    }

    #[test]
    fn tsv_and_csv_follow_jq_1_6() {
        assert_eq!(
            run("@tsv", r#"["a\tb\\c\nd\re", 1.1, 3.0, null, true]"#).unwrap(),
            [r#""a\\tb\\\\c\\nd\\re\t1.1\t3\t\ttrue""#]
        );
        assert_eq!(
            run("@csv", r#"["a\"b", 1.1, null, false]"#).unwrap(),
            [r#""\"a\"\"b\",1.1,,false""#]
        );
        assert_eq!(
            run("@tsv", "[[1]]").unwrap_err(),
            "array ([1]) is not valid in a csv row"
        );
        assert_eq!(
            run("@csv", "{}").unwrap_err(),
            "object ({}) cannot be csv-formatted, only an array can be"
        );
    }

    #[test]
    fn variables_bind_in_order() {
        let filter = Filter::compile("[$a, $b]", &["a", "b"]).unwrap();
        let mut out = Vec::new();
        filter
            .run(Val::Null, &[string("x"), string("y")], &mut |v| {
                out.push(to_json(&v));
                true
            })
            .unwrap();
        assert_eq!(out, [r#"["x","y"]"#]);
    }

    #[test]
    fn parse_errors_say_where() {
        let err = Filter::compile(".a | ", &[]).err().unwrap().to_string();
        assert!(err.contains("column 6") && err.contains("end of the filter"), "{err}");
        let err = Filter::compile("map(.x) | foo(1)", &[]).err().unwrap().to_string();
        assert!(
            err.contains("undefined filter `foo`") && err.contains("column 11"),
            "{err}"
        );
        let err = Filter::compile("[1,\n (2", &[]).err().unwrap().to_string();
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn string_builtins_name_themselves_on_wrong_types() {
        assert_eq!(
            run("test(\"x\")", "null").unwrap_err(),
            "test: null (null) cannot be matched, as it is not a string"
        );
        assert_eq!(
            run(".a | startswith(\"x\")", r#"{"a": 1}"#).unwrap_err(),
            "startswith: number (1) and its argument must both be strings"
        );
        assert_eq!(
            run("endswith(1)", r#""abc""#).unwrap_err(),
            "endswith: string (\"abc\") and its argument must both be strings"
        );
        assert_eq!(
            run("startswith(\"x\")", &format!("[{}]", "1,".repeat(40) + "1")).unwrap_err(),
            format!(
                "startswith: array ([{}...) and its argument must both be strings",
                "1,".repeat(28)
            )
        );
        assert_eq!(
            run(
                "[test(\"B\"; \"i\"), startswith(\"a\"), startswith(\"\"), endswith(\"c\"), endswith(\"b\")]",
                r#""abc""#
            )
            .unwrap(),
            ["[true,true,true,true,false]"]
        );
        assert_eq!(run("[match(\"b+\").string, gsub(\"b\"; \"x\"), sub(\"(?<l>[a-z])\"; \"<\\(.l)>\"), [scan(\"[ac]\")], split(\", *\"; null)]", r#""abbc, d""#).unwrap(),
            [r#"["bb","axxc, d","<a>bbc, d",["a","c"],["abbc","d"]]"#]);
    }

    #[test]
    fn jq_1_6_behaviour_where_agents_meet_it() {
        let cases = [
            (
                "[.[] | tostring]",
                "[1, 1.5, 3.0, \"a\", [1.0]]",
                r#"["1","1.5","3","a","[1]"]"#,
            ),
            ("tojson", "[1.0, 2.5]", r#""[1,2.5]""#),
            ("[nan] | tojson", "null", r#""[null]""#),
            ("join(\"-\")", "[\"a\", 1, null, 3.0]", r#""a-1--3""#),
            (
                "from_entries",
                r#"[{"key":"a","value":1},{"name":"b","value":2},{"k":"c","v":3}]"#,
                r#"{"a":1,"b":2,"c":3}"#,
            ),
            ("index(\"x\")", "null", "null"),
            ("[ltrimstr(\"a\"), rtrimstr(\"c\")]", "\"abc\"", r#"["bc","ab"]"#),
            ("ltrimstr(\"a\")", "1", "1"),
            ("[leaf_paths]", r#"{"a":1,"b":{"c":2}}"#, r#"[["a"],["b","c"]]"#),
            ("[tostream]", r#"{"a":[1]}"#, r#"[[["a",0],1],[["a",0]],[["a"]]]"#),
            ("[$ENV, env]", "null", "[{},{}]"),
        ];
        for (filter, input, expected) in cases {
            assert_eq!(run(filter, input).unwrap(), [expected], "{filter}");
        }
    }

    #[test]
    fn halt_ends_outputs_without_exiting() {
        assert_eq!(run("1, halt, 2", "null").unwrap(), ["1"]);
        assert_eq!(run("error(\"boom\")", "null").unwrap_err(), "boom");
    }

    #[test]
    fn deep_input_is_refused_before_parsing() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(parse(&deep).unwrap_err().contains("nested deeper than 1000 levels"));
        assert_eq!(depth(br#"{"a": "[[[[", "b": [1, [2]]}"#, 10), 3);
    }

    #[test]
    fn test_agrees_with_matches_for_every_flag_and_keeps_working_past_its_cache() {
        // jaq's own definition, which `test` replaces: the two must agree.
        let slow = |re: &str, flags: &str, input: &str| {
            run(&format!("matches({re:?}; {flags:?}) | any"), &format!("{input:?}")).unwrap()
        };
        let fast = |re: &str, flags: &str, input: &str| {
            run(&format!("test({re:?}; {flags:?})"), &format!("{input:?}")).unwrap()
        };
        let inputs = ["", "abc", "ABC", "a\nb", "xx\nAB", "aaa", "é A", "É A", "a-b", "xaBc"];
        for re in [
            "", "a", "^a", "b$", "a.b", "(?:a )?", "A B", "x*", "é", "bC", "Bc", "abcd", "é a", "-",
        ] {
            for flags in ["", "i", "g", "n", "gn", "m", "s", "x", "l", "p", "ix"] {
                for input in inputs {
                    let input = input.replace("\\n", "\n");
                    assert_eq!(
                        fast(re, flags, &input),
                        slow(re, flags, &input),
                        "{re:?} {flags:?} {input:?}"
                    );
                }
            }
        }
        // More distinct regexes than the cache holds, then the first ones again.
        for round in 0..2 {
            for i in 0..40 {
                assert_eq!(fast(&format!("^{i}$"), "", &i.to_string()), ["true"], "round {round}");
                assert_eq!(fast(&format!("^{i}$"), "", "x"), ["false"]);
            }
        }
        for (re, flags) in [("(", ""), ("a", "q")] {
            let args = format!("{re:?}; {flags:?}");
            let error = run(&format!("test({args})"), "\"a\"").unwrap_err();
            assert!(error.starts_with("invalid regex"), "{error}");
            assert_eq!(error, run(&format!("matches({args}) | any"), "\"a\"").unwrap_err());
        }
        assert!(run("test(1)", "\"a\"").unwrap_err().contains("string"));
    }

    #[test]
    fn canonical_text_is_exactly_what_jq_prints() {
        let canonical = [
            r#"{"a":1,"b":[true,false,null],"c":{"a":"x"},"d":-12,"e":0,"f":0.5,"g":"\u0001\u007f\n\"\\/é"}"#,
            r#"[]"#,
            r#"{}"#,
            r#""s""#,
            r#"[{"a":1},{"a":2}]"#,
            r#"1.5e+300"#,
        ];
        for text in canonical {
            assert!(is_canonical(text), "{text}");
            assert_eq!(to_json(&parse(text).unwrap()), text);
        }
        let not = [
            r#"{"a": 1}"#,
            r#" {"a":1}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":{"b":1,"b":1}}"#,
            r#""\/""#,
            r#""\u00e9""#,
            r#""\u001F""#,
            r#""\u0009""#,
            "\"\u{7f}\"",
            "\"a\tb\"",
            r#"1.0"#,
            r#"1e3"#,
            r#"-0"#,
            r#"007"#,
            r#"12345678901234567890"#,
            r#"{"a":1"#,
            r#"{"a":1}}"#,
            r#"{"a"1}"#,
            r#"[1,,2]"#,
            r#"nul"#,
            r#"NaN"#,
            r#""unterminated"#,
        ];
        for text in not {
            assert!(!is_canonical(text), "{text}");
        }
        // Keys repeated in sibling objects are not repeats.
        assert!(is_canonical(r#"[{"a":1,"b":{"a":2}},{"a":3}]"#));
        for record in crate::sample::records(crate::Detail::Full, 50, 3, false) {
            let text = record.to_string();
            assert!(is_canonical(&text), "{text}");
            assert_eq!(to_json(&parse(&text).unwrap()), text);
        }
    }
}
