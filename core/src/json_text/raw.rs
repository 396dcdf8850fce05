//! Walking JSON text that is already known to be valid without building a value, so that what is
//! written or forwarded keeps every number and string exactly as the server sent it
//! (`123456789012345678901234567890` and `1E+2` included): a parsed value would print them as
//! `1.2345678901234568e+29` and `100.0`.

use std::borrow::Cow;

use super::{skip_string, skip_value, skip_ws};

/// `raw` without the whitespace between tokens; every token is kept byte for byte.
pub fn minify(raw: &str) -> Cow<'_, str> {
    let b = raw.as_bytes();
    let trimmed = raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    if !has_whitespace_outside_strings(trimmed.as_bytes()) {
        return Cow::Borrowed(trimmed);
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'"' => {
                let end = skip_string(b, i).unwrap_or(b.len());
                out.extend_from_slice(&b[i..end]);
                i = end;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    // Only ASCII whitespace was removed, between whole tokens, so the bytes are still UTF-8.
    Cow::Owned(String::from_utf8(out).expect("whitespace removed between tokens"))
}

/// [`minify`] where the text lies: `bytes` (valid JSON text) loses the whitespace between its
/// tokens, shifted to the front; returns the new length and sets the bytes after it to spaces,
/// so `bytes` stays UTF-8. The result is byte for byte what [`minify`] gives.
pub fn minify_in_place(bytes: &mut [u8]) -> usize {
    let (mut read, mut write) = (0, 0);
    while read < bytes.len() {
        match bytes[read] {
            b' ' | b'\t' | b'\n' | b'\r' => read += 1,
            b'"' => {
                let end = skip_string(bytes, read).unwrap_or(bytes.len());
                bytes.copy_within(read..end, write);
                write += end - read;
                read = end;
            }
            c => {
                bytes[write] = c;
                write += 1;
                read += 1;
            }
        }
    }
    bytes[write..].fill(b' ');
    write
}

/// True when `raw` has whitespace between its tokens.
pub fn has_whitespace(raw: &str) -> bool {
    has_whitespace_outside_strings(raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r')).as_bytes())
}

fn has_whitespace_outside_strings(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\n' | b'\r' => return true,
            b'"' => i = skip_string(b, i).unwrap_or(b.len()),
            _ => i += 1,
        }
    }
    false
}

/// The members of the object `raw` (valid JSON text of an object), in order: each key decoded,
/// each value as its text. `None` when `raw` is not an object.
pub fn members(raw: &str) -> Option<Vec<(String, &str)>> {
    member_texts(raw)?
        .into_iter()
        .map(|(key, value)| Some((serde_json::from_str(key).ok()?, value)))
        .collect()
}

/// The members of the object `raw` (valid JSON text of an object), in order, as texts: each key
/// as its JSON string literal (quotes and escapes as sent), each value as its JSON text. `None`
/// when `raw` is not an object.
pub fn member_texts(raw: &str) -> Option<Vec<(&str, &str)>> {
    let b = raw.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    let mut out = Vec::new();
    if b.get(i) == Some(&b'}') {
        return Some(out);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(b, i)?;
        let key = &raw[i..key_end];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let end = skip_value(b, i)?;
        out.push((key, &raw[i..end]));
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Some(out),
            _ => return None,
        }
    }
}

/// The elements of the array `raw` (valid JSON text of an array), each as its text. `None` when
/// `raw` is not an array.
pub fn elements(raw: &str) -> Option<Vec<&str>> {
    let b = raw.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i = skip_ws(b, i + 1);
    let mut out = Vec::new();
    if b.get(i) == Some(&b']') {
        return Some(out);
    }
    loop {
        let end = skip_value(b, i)?;
        out.push(&raw[i..end]);
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b']') => return Some(out),
            _ => return None,
        }
    }
}

/// What JSON value `raw` holds, from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `{`
    Object,
    /// `[`
    Array,
    /// `"`
    String,
    /// A number, `true`, `false` or `null`.
    Other,
}

/// The kind of the JSON text `raw`.
pub fn kind(raw: &str) -> Kind {
    match raw.as_bytes().get(skip_ws(raw.as_bytes(), 0)) {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        Some(b'"') => Kind::String,
        _ => Kind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minify_keeps_every_token_as_sent() {
        let raw = " {\"a\" : [ 1E+2, 123456789012345678901234567890 ,\"x  y\\\" z\" ],\n \"b\":-0.0 } ";
        assert_eq!(
            minify(raw),
            "{\"a\":[1E+2,123456789012345678901234567890,\"x  y\\\" z\"],\"b\":-0.0}"
        );
        assert!(matches!(minify("[1,2]"), Cow::Borrowed("[1,2]")));
        let mut bytes = raw.as_bytes().to_vec();
        let len = minify_in_place(&mut bytes);
        assert_eq!(&bytes[..len], minify(raw).as_bytes());
        assert!(bytes[len..].iter().all(|&b| b == b' '));
        assert!(has_whitespace(raw) && !has_whitespace(" [1,\" \"] "));
    }

    #[test]
    fn members_and_elements_are_the_texts_as_sent() {
        let raw = "{ \"k\\u0041\" : { \"x\" : 1 } , \"n\": 1.50 }";
        assert_eq!(
            members(raw).unwrap(),
            [("kA".to_owned(), "{ \"x\" : 1 }"), ("n".to_owned(), "1.50")]
        );
        assert_eq!(elements(" [ 1 , [2, 3] ,\"]\" ] ").unwrap(), ["1", "[2, 3]", "\"]\""]);
        assert_eq!(elements("[]").unwrap(), Vec::<&str>::new());
        assert_eq!(members("{}").unwrap(), []);
        assert!(members("[1]").is_none());
        assert_eq!(kind(" 5"), Kind::Other);
    }
}
