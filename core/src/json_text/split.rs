//! The offload's one pass over a result set: validates a JSON array of objects, splits it into
//! its elements and [`scan`](super::scan)s each, in a single walk over the bytes.
//!
//! Before, an offload read every byte three times (serde_json's validating split into
//! `RawValue`s, then `scan` of each record, then the token estimate's character count), and
//! the string bodies that make up most of a record were walked by three different loops. Here
//! string bodies are skipped sixteen bytes a step ([`plain_run`]: SSE2 in machine code,
//! WebAssembly SIMD in the component), stopping only at a quote, a backslash, a control
//! character or, until the first one is found, a non-ASCII byte.
//!
//! In the component every function of the pass is compiled with `simd128` (`target_feature`
//! on each, so the build needs no flag): a function with the feature is never inlined into one
//! without it, and the SIMD step, called once or twice for each of a record's ~46 strings, cost
//! a call and its constants each time. Inlined, an offload in the component takes about a fifth
//! less time (docs/BENCH-NOTES.md).
//!
//! The pass accepts only what serde_json accepts, and finds what `scan` finds; anything it does
//! not handle itself (invalid JSON, an element that is not an object, an escaped member name at
//! an element's top level, deep nesting) makes it answer `None`, and the caller takes the
//! validating parser's path, which also words the error. So the fast pass never decides what
//! is an error; it only makes the common case fast.

use super::Scan;
use super::bytes::plain_run;
use super::scan::is_compact_number;

/// One element of the array, as [`split_array`] found it.
#[derive(Debug, Clone, Copy)]
pub struct Element<'a> {
    /// The element's text, as it stands in the array.
    pub raw: &'a str,
    /// What [`scan`](super::scan) of `raw` finds.
    pub scan: Scan<'a>,
    /// `raw` is ASCII only (so its character count is its length).
    pub ascii: bool,
}

/// Nesting past this (counting the array) is left to serde_json, whose limit (128) words the error.
const DEEPEST: usize = 100;

/// The elements of `text`, a JSON array of objects, or `None` when the text is anything else or
/// anything this pass leaves to the validating parser (see the module's documentation).
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub fn split_array(text: &str) -> Option<Vec<Element<'_>>> {
    let mut p = Pass {
        text,
        b: text.as_bytes(),
        i: 0,
        compact: true,
        ascii: true,
        depth: 0,
    };
    p.ws();
    p.expect(b'[')?;
    p.ws();
    let mut elements = Vec::new();
    if p.peek()? == b']' {
        p.i += 1;
    } else {
        loop {
            elements.push(p.element()?);
            p.ws();
            match p.next()? {
                b',' => p.ws(),
                b']' => break,
                _ => return None,
            }
        }
    }
    p.ws();
    (p.i == p.b.len()).then_some(elements)
}

/// The pass's position and what it has found of the element being read.
struct Pass<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    compact: bool,
    ascii: bool,
    depth: usize,
}

impl<'a> Pass<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    /// Skips whitespace; inside an element, whitespace means the element is not compact.
    #[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
    fn ws(&mut self) {
        let start = self.i;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
        if self.i != start && self.depth > 0 {
            self.compact = false;
        }
    }

    /// One element: an object, with its top-level members noted as `scan` notes them.
    #[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
    fn element(&mut self) -> Option<Element<'a>> {
        let start = self.i;
        self.expect(b'{')?;
        (self.compact, self.ascii, self.depth) = (true, true, 1);
        let mut found = Scan::default();
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
        } else {
            loop {
                if self.peek()? != b'"' {
                    return None;
                }
                let key_start = self.i + 1;
                if self.string()? {
                    return None; // an escaped name: scan decodes it; rare enough to leave
                }
                let key = &self.text[key_start..self.i - 1];
                self.ws();
                self.expect(b':')?;
                self.ws();
                let value_start = self.i;
                self.value(1)?;
                let value = &self.text[value_start..self.i];
                match key {
                    "memory" => found.memory = Some(value),
                    "score" => found.score = Some(value),
                    "namespace" => found.namespace = Some(value),
                    "content" | "summary" | "confidence" => found.level = found.level.max(1),
                    "provenance" | "entities" | "relationships" | "wiki_links" | "embedding" | "temporal"
                    | "citations" | "blocks" | "extensions" => found.level = 2,
                    _ => {}
                }
                self.ws();
                match self.next()? {
                    b',' => self.ws(),
                    b'}' => break,
                    _ => return None,
                }
            }
        }
        found.compact = self.compact;
        found.depth = self.depth;
        let element = Element {
            raw: &self.text[start..self.i],
            scan: found,
            ascii: self.ascii,
        };
        self.depth = 0;
        Some(element)
    }

    /// A value nested `level` containers deep (the element's members are at level 1).
    #[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
    fn value(&mut self, level: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => self.container(level + 1),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => None,
        }
    }

    #[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
    fn container(&mut self, level: usize) -> Option<()> {
        if level >= DEEPEST {
            return None;
        }
        self.depth = self.depth.max(level);
        let close = if self.next()? == b'{' { b'}' } else { b']' };
        self.ws();
        if self.peek()? == close {
            self.i += 1;
            return Some(());
        }
        loop {
            if close == b'}' {
                if self.peek()? != b'"' {
                    return None;
                }
                self.string()?;
                self.ws();
                self.expect(b':')?;
                self.ws();
            }
            self.value(level)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                c if c == close => return Some(()),
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// A number as JSON's grammar has it; compact when serde_json prints it as it is.
    #[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digit()?;
            integer = false;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.digit()?;
            integer = false;
        }
        if self.compact {
            let token = &self.b[start..self.i];
            // Up to 18 digits always fit i64, which serde_json prints as it is (but not `-0`).
            let short = integer && token.len() <= 18 && token != b"-0";
            if !short && !is_compact_number(token) {
                self.compact = false;
            }
        }
        Some(())
    }

    /// One digit, then any more.
    fn digit(&mut self) -> Option<()> {
        if !self.peek()?.is_ascii_digit() {
            return None;
        }
        self.digits();
        Some(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }

    /// A string starting at the quote under the cursor; true when it holds an escape.
    #[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
    fn string(&mut self) -> Option<bool> {
        let b = self.b;
        let mut i = self.i + 1;
        let mut escaped = false;
        loop {
            i = plain_run(b, i, self.ascii);
            match *b.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    return Some(escaped);
                }
                b'\\' => {
                    escaped = true;
                    match *b.get(i + 1)? {
                        // The escapes serde_json writes itself.
                        b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f' => i += 2,
                        b'/' => {
                            self.compact = false;
                            i += 2;
                        }
                        b'u' => {
                            if !b.get(i + 2..i + 6)?.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.compact = false;
                            i += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                0x80.. => {
                    self.ascii = false;
                    i += 1;
                }
                _ => i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_text::scan;
    use serde_json::value::RawValue;

    /// What the passes it replaces find: serde_json's split, then `scan` of each element.
    fn reference(text: &str) -> Option<Vec<(String, String)>> {
        let items: Vec<&RawValue> = serde_json::from_str(text).ok()?;
        Some(
            items
                .iter()
                .map(|item| (item.get().to_owned(), format!("{:?}", scan(item.get()))))
                .collect(),
        )
    }

    fn ours(text: &str) -> Option<Vec<(String, String)>> {
        let elements = split_array(text)?;
        for e in &elements {
            assert_eq!(e.ascii, e.raw.is_ascii(), "{}", e.raw);
        }
        Some(
            elements
                .iter()
                .map(|e| (e.raw.to_owned(), format!("{:?}", e.scan)))
                .collect(),
        )
    }

    /// Every input the pass accepts, serde_json accepts with the same elements and scans; the
    /// common inputs it must accept, it does.
    #[test]
    fn accepts_what_serde_json_accepts_and_finds_what_scan_finds() {
        let accepted = [
            "[]",
            " [ ] ",
            r#"[{}]"#,
            r#"[{"a":1,"b":[true,false,null],"c":{"d":"e"}}]"#,
            r#"[ {"a" : 1 , "b": [ 1, 2 ] } , {"z":null} ]"#,
            "[\n  {\"x\": \"tab\\there\"}\n]",
            r#"[{"s":"slash\/and\u00e9 and \u0001","t":"\"quoted\\"}]"#,
            r#"[{"s":"日本語 ünïcödé 😀","n":"abcdefghijklmnopqrstuvwxyz"}]"#,
            r#"[{"n":[0,-0,1.0,1e5,1E+5,-1.5e-300,12345678901234567890,123456789012345678901234,0.1,-0.0]}]"#,
            r#"[{"memory":{"id":"1","namespace":"n"},"score":0.5},{"memory":{"id":"2"},"score":null}]"#,
            r#"[{"id":"x","namespace":"a","namespace":"b","content":"c","provenance":{"source":"s"}}]"#,
            r#"[{"a":"0123456789abcdef0123456789abcdef\"0123456789\\abcdef"}]"#,
        ];
        for text in accepted {
            assert!(split_array(text).is_some(), "{text}");
            assert_eq!(ours(text), reference(text), "{text}");
        }
    }

    #[test]
    fn leaves_everything_else_to_the_validating_parser() {
        let declined = [
            "",
            "{}",
            "[1]",
            r#"[{"a":1},]"#,
            r#"[{"a":1,}]"#,
            r#"[{"a":01}]"#,
            r#"[{"a":1.}]"#,
            r#"[{"a":1e}]"#,
            r#"[{"a":-}]"#,
            r#"[{"a":.5}]"#,
            r#"[{"a":tru}]"#,
            r#"[{"a":"\x"}]"#,
            r#"[{"a":"\u12g4"}]"#,
            "[{\"a\":\"raw\ttab\"}]",
            "[{\"a\":\"0123456789\u{1}\"}]",
            r#"[{"a":"unclosed}]"#,
            r#"[{"a":1}] x"#,
            r#"[{"a":1}"#,
            r#"[{"a" 1}]"#,
            r#"[{"na\u006de":1}]"#,
            r#"[{"a":[1 2]}]"#,
            r#"[{"a":{"b"}}]"#,
        ];
        for text in declined {
            assert!(split_array(text).is_none(), "{text}");
        }
        let deep = format!("[{{\"a\":{}{}}}]", "[".repeat(DEEPEST), "]".repeat(DEEPEST));
        assert!(split_array(&deep).is_none());
        let fine = format!("[{{\"a\":{}{}}}]", "[".repeat(90), "]".repeat(90));
        assert_eq!(ours(&fine), reference(&fine));
    }

    /// Strings long enough for the 16- and 8-byte steps, with what must stop them at every
    /// position: an escape, a non-ASCII character, a control character.
    #[test]
    fn every_position_of_a_long_string_is_looked_at() {
        for len in 0..48 {
            for at in 0..len {
                for special in [
                    "\\\"", "\\\\", "\\n", "\\/", "\\u00e9", "é", "日", "😀", "\u{1}", "\u{1f}", "\u{7f}",
                ] {
                    let body: String = (0..len)
                        .map(|k| if k == at { special.to_owned() } else { "x".to_owned() })
                        .collect();
                    let text = format!("[{{\"k\":\"{body}\",\"n\":\"{body}\"}}]");
                    match reference(&text) {
                        Some(expected) => assert_eq!(ours(&text), Some(expected), "{text:?}"),
                        None => assert_eq!(ours(&text), None, "{text:?}"),
                    }
                }
            }
        }
    }

    /// Every prefix and every one-byte change of a record is accepted only when serde_json
    /// accepts it, and then with the same findings.
    #[test]
    fn damaged_records_are_never_accepted_wrongly() {
        let text = r#"[{"id":"m1","namespace":"_semantic/x","title":"Ünïcode \"q\" \\ \/ \u00e9 日本","tags":["a","b"],"confidence":0.87,"n":-12,"e":1e-5,"o":{"k":[true,false,null]}} , {"memory":{"id":"m2"},"score":1}]"#;
        let replacements = b"\"\\{}[]:, \t0-.eE1tfnu\x01\x7fa";
        for i in 0..=text.len() {
            if let Some(prefix) = text.get(..i)
                && let Some(found) = ours(prefix)
            {
                assert_eq!(Some(found), reference(prefix), "{prefix}");
            }
        }
        for i in 0..text.len() {
            for &r in replacements {
                let mut bytes = text.as_bytes().to_vec();
                bytes[i] = r;
                let Ok(changed) = String::from_utf8(bytes) else {
                    continue;
                };
                if let Some(found) = ours(&changed) {
                    assert_eq!(Some(found), reference(&changed), "{changed}");
                }
            }
        }
    }
}
