//! Python's string literals (prefixes, quotes, escapes), for the reader in `super`.

impl super::Py<'_> {
    /// The length of a string prefix (`r`, `b`, `u`, `rb`, `br`, any case) right before a quote
    /// at the current position, with whether it makes the string raw and bytes.
    pub(super) fn string_prefix(&self) -> Option<(usize, bool, bool)> {
        let (mut raw, mut bytes, mut unicode) = (false, false, false);
        let mut len = 0;
        while len < 2 {
            match self.at(len).map(|c| c.to_ascii_lowercase()) {
                Some(b'r') if !raw && !unicode => raw = true,
                Some(b'b') if !bytes && !unicode => bytes = true,
                Some(b'u') if len == 0 => unicode = true,
                _ => break,
            }
            len += 1;
        }
        (len > 0 && matches!(self.at(len), Some(b'\'' | b'"'))).then_some((len, raw, bytes))
    }

    /// One or more adjacent string literals, joined as Python joins them.
    pub(super) fn strings(&mut self) -> Option<()> {
        self.buf.clear();
        loop {
            let (len, raw, bytes) = self.string_prefix().unwrap_or((0, false, false));
            self.i += len;
            self.literal(raw, bytes)?;
            let end = self.i;
            self.ws();
            let more = match self.peek() {
                Some(b'\'' | b'"') => true,
                Some(_) => self.string_prefix().is_some(),
                None => false,
            };
            if !more {
                self.i = end;
                break;
            }
        }
        serde_json::to_writer(&mut self.out, &self.buf).ok()
    }

    /// One string literal at its opening quote, decoded onto `buf`.
    pub(super) fn literal(&mut self, raw: bool, bytes: bool) -> Option<()> {
        let q = self.peek()?;
        let triple = self.at(1) == Some(q) && self.at(2) == Some(q);
        self.i += if triple { 3 } else { 1 };
        loop {
            let start = self.i;
            while let Some(c) = self.peek() {
                if c == q || c == b'\\' || c == b'\n' || c == b'\r' {
                    break;
                }
                self.i += 1;
            }
            // The run ends at an ASCII byte or the end, so both ends are character boundaries.
            self.buf.push_str(self.s.get(start..self.i)?);
            match self.peek()? {
                b'\\' => self.escape(raw, bytes)?,
                c if c == q => {
                    if !triple {
                        self.i += 1;
                        return Some(());
                    }
                    if self.at(1) == Some(q) && self.at(2) == Some(q) {
                        self.i += 3;
                        return Some(());
                    }
                    self.buf.push(char::from(q));
                    self.i += 1;
                }
                // A line break in a one-line string: not a literal.
                _ if !triple => return None,
                c => {
                    self.buf.push(char::from(c));
                    self.i += 1;
                }
            }
        }
    }

    /// The escape at the current backslash, decoded onto `buf`.
    pub(super) fn escape(&mut self, raw: bool, bytes: bool) -> Option<()> {
        if raw {
            // In a raw string the backslash stays, and only keeps the next character from
            // ending the string.
            let next = self.s.get(self.i + 1..)?.chars().next()?;
            self.buf.push('\\');
            self.buf.push(next);
            self.i += 1 + next.len_utf8();
            return Some(());
        }
        let c = self.at(1)?;
        self.i += 2;
        let decoded = match c {
            b'\n' => return Some(()),
            b'\r' => {
                self.eat(b'\n');
                return Some(());
            }
            b'\\' => '\\',
            b'\'' => '\'',
            b'"' => '"',
            b'n' => '\n',
            b't' => '\t',
            b'r' => '\r',
            b'a' => '\x07',
            b'b' => '\x08',
            b'f' => '\x0c',
            b'v' => '\x0b',
            b'0'..=b'7' => {
                let mut code = u32::from(c - b'0');
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ b'0'..=b'7') => {
                            code = code * 8 + u32::from(d - b'0');
                            self.i += 1;
                        }
                        _ => break,
                    }
                }
                char::from_u32(code)?
            }
            // In bytes, `\xNN` is the byte NN, read as the character U+00NN (Latin-1).
            b'x' => char::from_u32(self.hex(2)?)?,
            b'u' if !bytes => self.utf16()?,
            b'U' if !bytes => {
                let code = self.hex(8)?;
                if code > 0x10_FFFF {
                    return None;
                }
                char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)
            }
            _ => {
                // Python keeps an unknown escape as it is (`\d`, `\N{...}`, `\u` in bytes).
                self.i -= 1;
                let next = self.s.get(self.i..)?.chars().next()?;
                self.buf.push('\\');
                self.buf.push(next);
                self.i += next.len_utf8();
                return Some(());
            }
        };
        self.buf.push(decoded);
        Some(())
    }

    /// `\uNNNN`, after the `u`: a surrogate pair makes one character, and a lone surrogate, which
    /// a Rust string cannot hold, becomes U+FFFD.
    pub(super) fn utf16(&mut self) -> Option<char> {
        let code = self.hex(4)?;
        if (0xD800..0xDC00).contains(&code) && self.peek() == Some(b'\\') && self.at(1) == Some(b'u') {
            let back = self.i;
            self.i += 2;
            match self.hex(4) {
                Some(low @ 0xDC00..0xE000) => {
                    return char::from_u32(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00));
                }
                _ => self.i = back,
            }
        }
        Some(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    /// Exactly `n` hex digits.
    pub(super) fn hex(&mut self, n: usize) -> Option<u32> {
        let digits = self.s.get(self.i..self.i + n)?;
        if !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.i += n;
        u32::from_str_radix(digits, 16).ok()
    }
}
