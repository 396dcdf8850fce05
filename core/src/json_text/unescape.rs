//! Decoding a JSON string where it lies: a large text content (the records of a tool result,
//! sent as one JSON string) is decoded into the bytes of its own escaped form, which are never
//! fewer, so a result is held once instead of twice.

/// Why a string body could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub struct Unescapable(pub &'static str);

impl std::fmt::Display for Unescapable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Decodes the body of a JSON string (the bytes between its quotes, valid UTF-8) into its own
/// first bytes and returns the decoded length; the bytes after it are set to spaces, so `body`
/// stays UTF-8 whatever the escapes were. A lone surrogate (`\ud800`), which no Rust string
/// can hold and serde_json refuses too, is an error, as is a malformed escape; on error `body`
/// is left partly decoded.
pub fn unescape_in_place(body: &mut [u8]) -> Result<usize, Unescapable> {
    let n = body.len();
    let (mut read, mut write) = (0, 0);
    loop {
        // Copy the run up to the next backslash (nothing to copy until the first escape).
        let run = body[read..].iter().position(|&b| b == b'\\').unwrap_or(n - read);
        if write != read {
            body.copy_within(read..read + run, write);
        }
        read += run;
        write += run;
        if read == n {
            break;
        }
        let simple = match body.get(read + 1) {
            Some(b'"') => Some(b'"'),
            Some(b'\\') => Some(b'\\'),
            Some(b'/') => Some(b'/'),
            Some(b'b') => Some(0x08),
            Some(b'f') => Some(0x0c),
            Some(b'n') => Some(b'\n'),
            Some(b'r') => Some(b'\r'),
            Some(b't') => Some(b'\t'),
            Some(b'u') => None,
            _ => return Err(Unescapable("an invalid escape")),
        };
        if let Some(byte) = simple {
            body[write] = byte;
            write += 1;
            read += 2;
            continue;
        }
        let unit = hex4(body, read + 2)?;
        let (c, used) = match unit {
            0xD800..=0xDBFF => {
                if body.get(read + 6) != Some(&b'\\') || body.get(read + 7) != Some(&b'u') {
                    return Err(Unescapable("a lone leading surrogate in a \\u escape"));
                }
                let low = hex4(body, read + 8)?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(Unescapable("a lone leading surrogate in a \\u escape"));
                }
                let code = 0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                (char::from_u32(code), 12)
            }
            0xDC00..=0xDFFF => return Err(Unescapable("a lone trailing surrogate in a \\u escape")),
            _ => (char::from_u32(u32::from(unit)), 6),
        };
        let c = c.ok_or(Unescapable("an invalid \\u escape"))?;
        // At most 4 bytes for an escape of 6 or 12: never past what was read.
        let len = c.encode_utf8(&mut body[write..write + c.len_utf8()]).len();
        write += len;
        read += used;
    }
    body[write..].fill(b' ');
    Ok(write)
}

fn hex4(body: &[u8], at: usize) -> Result<u16, Unescapable> {
    let digits = body.get(at..at + 4).ok_or(Unescapable("a \\u escape cut short"))?;
    let mut unit = 0u16;
    for &d in digits {
        let value = (d as char)
            .to_digit(16)
            .ok_or(Unescapable("a \\u escape with a non-hex digit"))?;
        unit = unit << 4 | value as u16;
    }
    Ok(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(literal: &str) -> Result<String, Unescapable> {
        let mut body = literal.as_bytes()[1..literal.len() - 1].to_vec();
        let len = unescape_in_place(&mut body)?;
        assert!(body[len..].iter().all(|&b| b == b' '));
        body.truncate(len);
        Ok(String::from_utf8(body).unwrap())
    }

    #[test]
    fn decodes_as_serde_json_does() {
        for literal in [
            r#""""#,
            r#""plain""#,
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u00e9\u4e2d\ud83d\ude00 end""#,
            r#""é中😀 \u0000""#,
            r#""[{\"id\":1,\"text\":\"x\\ny\"}]""#,
        ] {
            let expected: String = serde_json::from_str(literal).unwrap();
            assert_eq!(decoded(literal).unwrap(), expected, "{literal}");
        }
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        for literal in [
            r#""\ud800""#,
            r#""\ud800x""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            r#""\x""#,
            r#""\u12""#,
            r#""\u12g4""#,
        ] {
            assert!(decoded(literal).is_err(), "{literal}");
            assert!(serde_json::from_str::<String>(literal).is_err(), "{literal}");
        }
    }
}
