//! [`scan`] and [`compacted`]: a record's text checked for compactness in one pass, and used as
//! it is or transcoded without building a tree (the module docs of `json_text` say why).

use std::borrow::Cow;

use super::quote_or_backslash;

/// `raw` as compact JSON, given whether it is compact already (from [`scan`]).
///
/// Fails on text the validating pass accepts but no JSON value can hold: a lone UTF-16
/// surrogate escape (`"\ud800"`) or a number out of range (`1e400`). The error says which.
pub fn compacted(raw: &str, compact: bool) -> Result<Cow<'_, str>, String> {
    if compact {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut de = serde_json::Deserializer::from_str(raw);
    // Records are checked to nest at most `jq::MAX_DEPTH` levels before they get here.
    de.disable_recursion_limit();
    let mut ser = serde_json::Serializer::new(&mut out);
    serde_transcode::transcode(&mut de, &mut ser).map_err(|e| e.to_string())?;
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| "the text is not valid UTF-8 once unescaped".to_owned())
}

/// What one pass over a value's text found.
#[derive(Debug, Default, Clone, Copy)]
pub struct Scan<'a> {
    /// The text is exactly what serde_json prints for it: no whitespace between tokens, only the
    /// escapes it writes, integers in range without `-0`, other numbers as it prints them.
    pub compact: bool,
    /// For an object: the text of its `memory` member (the last one, as a parsed object keeps).
    pub memory: Option<&'a str>,
    /// For an object: the text of its `score` member.
    pub score: Option<&'a str>,
    /// For an object: the text of its `namespace` member.
    pub namespace: Option<&'a str>,
    /// For an object: the richest MIF detail level its top-level members show (0 light, 1
    /// medium: `content`, `summary` or `confidence`; 2 full: `provenance`, `entities`, ...).
    pub level: u8,
    /// How deeply the value nests: 0 for a scalar, 1 for `[]` or `{}`.
    pub depth: usize,
}

/// Scans valid JSON text once: whether it is compact, and an object's top-level members that
/// the interceptor needs, without building anything.
pub fn scan(raw: &str) -> Scan<'_> {
    let text = raw.as_bytes();
    let mut found = Scan {
        compact: true,
        ..Scan::default()
    };
    let (mut depth, mut i) = (0usize, 0usize);
    // At depth 1 of an object: the key being read, and where its value starts.
    let mut key: Option<(usize, usize, bool)> = None;
    let mut value_start = None;
    let mut expect_key = false;
    let top_object = text.first() == Some(&b'{');
    let mut end_value = |at: usize, key: &mut Option<(usize, usize, bool)>, value_start: &mut Option<usize>| {
        if let (Some((start, end, escaped)), Some(from)) = (key.take(), value_start.take()) {
            let value = raw[from..at].trim_matches(|c: char| c.is_ascii_whitespace());
            let name: Cow<'_, str> = if escaped {
                serde_json::from_str::<String>(&raw[start - 1..=end]).map_or(Cow::Borrowed(""), Cow::Owned)
            } else {
                Cow::Borrowed(&raw[start..end])
            };
            match name.as_ref() {
                "memory" => found.memory = Some(value),
                "score" => found.score = Some(value),
                "namespace" => found.namespace = Some(value),
                "content" | "summary" | "confidence" => found.level = found.level.max(1),
                "provenance" | "entities" | "relationships" | "wiki_links" | "embedding" | "temporal" | "citations"
                | "blocks" | "extensions" => found.level = 2,
                _ => {}
            }
        }
    };
    while i < text.len() {
        match text[i] {
            b'"' => {
                let start = i + 1;
                let mut escaped = false;
                i += 1;
                // Strings are most of a record: jump to the next quote or backslash.
                loop {
                    let Some(at) = quote_or_backslash(text, i) else {
                        i = text.len(); // unreachable for valid JSON: the string is closed
                        break;
                    };
                    i = at;
                    if text[i] == b'"' {
                        break;
                    }
                    escaped = true;
                    // serde_json writes these short escapes; \/ and \uXXXX it would rewrite.
                    if !matches!(text.get(i + 1), Some(b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f')) {
                        found.compact = false;
                    }
                    i += 2;
                }
                if top_object && depth == 1 && expect_key {
                    key = Some((start, i, escaped));
                    expect_key = false;
                }
                i += 1;
            }
            b':' if top_object && depth == 1 => {
                value_start = Some(i + 1);
                i += 1;
            }
            b',' if top_object && depth == 1 => {
                end_value(i, &mut key, &mut value_start);
                expect_key = true;
                i += 1;
            }
            b'{' | b'[' => {
                depth += 1;
                found.depth = found.depth.max(depth);
                if depth == 1 && top_object {
                    expect_key = true;
                }
                i += 1;
            }
            b'}' | b']' => {
                if top_object && depth == 1 {
                    end_value(i, &mut key, &mut value_start);
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < text.len() && matches!(text[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                if found.compact && !is_compact_number(&text[start..i]) {
                    found.compact = false;
                }
            }
            b' ' | b'\n' | b'\r' | b'\t' => {
                found.compact = false;
                i += 1;
            }
            _ => i += 1,
        }
    }
    found
}

/// Whether a number token is exactly what serde_json prints for it.
pub(super) fn is_compact_number(token: &[u8]) -> bool {
    is_short_decimal(token) || printed_as_is(token)
}

/// Whether serde_json prints the number `token` as it is, found by printing it.
pub(super) fn printed_as_is(token: &[u8]) -> bool {
    let Ok(token) = std::str::from_utf8(token) else {
        return false;
    };
    let integer = token.bytes().all(|b| b.is_ascii_digit() || b == b'-');
    if integer {
        // serde_json keeps integers that fit i64 or u64 as they are; "-0" becomes 0.
        return token != "-0" && (token.parse::<u64>().is_ok() || token.parse::<i64>().is_ok());
    }
    match token.parse::<f64>() {
        Ok(value) if value.is_finite() => {
            // Printed by serde_json itself, so its float format (e.g. `1.5e+300`) is the reference.
            let mut printed = Vec::with_capacity(24);
            serde_json::to_writer(&mut printed, &value).is_ok() && printed == token.as_bytes()
        }
        _ => false,
    }
}

/// A decimal fraction that serde_json certainly prints as it is, without parsing and printing
/// it (most of the numbers records hold: `0.87`, `12.5`): `-?(0|[1-9][0-9]{0,9})\.[0-9]{0,7}[1-9]`,
/// at most 15 significant digits, and, after `0.`, at most two zeros. Fifteen significant
/// digits always survive the trip through an `f64`, and the shortest digits that print it back
/// are then these; in this range serde_json writes them without an exponent. False means only
/// "not certain": [`is_compact_number`] then prints the number to compare.
pub(super) fn is_short_decimal(token: &[u8]) -> bool {
    let digits = token.strip_prefix(b"-").unwrap_or(token);
    let Some(dot) = digits.iter().position(|&b| b == b'.') else {
        return false;
    };
    let (int, frac) = (&digits[..dot], &digits[dot + 1..]);
    let plain = |d: &[u8]| d.iter().all(u8::is_ascii_digit);
    if !(1..=10).contains(&int.len()) || !(1..=8).contains(&frac.len()) || !plain(int) || !plain(frac) {
        return false;
    }
    if frac.last() == Some(&b'0') {
        return false;
    }
    if int == b"0" {
        frac.iter().take_while(|&&d| d == b'0').count() <= 2
    } else {
        int[0] != b'0' && int.len() + frac.len() <= 15
    }
}
