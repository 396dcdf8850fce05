//! The result set as records: each element's compact JSON text (borrowed when it was compact
//! already), the file line it becomes, and what the descriptor needs of it, from one scan.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::Error;
use crate::estimate::Counts;
use crate::json_text::{self, compacted};

/// One record of the result set, as compact JSON text (borrowed from the input when it was
/// compact already).
pub(super) struct Record<'a> {
    /// Compact JSON of the element as given (hit or memory): what inline delivery would send.
    pub(super) inline: Cow<'a, str>,
    /// Compact JSON of the memory alone: the file line. None when it equals `inline`.
    pub(super) line: Option<Cow<'a, str>>,
    /// Its `namespace`, when that is a string.
    pub(super) namespace: Option<Cow<'a, str>>,
    /// A search hit's score (never written to the file).
    pub(super) score: Option<f64>,
    /// The richest detail level its members show (see [`json_text::Scan::level`]).
    pub(super) level: u8,
    /// The characters of `inline`, for the token estimate.
    pub(super) counts: Counts,
}

impl Record<'_> {
    /// The file line.
    pub(super) fn line(&self) -> &str {
        self.line.as_deref().unwrap_or(&self.inline)
    }
}

/// The records of the `records` JSON text, each checked and compacted.
pub(super) fn parse_records(text: &str) -> Result<Vec<Record<'_>>, Error> {
    // The one-pass split takes the common case; whatever it leaves (invalid input above all)
    // goes through serde_json, which also words the error.
    if let Some(elements) = json_text::split_array(text) {
        return elements
            .into_iter()
            .enumerate()
            .map(|(i, e)| to_record(i, e.raw, e.scan, e.ascii))
            .collect();
    }
    let items: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| {
        // On failure, say whether it is not JSON or not an array.
        match serde_json::from_str::<&RawValue>(text) {
            Ok(whole) if !whole.get().starts_with('[') => Error::InvalidInput(format!(
                "records must be a JSON array of memory objects or search hits, got {}",
                json_text::type_phrase(whole.get())
            )),
            Ok(_) => Error::InvalidInput(format!("records are not valid JSON: {e}")),
            Err(e) => Error::InvalidInput(format!("records are not valid JSON: {e}")),
        }
    })?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let raw = item.get();
            if !raw.starts_with('{') {
                return Err(Error::InvalidInput(format!(
                    "records[{i}] is {}; expected a memory object or a search hit {{\"memory\": {{...}}, \"score\": n}}",
                    json_text::type_phrase(raw)
                )));
            }
            to_record(i, raw, json_text::scan(raw), false)
        })
        .collect()
}

/// One element of the result set as a record (the memory of a search hit on its own line),
/// given what [`json_text::scan`] finds in it and whether it is known to be ASCII only.
fn to_record<'a>(i: usize, raw: &'a str, scan: json_text::Scan<'a>, ascii: bool) -> Result<Record<'a>, Error> {
    let unusable = |e: String| Error::InvalidInput(format!("records[{i}] cannot be written as JSON: {e}"));
    // The extractor parses a line at most this deep; a record it could never read back is
    // refused here rather than offloaded.
    if scan.depth > crate::jq::MAX_DEPTH {
        return Err(Error::InvalidInput(format!(
            "records[{i}] is nested {} levels deep; offloaded records may nest at most {} levels, \
             the most lro_extract reads",
            scan.depth,
            crate::jq::MAX_DEPTH
        )));
    }
    let inline = compacted(raw, scan.compact).map_err(unusable)?;
    // The text's character count is its length when it is the (ASCII) text scanned.
    let counts = match inline {
        Cow::Borrowed(_) if ascii => Counts {
            other: inline.len() as u64,
            cjk: 0,
        },
        _ => Counts::of(&inline),
    };
    match scan.memory {
        Some(memory) if memory.starts_with('{') => {
            let score = match scan.score {
                None | Some("null") => None,
                Some(number) if json_text::type_phrase(number) == "a number" => Some(
                    serde_json::from_str::<f64>(number)
                        .map_err(|e| Error::InvalidInput(format!("records[{i}].score is not a usable number: {e}")))?,
                ),
                Some(other) => {
                    return Err(Error::InvalidInput(format!(
                        "records[{i}].score is {}; a search hit's score must be a number",
                        json_text::type_phrase(other)
                    )));
                }
            };
            let memory_scan = json_text::scan(memory);
            Ok(Record {
                line: Some(compacted(memory, memory_scan.compact).map_err(unusable)?),
                namespace: namespace_of(memory_scan.namespace),
                score,
                level: memory_scan.level,
                inline,
                counts,
            })
        }
        _ => Ok(Record {
            namespace: namespace_of(scan.namespace),
            score: None,
            line: None,
            level: scan.level,
            inline,
            counts,
        }),
    }
}

/// A `namespace` member's text as a string, when it is one (borrowed when it has no escapes).
fn namespace_of(raw: Option<&str>) -> Option<Cow<'_, str>> {
    let raw = raw.filter(|r| r.starts_with('"'))?;
    match raw.get(1..raw.len() - 1) {
        Some(plain) if !plain.contains('\\') => Some(Cow::Borrowed(plain)),
        _ => serde_json::from_str(raw).ok().map(Cow::Owned),
    }
}
