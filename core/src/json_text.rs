//! The hand-written scanners of JSON text: single passes over bytes that answer one question
//! without building a value, where parsing every record into a tree was the cost of an offload or
//! an extraction.
//!
//! - [`split_array`]: the offload's one pass over a result set, validating it and scanning each
//!   record as [`scan`] does.
//! - [`scan`]: whether a record's text is compact as serde_json prints it, and the top-level
//!   members the record-level interceptor needs (`memory`, `score`, `namespace`, detail level).
//!   [`compacted`] then uses the text as it is or transcodes it without building a tree.
//! - [`depth`]: how deeply arbitrary text nests, checked before jaq's recursive parser sees it,
//!   and before serde_json's, in [`parse`].
//! - [`is_jq_canonical`]: whether a record line already reads exactly as jq would print it, so
//!   extraction can output the line itself.
//! - [`skip_value`] (with [`skip_ws`] and [`skip_string`]): where a member's value ends, so
//!   projected parsing skips the members a filter does not read.
//! - [`unescape_in_place`]: a JSON string decoded into its own bytes, so the text content of a
//!   large result is not held twice.
//! - [`lines`], [`newline`], [`is_ascii`], [`quote_or_backslash`]: byte searches sixteen bytes a
//!   step, which the component's standard library does a 32-bit word at a time.
//!
//! They look alike but answer different questions on different inputs (valid JSON for `scan`,
//! anything for `depth`, lines of a file for the others), so each keeps its own loop.
//!
//! Why `scan` and `compacted` exist: parsing every record into a tree and printing it again cost
//! three quarters of an offload (allocation of every map and string). Most inputs are already
//! compact, so they are checked in one pass and used as they are, and the rest are transcoded
//! straight from the parser to the printer. Either way the text is byte for byte what
//! `serde_json::to_string` of the parsed value gives, except that an object's duplicate keys are
//! kept rather than merged.

mod bytes;
mod canonical;
pub mod raw;
mod scan;
mod split;
mod unescape;
mod valid;
pub use bytes::{is_ascii, lines, newline, quote_or_backslash};
pub use canonical::is_jq_canonical;
pub use scan::{Scan, compacted, scan};
#[cfg(test)]
use scan::{is_short_decimal, printed_as_is};
pub use split::{Element, split_array};
pub use unescape::{Unescapable, unescape_in_place};
pub use valid::Valid;

/// Why [`parse`] refused a text.
#[derive(Debug)]
pub enum ParseError {
    /// Nested more than this many levels (the limit given).
    TooDeep(usize),
    /// Not valid JSON (or not of the type asked for).
    Invalid(serde_json::Error),
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::TooDeep(limit) => write!(f, "nested more than {limit} levels deep, the most lro reads"),
            ParseError::Invalid(e) => write!(f, "not valid JSON: {e}"),
        }
    }
}

/// Parses JSON text nested at most `limit` levels, keeping its structure at every level: deeper
/// text is refused by [`depth`] before any parsing, so serde_json's own limit (128 levels, meant
/// to bound its recursion) is lifted. The component's stack holds the recursion of parsing,
/// printing and dropping a value of `jq::MAX_DEPTH` levels and a few more; the tests check it
/// through the component.
pub fn parse<T: serde::de::DeserializeOwned>(text: &str, limit: usize) -> Result<T, ParseError> {
    if depth(text.as_bytes(), limit) > limit {
        // Text that is not JSON at all says so (serde_json skips a value without recursing).
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => ParseError::TooDeep(limit),
            Err(e) => ParseError::Invalid(e),
        });
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de).map_err(ParseError::Invalid)?;
    de.end().map_err(ParseError::Invalid)?;
    Ok(value)
}

/// The JSON type of a value's text with its article ("an object"), as error messages name it.
/// jq's own names are `jq::type_name`; JSON Schema's, `mcp::schema`'s `schema_type`.
pub fn type_phrase(raw: &str) -> &'static str {
    match raw.trim_start().as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
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

/// The index of the first byte at or after `i` that is not JSON whitespace.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The end (one past the closing quote) of the string starting at `i`.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut at = i + 1;
    loop {
        at = quote_or_backslash(b, at)?;
        if b[at] == b'\\' {
            at += 2;
        } else {
            return Some(at + 1);
        }
    }
}

/// The end of the JSON value starting at `i`: strings and brackets matched, scalars up to the next
/// delimiter.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = i;
            while at < b.len() {
                match b[at] {
                    b'"' => {
                        at = skip_string(b, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
            None
        }
        b',' | b'}' | b']' | b':' => None,
        _ => {
            let len = b[i..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(b.len() - i);
            Some(i + len)
        }
    }
}

#[cfg(test)]
mod tests {

    /// The shortcut for decimal fractions only ever answers what printing the number answers,
    /// and answers for the numbers records hold.
    #[test]
    fn short_decimals_are_what_serde_json_prints() {
        for known in [
            "0.87",
            "12.5",
            "-3.25",
            "0.001",
            "-0.5",
            "1234567890.12345",
            "9999999999.99999",
        ] {
            assert!(is_short_decimal(known.as_bytes()), "{known}");
            assert!(printed_as_is(known.as_bytes()), "{known}");
        }
        for not_short in [
            "0.0001",
            "1.0",
            "01.5",
            "1.",
            ".5",
            "1e5",
            "1.5e3",
            "12345678901.5",
            "1.123456789",
        ] {
            assert!(!is_short_decimal(not_short.as_bytes()), "{not_short}");
        }
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut checked = 0;
        for _ in 0..400_000 {
            let mut token = String::new();
            if next(2) == 0 {
                token.push('-');
            }
            let int_len = next(11);
            for k in 0..int_len.max(1) {
                let d = if int_len == 0 {
                    0
                } else if k == 0 {
                    1 + next(9)
                } else {
                    next(10)
                };
                token.push(char::from(b'0' + d as u8));
            }
            token.push('.');
            let zeros = next(4);
            for _ in 0..zeros {
                token.push('0');
            }
            for _ in 0..next(9) {
                token.push(char::from(b'0' + next(10) as u8));
            }
            token.push(char::from(b'1' + next(9) as u8));
            if is_short_decimal(token.as_bytes()) {
                assert!(printed_as_is(token.as_bytes()), "{token}");
                checked += 1;
            }
        }
        assert!(checked > 50_000, "{checked}");
    }

    use std::borrow::Cow;

    use super::*;
    use crate::jq;

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

    #[test]
    fn depth_ignores_brackets_in_strings() {
        assert_eq!(depth(br#"{"a": "[[[[", "b": [1, [2]]}"#, 10), 3);
    }

    // See: issue 34, item 13 (serde_json stopped at 128 levels).
    #[test]
    fn parse_keeps_structure_to_its_limit_and_refuses_deeper() {
        // Unoptimised frames are many times the component's: the component's own stack is
        // checked through it (cli/tests/all/robustness/faults.rs and the shared case
        // intercept-deep-records).
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(parse_to_the_limit)
            .unwrap()
            .join()
            .unwrap();
    }

    fn parse_to_the_limit() {
        let nested = |n: usize| "[".repeat(n) + &"]".repeat(n);
        let value: serde_json::Value = parse(&nested(1008), 1008).unwrap();
        assert_eq!(value.to_string(), nested(1008));
        assert!(matches!(
            parse::<serde_json::Value>(&nested(1009), 1008),
            Err(ParseError::TooDeep(1008))
        ));
        // Text that is not JSON is said to be so, however deep its brackets.
        let err = parse::<serde_json::Value>(&"[".repeat(2000), 1008).unwrap_err();
        assert!(matches!(err, ParseError::Invalid(_)), "{err}");
        assert!(err.to_string().starts_with("not valid JSON: "), "{err}");
        // Records deeper than serde_json's own limit are transcoded.
        let spaced = format!("{}1{}", "[ ".repeat(500), " ]".repeat(500));
        assert_eq!(
            compacted(&spaced, false).unwrap(),
            format!("{}1{}", "[".repeat(500), "]".repeat(500))
        );
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
            assert!(is_jq_canonical(text), "{text}");
            assert_eq!(jq::to_json(&jq::parse(text).unwrap()), text);
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
            assert!(!is_jq_canonical(text), "{text}");
        }
        // Keys repeated in sibling objects are not repeats.
        assert!(is_jq_canonical(r#"[{"a":1,"b":{"a":2}},{"a":3}]"#));
        for record in crate::sample::records(crate::Detail::Full, 50, 3, false) {
            let text = record.to_string();
            assert!(is_jq_canonical(&text), "{text}");
            assert_eq!(jq::to_json(&jq::parse(&text).unwrap()), text);
        }
    }

    /// Every text one edit away from canonical ones: the one pass says canonical exactly when
    /// serde_json accepts the text and jq prints what it parses as the same text.
    #[test]
    fn canonical_is_valid_and_printed_alike_for_every_one_byte_edit() {
        let reference = |text: &str| {
            serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
                && jq::parse(text).is_ok_and(|v| jq::to_json(&v) == text)
        };
        let record = crate::sample::records(crate::Detail::Light, 1, 5, false)[0].to_string();
        let seeds = [
            r#"{"a":1,"b":[true,false,null],"c":{"a":"x"},"d":-12,"e":0,"f":0.5,"g":"\u0001\u007f\n\"\\/é"}"#,
            r#"[[],{},[{"k":[1,2.5,-3e-7]}],"s",1.5e+300,0]"#,
            record.as_str(),
        ];
        let edits: &[u8] = b"\"\\{}[],: -+0159.eEtfnu\x7f\x01\x1fa/";
        let mut checked = 0;
        for seed in seeds {
            let b = seed.as_bytes();
            for at in 0..=b.len() {
                let mut variants = vec![[&b[..at], &b[(at + 1).min(b.len())..]].concat()];
                for &c in edits {
                    variants.push([&b[..at], &[c], &b[at..]].concat());
                    if at < b.len() {
                        variants.push([&b[..at], &[c], &b[at + 1..]].concat());
                    }
                }
                for variant in variants {
                    let Ok(text) = String::from_utf8(variant) else { continue };
                    assert_eq!(is_jq_canonical(&text), reference(&text), "{text}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 15_000, "{checked}");
    }

    #[test]
    fn values_are_skipped_to_their_end() {
        for (text, value) in [
            (r#""a\"b" ,"#, r#""a\"b""#),
            (r#"[1,{"y":"]}"},[]] ,"#, r#"[1,{"y":"]}"},[]]"#),
            (r#"{"a":"\"{"}}"#, r#"{"a":"\"{"}"#),
            ("-1.5e3,", "-1.5e3"),
            ("true}", "true"),
            ("null", "null"),
        ] {
            assert_eq!(skip_value(text.as_bytes(), 0), Some(value.len()), "{text}");
        }
        for text in [",", "}", r#""unterminated"#, "[1, [2]"] {
            assert_eq!(skip_value(text.as_bytes(), 0), None, "{text}");
        }
        assert_eq!(skip_ws(b" \t\r\n x", 0), 5);
        assert_eq!(skip_string(br#""a\"b" x"#, 0), Some(6));
    }
}
