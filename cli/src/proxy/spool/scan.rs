//! What a spooled message holds, read as its bytes stream by: the byte ranges of its top-level
//! members and of its `result`'s (`Scanner`), and whether it is UTF-8 (`Utf8`), without keeping
//! the message.

use std::ops::Range;

/// One member of an object, as the scanner found it.
#[derive(Debug, Default)]
pub(super) struct Member {
    /// The key's JSON string literal as sent (cut at 1 KiB).
    pub(super) key: Vec<u8>,
    pub(super) value: Range<u64>,
    /// For `result`: its own members.
    pub(super) children: Option<Vec<Member>>,
}

/// Where one open container is, for the two levels the scanner records.
#[derive(Debug)]
struct Frame {
    object: bool,
    /// The members are recorded (the message, and its `result`).
    recording: bool,
    members: Vec<Member>,
    expect_key: bool,
    key: Option<Vec<u8>>,
    value_start: Option<u64>,
    /// The members of the value being read, when it is the recorded `result`.
    children: Option<Vec<Member>>,
}

/// Finds a message's top-level members and those of its `result` as the bytes go by, chunk by
/// chunk: only strings, nesting and the separators of the two recorded levels are tracked. The
/// message is checked as JSON separately ([`check`]); on JSON this reads, the ranges are exact.
#[derive(Debug, Default)]
pub(super) struct Scanner {
    offset: u64,
    stack: Vec<Frame>,
    /// Depth of containers inside the recorded ones (not framed).
    deeper: u32,
    in_string: bool,
    escape: bool,
    /// The string being read is a key at a recorded level.
    key_string: bool,
    /// One past the last byte that was not whitespace.
    last: u64,
    top: Option<Vec<Member>>,
    pub(super) batch: bool,
}

impl Scanner {
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
            self.offset += 1;
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            if self.key_string
                && let Some(frame) = self.stack.last_mut()
                && let Some(key) = frame.key.as_mut()
                && key.len() < 1024
            {
                key.push(b);
            }
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                self.key_string = false;
            }
            self.last = self.offset + 1;
            return;
        }
        if b.is_ascii_whitespace() {
            return;
        }
        let at = self.offset;
        if self.deeper > 0 {
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.deeper += 1,
                b'}' | b']' => self.deeper -= 1,
                _ => {}
            }
            self.last = at + 1;
            return;
        }
        let depth = self.stack.len();
        match self.stack.last_mut() {
            None => {
                // The message itself.
                if self.top.is_none() && b == b'{' {
                    self.stack.push(Frame::new(true, true));
                } else if self.top.is_none() && b == b'[' {
                    self.batch = true;
                    self.deeper = 1;
                }
            }
            Some(frame) => {
                if frame.object && frame.expect_key && b == b'"' {
                    frame.key = Some(vec![b'"']);
                    frame.expect_key = false;
                    self.in_string = true;
                    self.key_string = true;
                } else if b == b':' && frame.object {
                    // The value starts at the next byte that is not whitespace.
                } else if b == b',' || b == b'}' || b == b']' {
                    let end = self.last;
                    frame.finish(end);
                    if b == b',' {
                        frame.expect_key = frame.object;
                    } else {
                        let done = self.stack.pop().expect("a frame");
                        self.close(done, at + 1);
                    }
                } else {
                    if frame.value_start.is_none() && (!frame.object || frame.key.is_some()) {
                        frame.value_start = Some(at);
                    }
                    let record = b == b'{' && depth == 1 && frame.key.as_deref() == Some(b"\"result\"");
                    if record {
                        self.stack.push(Frame::new(true, true));
                    } else if matches!(b, b'{' | b'[') {
                        self.deeper = 1;
                    } else if b == b'"' {
                        self.in_string = true;
                    }
                }
            }
        }
        self.last = at + 1;
    }

    /// A container closed at `end`: the message is done, or a recorded `result` hands its
    /// members to the member holding it.
    fn close(&mut self, done: Frame, end: u64) {
        self.last = end;
        match self.stack.last_mut() {
            None => self.top = Some(done.members),
            Some(parent) if done.recording => parent.children = Some(done.members),
            Some(_) => {}
        }
    }

    /// The members found, when the message was a complete object.
    pub(super) fn members(self) -> Option<Vec<Member>> {
        self.top
    }
}

impl Frame {
    fn new(object: bool, recording: bool) -> Self {
        Frame {
            object,
            recording,
            members: Vec::new(),
            expect_key: object,
            key: None,
            value_start: None,
            children: None,
        }
    }

    fn finish(&mut self, end: u64) {
        if let (Some(key), Some(start)) = (self.key.take(), self.value_start.take())
            && self.recording
        {
            let children = self.children.take();
            self.members.push(Member {
                key,
                value: start..end,
                children,
            });
        }
        self.value_start = None;
    }
}

/// Checks UTF-8 across chunk boundaries.
#[derive(Default)]
pub(super) struct Utf8 {
    carry: Vec<u8>,
    bad: bool,
}

impl Utf8 {
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        if self.bad {
            return;
        }
        let mut joined;
        let bytes = if self.carry.is_empty() {
            bytes
        } else {
            joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(bytes);
            &joined[..]
        };
        match std::str::from_utf8(bytes) {
            Ok(_) => {}
            Err(e) if e.error_len().is_none() => self.carry = bytes[e.valid_up_to()..].to_vec(),
            Err(_) => self.bad = true,
        }
    }

    pub(super) fn ok(&self) -> bool {
        !self.bad && self.carry.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Found = (String, String, Option<Vec<(String, String)>>);

    fn members(text: &str) -> Vec<Found> {
        let mut scanner = Scanner::default();
        for chunk in text.as_bytes().chunks(3) {
            scanner.feed(chunk);
        }
        let slice = |m: &Member| text[m.value.start as usize..m.value.end as usize].to_owned();
        scanner
            .members()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    String::from_utf8(m.key.clone()).unwrap(),
                    slice(m),
                    m.children.as_ref().map(|c| {
                        c.iter()
                            .map(|m| (String::from_utf8(m.key.clone()).unwrap(), slice(m)))
                            .collect()
                    }),
                )
            })
            .collect()
    }

    #[test]
    fn the_scanner_finds_members_and_those_of_the_result() {
        let text = r#" {"jsonrpc" : "2.0", "id":"a\"}", "result": {"content":[{"type":"text","text":"x\"]}"}], "isError" :false ,"result":{"a":[1]}} , "n":-1.5e3 }  "#;
        let found = members(text);
        assert_eq!(found[0], ("\"jsonrpc\"".into(), "\"2.0\"".into(), None));
        assert_eq!(found[1], ("\"id\"".into(), "\"a\\\"}\"".into(), None));
        assert_eq!(found[2].0, "\"result\"");
        assert_eq!(
            found[2].1,
            r#"{"content":[{"type":"text","text":"x\"]}"}], "isError" :false ,"result":{"a":[1]}}"#
        );
        let children = found[2].2.as_ref().unwrap();
        assert_eq!(children[0].1, r#"[{"type":"text","text":"x\"]}"}]"#);
        assert_eq!(children[1], ("\"isError\"".into(), "false".into()));
        assert_eq!(children[2], ("\"result\"".into(), r#"{"a":[1]}"#.into()));
        assert_eq!(found[3], ("\"n\"".into(), "-1.5e3".into(), None));
    }

    #[test]
    fn utf8_is_checked_across_chunks() {
        let text = "é中😀".as_bytes();
        for cut in 0..text.len() {
            let mut utf8 = Utf8::default();
            utf8.feed(&text[..cut]);
            utf8.feed(&text[cut..]);
            assert!(utf8.ok(), "{cut}");
        }
        let mut bad = Utf8::default();
        bad.feed(&[0xff, b'a']);
        assert!(!bad.ok());
        let mut cut_short = Utf8::default();
        cut_short.feed(&text[..3]);
        assert!(!cut_short.ok());
    }
}
