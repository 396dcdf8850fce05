//! [`is_jq_canonical`]: whether a line already reads exactly as jq prints it.

use super::bytes;
use crate::jq::write_num;

/// Whether `text` is one valid JSON value that [`crate::jq::write_json`] would print exactly as it is, so
/// that it can be output without parsing and printing it again: compact, escapes as jq writes
/// them, numbers in jq's form, no repeated member names.
///
/// One pass checks the grammar and the form together (string bodies sixteen bytes a step):
/// it runs on every line a `select` recipe outputs, and a second, validating pass had cost as
/// much again.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub fn is_jq_canonical(text: &str) -> bool {
    /// What the grammar allows at this point.
    #[derive(Clone, Copy, PartialEq)]
    enum Next {
        /// A value; `]` too when the array just opened.
        Value {
            first: bool,
        },
        /// A member name; `}` too when the object just opened.
        Name {
            first: bool,
        },
        Colon,
        /// `,` or the innermost container's end; the end of the text when none is open.
        After,
    }
    let b = text.as_bytes();
    // The containers open at this point, the innermost last: for an object, where its member
    // names start in `names`; `None` for an array. One list of names for all the objects, so
    // that an object costs no allocation of its own.
    let mut open: Vec<Option<usize>> = Vec::new();
    let mut names: Vec<&[u8]> = Vec::new();
    let mut next = Next::Value { first: false };
    let mut i = 0;
    loop {
        match next {
            Next::Value { first } => {
                let Some(&c) = b.get(i) else { return false };
                match c {
                    b'"' => {
                        let Some(end) = canonical_string(b, i) else {
                            return false;
                        };
                        i = end;
                    }
                    b'{' => {
                        open.push(Some(names.len()));
                        i += 1;
                        next = Next::Name { first: true };
                        continue;
                    }
                    b'[' => {
                        open.push(None);
                        i += 1;
                        next = Next::Value { first: true };
                        continue;
                    }
                    b']' if first => {
                        open.pop();
                        i += 1;
                    }
                    b'-' | b'0'..=b'9' => {
                        let start = i;
                        while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                            i += 1;
                        }
                        if !canonical_number(&text[start..i]) {
                            return false;
                        }
                    }
                    b't' if b[i..].starts_with(b"true") => i += 4,
                    b'f' if b[i..].starts_with(b"false") => i += 5,
                    b'n' if b[i..].starts_with(b"null") => i += 4,
                    _ => return false,
                }
                next = Next::After;
            }
            Next::Name { first } => match b.get(i) {
                Some(b'"') => {
                    let Some(end) = canonical_string(b, i) else {
                        return false;
                    };
                    let name = &b[i + 1..end - 1];
                    // Escapes are canonical, one spelling each: equal names are equal bytes.
                    let Some(&Some(from)) = open.last() else { return false };
                    if names[from..].contains(&name) {
                        return false;
                    }
                    names.push(name);
                    i = end;
                    next = Next::Colon;
                }
                Some(b'}') if first => {
                    open.pop();
                    i += 1;
                    next = Next::After;
                }
                _ => return false,
            },
            Next::Colon => {
                if b.get(i) != Some(&b':') {
                    return false;
                }
                i += 1;
                next = Next::Value { first: false };
            }
            Next::After => {
                match (b.get(i), open.last()) {
                    (None, None) => return true,
                    (Some(b','), Some(Some(_))) => next = Next::Name { first: false },
                    (Some(b','), Some(None)) => next = Next::Value { first: false },
                    (Some(b'}'), Some(&Some(from))) => {
                        names.truncate(from);
                        open.pop();
                    }
                    (Some(b']'), Some(None)) => {
                        open.pop();
                    }
                    _ => return false,
                }
                i += 1;
            }
        }
    }
}

/// The end (one past the closing quote) of the string starting at `b[i]` when jq would print it
/// as it is written: no raw control character or DEL, and only the escapes jq writes.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
fn canonical_string(b: &[u8], i: usize) -> Option<usize> {
    let mut i = i + 1;
    loop {
        i = bytes::plain_run(b, i, false);
        match *b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => match *b.get(i + 1)? {
                b'"' | b'\\' | b'n' | b't' | b'r' | b'b' | b'f' => i += 2,
                // jq writes \u only for the other control characters and DEL, in lower case.
                b'u' => {
                    let hex = b.get(i + 2..i + 6)?;
                    // Checked digit by digit: `from_str_radix` would also take a sign.
                    if !hex.iter().all(|h| matches!(h, b'0'..=b'9' | b'a'..=b'f')) {
                        return None;
                    }
                    let code = hex
                        .iter()
                        .fold(0u32, |code, &h| code * 16 + (h as char).to_digit(16).unwrap_or(0));
                    if !((code < 0x20 && !matches!(code, 0x8 | 0x9 | 0xa | 0xc | 0xd)) || code == 0x7f) {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            },
            0..=0x1f | 0x7f => return None,
            _ => i += 1,
        }
    }
}

/// Whether `token` (a run of number characters) is a JSON number as jq prints it.
fn canonical_number(token: &str) -> bool {
    let digits = token.strip_prefix('-').unwrap_or(token);
    let plain = !digits.is_empty()
        && digits.len() <= 15
        && digits.bytes().all(|d| d.is_ascii_digit())
        && (digits == "0" && token.len() == 1 || !digits.starts_with('0'));
    if plain {
        return true;
    }
    let Some(n) = jaq_json::read::parse_single_num(token.as_bytes()) else {
        return false;
    };
    let mut printed = String::new();
    write_num(&mut printed, &n);
    // What jq prints is a JSON number (never NaN or infinite: those are not read from text).
    printed == token
}
