//! Compact JSON text without building a `serde_json::Value`: the record-level interceptor's hot
//! path. Parsing every record into a tree and printing it again cost three quarters of an
//! offload (allocation of every map and string); most inputs are already compact, so they are
//! checked in one pass and used as they are, and the rest are transcoded straight from the parser
//! to the printer. Either way the text is byte for byte what `serde_json::to_string` of the parsed
//! value gives, except that an object's duplicate keys are kept rather than merged.

use std::borrow::Cow;

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
                    let Some(at) = memchr::memchr2(b'"', b'\\', &text[i..]) else {
                        i = text.len(); // unreachable for valid JSON: the string is closed
                        break;
                    };
                    i += at;
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
                if found.compact && !is_canonical_number(&text[start..i]) {
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

fn is_canonical_number(token: &[u8]) -> bool {
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

/// The JSON type of a value's text, as error messages name it.
pub fn type_name(raw: &str) -> &'static str {
    match raw.trim_start().as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compact(raw: &str) -> Cow<'_, str> {
        compacted(raw, scan(raw).compact).unwrap()
    }

    /// What the Value round trip gives, the reference `compact` must match.
    fn reference(text: &str) -> String {
        serde_json::to_string(&serde_json::from_str::<serde_json::Value>(text).unwrap()).unwrap()
    }

    #[test]
    fn compact_text_is_what_a_parse_and_print_gives() {
        let cases = [
            r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
            r#"{ "a" : 1 , "b" : [ 1, 2 ] }"#,
            "[\n  1,\n  2\n]",
            r#""tab\there""#,
            r#""slash\/and\u00e9 and \u0001""#,
            r#"{"k\u0041y":"v"}"#,
            "0.1",
            "1.0",
            "1e5",
            "1E5",
            "100000.0",
            "1.5e300",
            "-0",
            "-0.0",
            "12345678901234567890",
            "123456789012345678901234",
            "-9223372036854775808",
            "0.30000000000000004",
            "3.0e-10",
            r#"{"s":"日本語 ünïcödé 😀"}"#,
            r#"[{"memory":{"id":"1"},"score":0.5}]"#,
        ];
        for text in cases {
            let ours = compact(text);
            assert_eq!(ours, reference(text), "{text}");
        }
        // Already-compact text is borrowed, not copied.
        assert!(matches!(compact(r#"{"a":[1,2.5,"x"]}"#), Cow::Borrowed(_)));
        assert!(matches!(compact(r#"{"a": 1}"#), Cow::Owned(_)));
    }

    #[test]
    fn members_are_found_in_the_same_pass() {
        let m = scan(r#"{"id":"x","memory":{"namespace":"n","score":1},"score":0.5,"namespace":"a","namespace":"b"}"#);
        assert!(m.compact);
        assert_eq!(m.memory, Some(r#"{"namespace":"n","score":1}"#));
        assert_eq!(m.score, Some("0.5"));
        assert_eq!(
            m.namespace,
            Some(r#""b""#),
            "the last duplicate wins, as in a parsed object"
        );
        let spaced = scan("{ \"na\\u006despace\" : \"escaped key\" , \"tags\": [\"a\", {\"score\": 2}] }");
        assert!(!spaced.compact);
        assert_eq!(spaced.namespace, Some(r#""escaped key""#));
        assert_eq!(spaced.score, None, "nested members are not the record's");
        assert_eq!(scan("[1,2]").namespace, None);
    }
}
