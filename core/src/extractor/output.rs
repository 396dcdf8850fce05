//! The output of an extraction: values as jq prints them, up to a cap in estimated tokens, with a
//! note saying what the cap left out. A single value over the cap shows its leading part. The
//! first value past the cap stops the filter, and the records after it are not read: a filter
//! that needs a few records costs a few records, however large the file.

use jaq_json::Val;

use super::Extracted;
use super::hint::absent_field_hint;
use crate::Detail;
use crate::estimate::Counts;
use crate::jq;

/// Collects values up to the cap and counts the rest.
pub(super) struct Output {
    /// Strings are printed raw.
    pub(super) raw: bool,
    limit: u32,
    values: Vec<String>,
    counts: Counts,
    total: u64,
    truncated: bool,
    /// When the first value alone was over the cap and was cut to its leading parts: what it
    /// was (`"array"`/`"object"`), the parts shown and the parts it had.
    cut: Option<(&'static str, usize, usize)>,
    /// Where the values come from, for the note when the cap stops the filter: "the record on
    /// line 12", "input value 3".
    at: Option<(&'static str, usize)>,
}

impl Output {
    /// An empty output, printing strings raw when `raw`, capped at `limit` tokens.
    pub(super) fn new(raw: bool, limit: u32) -> Self {
        Output {
            raw,
            limit,
            values: Vec::new(),
            counts: Counts::default(),
            total: 0,
            truncated: false,
            cut: None,
            at: None,
        }
    }

    /// The values that follow come from the record on line `line` of the file.
    pub(super) fn at_line(&mut self, line: usize) {
        self.at = Some(("the record on line", line));
    }

    /// The values that follow come from input value `n` (1-based) of `query`.
    pub(super) fn at_input(&mut self, n: usize) {
        self.at = Some(("input value", n));
    }

    /// The cap has been reached: the filter must stop, and no more records be read.
    pub(super) fn is_full(&self) -> bool {
        self.truncated
    }

    /// Prints a value; false once the cap is reached (this value is past it): stop the filter.
    pub(super) fn push(&mut self, value: &Val) -> bool {
        if self.truncated {
            return false;
        }
        self.push_text(if self.raw {
            jq::to_raw(value)
        } else {
            jq::to_json(value)
        })
    }

    /// Pushes a value already printed; false once the cap is reached, as [`Output::push`].
    pub(super) fn push_text(&mut self, text: String) -> bool {
        if self.truncated {
            return false;
        }
        self.total += 1;
        {
            let next = self.counts + Counts::of(&text) + Counts { other: 1, cjk: 0 };
            if next.tokens() > self.limit {
                self.truncated = true;
                // One value over the cap (a slurped recipe's array, say) would show nothing at
                // all: show its leading elements instead, and say how many there were.
                if self.values.is_empty()
                    && let Some((part, kind, shown, all)) = leading_part(&text, self.limit)
                {
                    self.cut = Some((kind, shown, all));
                    self.values.push(part);
                }
            } else {
                self.counts = next;
                self.values.push(text);
            }
        }
        !self.truncated
    }

    /// The result, with a note on what the cap left out, or a hint when nothing matched.
    pub(super) fn finish(self, detail: Option<Detail>, program: &str) -> Extracted {
        let mut text = self.values.join("\n");
        if self.total == 0 {
            text = match absent_field_hint(program, detail) {
                Some(hint) => format!("[lro_extract: no values: the filter matched nothing. {hint}]"),
                None => "[lro_extract: no values: the filter matched nothing.]".to_owned(),
            };
        } else if let Some((kind, shown, all)) = self.cut {
            let (part, parts) = if kind == "array" {
                ("element", "elements")
            } else {
                ("member", "members")
            };
            text.push_str(&format!(
                "\n[lro_extract: the value is an {kind} of {all} {parts}, over the output cap of {} tokens; \
                 showing its first {shown} {}.{} Pass a larger `limit` to see more, or narrow the query \
                 (.[:n], map(...), select(...), or fewer fields).]",
                self.limit,
                if shown == 1 { part } else { parts },
                self.stopped(),
            ));
        } else if self.truncated {
            text.push_str(&format!(
                "\n[lro_extract: showing {} {}; the output cap is {} tokens.{} Pass a larger `limit` to see \
                 more, or narrow the query (select(...), limit(n; ...), or fewer fields).]",
                self.values.len(),
                if self.values.len() == 1 { "value" } else { "values" },
                self.limit,
                self.stopped(),
            ));
        }
        Extracted {
            values: self.values,
            raw: self.raw,
            total: self.total,
            truncated: self.truncated,
            text,
        }
    }
}

impl Output {
    /// Where the cap stopped the filter, for the note: " The filter was stopped at the record
    /// on line 12: the records after it were not read."
    fn stopped(&self) -> String {
        match self.at {
            Some((what, n)) => {
                let rest = if what == "input value" {
                    "input values"
                } else {
                    "records"
                };
                format!(" The filter was stopped at {what} {n}: the {rest} after it, if any, were not read.")
            }
            None => " The filter was stopped there.".to_owned(),
        }
    }
}

/// The leading elements of an array (members of an object) printed as `text` that fit `limit`
/// tokens, as JSON of the same kind: (the part, its kind, parts shown, parts in all). None for
/// other values, or text nested too deeply to take apart.
fn leading_part(text: &str, limit: u32) -> Option<(String, &'static str, usize, usize)> {
    use serde_json::value::RawValue;
    let (kind, parts): (&'static str, Vec<(Option<String>, &RawValue)>) = match text.as_bytes().first() {
        Some(b'[') => (
            "array",
            serde_json::from_str::<Vec<&RawValue>>(text)
                .ok()?
                .into_iter()
                .map(|v| (None, v))
                .collect(),
        ),
        Some(b'{') => (
            "object",
            serde_json::from_str::<Members<'_>>(text)
                .ok()?
                .0
                .into_iter()
                .map(|(k, v)| (Some(crate::json_string(&k)), v))
                .collect(),
        ),
        _ => return None,
    };
    let (open, close) = if kind == "array" { ('[', ']') } else { ('{', '}') };
    let mut part = String::from(open);
    let mut counts = Counts { other: 3, cjk: 0 };
    let mut shown = 0;
    for (key, value) in &parts {
        let mut item = String::new();
        if shown > 0 {
            item.push(',');
        }
        if let Some(key) = key {
            item.push_str(key);
            item.push(':');
        }
        item.push_str(value.get());
        let next = counts + Counts::of(&item);
        if next.tokens() > limit {
            break;
        }
        counts = next;
        part.push_str(&item);
        shown += 1;
    }
    part.push(close);
    Some((part, kind, shown, parts.len()))
}

/// An object's members in order, values as raw text (printed as they are).
struct Members<'a>(Vec<(String, &'a serde_json::value::RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Members<'a>, M::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de serde_json::value::RawValue>()? {
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// The fewest tokens an error message is cut to, whatever the output cap: a cap of a few tokens
/// still shows what went wrong.
pub(super) const ERROR_FLOOR: u32 = 256;

/// The tokens kept for the note that says what was cut.
const NOTE_TOKENS: u32 = 16;

/// `message` cut to the output cap of `limit` tokens (at least [`ERROR_FLOOR`]), with a note saying
/// how much of it is shown. Error texts can carry user data (`error(tojson)`, `tonumber` of a long
/// string, a long name in the filter), so they are capped as values are.
pub(super) fn cap_error(message: String, limit: u32) -> String {
    let cap = limit.max(ERROR_FLOOR);
    // Tokens never outnumber bytes.
    if message.len() <= cap as usize {
        return message;
    }
    let keep = cap - NOTE_TOKENS;
    let mut counts = Counts::default();
    let mut end = None;
    for (i, c) in message.char_indices() {
        counts = counts + Counts::of(c.encode_utf8(&mut [0; 4]));
        if end.is_none() && counts.tokens() > keep {
            end = Some(i);
        }
        if counts.tokens() > cap {
            break;
        }
    }
    if counts.tokens() <= cap {
        return message;
    }
    let end = end.expect("the kept part is shorter than the cap");
    format!(
        "{}... (error message cut at {end} of {} bytes)",
        &message[..end],
        message.len()
    )
}

/// Cuts the text of an error that may carry user data (see [`cap_error`]); a `filter-failed` or
/// `invalid-filter` error was cut where it was made, with its context after the cut, and is left
/// as it is.
pub(super) fn cap_other_error(error: crate::Error, limit: u32) -> crate::Error {
    use crate::Error as E;
    let cap = |m: String| cap_error(m, limit);
    match error {
        E::InvalidConfig(m) => E::InvalidConfig(cap(m)),
        E::InvalidInput(m) => E::InvalidInput(cap(m)),
        E::Io(m) => E::Io(cap(m)),
        E::InvalidRequest(m) => E::InvalidRequest(cap(m)),
        E::NotFound(m) => E::NotFound(cap(m)),
        E::OutsideDirectory(m) => E::OutsideDirectory(cap(m)),
        E::NotLroFile(m) => E::NotLroFile(cap(m)),
        E::Expired(m) => E::Expired(cap(m)),
        E::Corrupt(m) => E::Corrupt(cap(m)),
        done @ (E::InvalidFilter(_) | E::FilterFailed(_)) => done,
    }
}
