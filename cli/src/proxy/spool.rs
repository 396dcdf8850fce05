//! Messages too large to hold twice. An upstream message longer than [`SPOOL_AT`] is written to a
//! file in the offload directory as it is read, never held whole by the proxy: the relay routes
//! it on a *skeleton* (the message with each large value replaced by an empty one of its kind),
//! the component reads a tool result straight from the file (`intercept-file`), and what reaches
//! the client is copied from the file, with the descriptor spliced in where the result was. So a
//! large result is in memory once, in the component, and a message the proxy only forwards is
//! never in memory at all.
//!
//! A spool file is private (created owner-only, named `.lro-spool-*`, which no offload name
//! matches, so sweeps, listings and `lro_extract` never see it) and deleted when the last
//! message holding it is written or dropped; one left by a proxy that was killed is deleted by
//! the next proxy on the same directory after a day ([`remove_stale`]).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWrite, AsyncWriteExt};

/// Messages longer than this are spooled: large enough that ordinary traffic never touches the
/// disk (a result this size is over any useful threshold), small enough that a large result is
/// never held by both the proxy and the component, and that the line gathered before spooling
/// costs little next to the result.
pub const SPOOL_AT: usize = 256 * 1024;
/// Values up to this long keep their text in the skeleton.
const SMALL: u64 = 64 * 1024;
/// Spool files of this name prefix belong to proxies.
const PREFIX: &str = ".lro-spool-";
/// A spool file older than this was left by a proxy that did not finish.
const STALE: Duration = Duration::from_secs(24 * 3600);

/// A spool file: deleted when dropped.
#[derive(Debug)]
pub struct SpoolFile {
    path: PathBuf,
    name: String,
    len: u64,
}

impl SpoolFile {
    /// The file's name in the offload directory.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads `range` of the file (a small part: the caller bounds it).
    pub fn read(&self, range: Range<u64>) -> std::io::Result<Vec<u8>> {
        let mut file = File::open(&self.path)?;
        file.seek(SeekFrom::Start(range.start))?;
        let mut bytes = Vec::new();
        file.take(range.end - range.start).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The whole message, for the rare routes that edit a message whole (a batch, an
    /// `initialize` result): held in memory as a line of its size would be.
    pub fn load(&self) -> std::io::Result<Vec<u8>> {
        self.read(0..self.len)
    }

    /// Writes the message to `out` with `splices` applied (ranges in order, apart), and a
    /// newline after it.
    pub async fn write_to<W: AsyncWrite + Unpin>(&self, out: &mut W, splices: &[Splice]) -> std::io::Result<()> {
        let mut file = tokio::fs::File::open(&self.path).await?;
        let mut at = 0;
        for (range, with) in splices {
            tokio::io::copy(&mut (&mut file).take(range.start - at), out).await?;
            out.write_all(with).await?;
            file.seek(SeekFrom::Start(range.end)).await?;
            at = range.end;
        }
        tokio::io::copy(&mut file, out).await?;
        out.write_all(b"\n").await
    }
}

impl Drop for SpoolFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A range of a spooled message and what takes its place (an empty range inserts).
pub type Splice = (Range<u64>, Vec<u8>);

/// What the relay sends the client: a line, or a spooled message with a range of it replaced.
#[derive(Debug)]
pub enum Out {
    Line(Vec<u8>),
    /// The message in `file` with each of `splices` (ranges in order, apart) replaced.
    File {
        file: Arc<SpoolFile>,
        splices: Vec<Splice>,
    },
}

impl From<Vec<u8>> for Out {
    fn from(line: Vec<u8>) -> Self {
        Out::Line(line)
    }
}

/// A spooled message, as the relay routes it.
#[derive(Debug)]
pub struct Spooled {
    pub file: Arc<SpoolFile>,
    /// The message with every value longer than 64 KiB replaced by an empty one of its kind
    /// (`{}`, `[]`, `""`, `0`), but for `result`, whose own members are kept the same way.
    pub skeleton: Vec<u8>,
    /// Where the `result` member's value lies in the file.
    pub result: Option<Range<u64>>,
    /// Where the `id` member's value lies.
    pub id: Option<Range<u64>>,
    /// Where `result.result` lies (a task's result inline, 2026-07-28).
    pub inner_result: Option<Range<u64>>,
    /// Why the message is not valid JSON, when it is not.
    pub problem: Option<String>,
}

/// One member of an object, as the scanner found it.
#[derive(Debug, Default)]
struct Member {
    /// The key's JSON string literal as sent (cut at 1 KiB).
    key: Vec<u8>,
    value: Range<u64>,
    /// For `result`: its own members.
    children: Option<Vec<Member>>,
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
pub struct Scanner {
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
    batch: bool,
}

impl Scanner {
    pub fn feed(&mut self, bytes: &[u8]) {
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
    fn members(self) -> Option<Vec<Member>> {
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

/// Where an upstream's messages are spooled, and how they are numbered.
#[derive(Debug, Clone)]
pub struct SpoolDir {
    dir: PathBuf,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl SpoolDir {
    /// Spools into `dir` (the offload directory, which the component reads), after deleting
    /// spool files there that a proxy left more than a day ago.
    pub fn new(dir: &Path) -> Self {
        remove_stale(dir);
        SpoolDir { dir: dir.to_owned() }
    }

    /// A new spool file, owner-only from its first byte, under a name no other process uses.
    async fn create(&self) -> std::io::Result<(tokio::fs::File, PathBuf, String)> {
        let name = format!(
            "{PREFIX}{}-{}-{:016x}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            random()
        );
        let path = self.dir.join(&name);
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        options.mode(0o600);
        let file = options.open(&path).await?;
        Ok((file, path, name))
    }
}

/// 64 bits no other process will pick (the name also holds the pid and a counter).
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    hasher.finish()
}

/// Deletes the spool files in `dir` last written more than a day ago: their proxy was killed
/// before it could (a live one holds a spool file for as long as one message takes).
pub fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > STALE));
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// One message read from the upstream.
pub enum Incoming {
    /// A line held in memory (without its newline).
    Line(Vec<u8>),
    /// A line spooled to a file.
    Spooled(Spooled),
}

/// Checks UTF-8 across chunk boundaries.
#[derive(Default)]
struct Utf8 {
    carry: Vec<u8>,
    bad: bool,
}

impl Utf8 {
    fn feed(&mut self, bytes: &[u8]) {
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

    fn ok(&self) -> bool {
        !self.bad && self.carry.is_empty()
    }
}

/// A message being spooled.
struct Spooling {
    file: tokio::fs::File,
    path: PathBuf,
    name: String,
    len: u64,
    scanner: Scanner,
    utf8: Utf8,
}

impl Spooling {
    async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.scanner.feed(bytes);
        self.utf8.feed(bytes);
        self.len += bytes.len() as u64;
        self.file.write_all(bytes).await
    }

    /// The message complete: its skeleton built and its JSON checked.
    async fn finish(mut self) -> std::io::Result<Spooled> {
        self.file.flush().await?;
        drop(self.file);
        let file = Arc::new(SpoolFile {
            path: self.path,
            name: self.name,
            len: self.len,
        });
        let utf8 = self.utf8.ok();
        let batch = self.scanner.batch;
        let members = self.scanner.members();
        let checked = file.clone();
        let (skeleton, problem, members) = tokio::task::spawn_blocking(move || {
            let problem = if utf8 {
                check(&checked).err()
            } else {
                Some("invalid UTF-8".to_owned())
            };
            let skeleton = match &members {
                Some(members) => skeleton(&checked, members)?,
                None if batch => b"[]".to_vec(),
                None => Vec::new(),
            };
            std::io::Result::Ok((skeleton, problem, members))
        })
        .await
        .map_err(std::io::Error::other)??;
        let result = members.as_ref().and_then(|m| find(m, "result"));
        let inner_result = result
            .and_then(|r| r.children.as_deref())
            .and_then(|c| find(c, "result"))
            .map(|m| m.value.clone());
        Ok(Spooled {
            id: members.as_ref().and_then(|m| find(m, "id")).map(|m| m.value.clone()),
            result: result.map(|m| m.value.clone()),
            inner_result,
            file,
            skeleton,
            problem,
        })
    }
}

/// The last member named `key` (as written, without escapes), as a parser reads a repeated key.
fn find<'m>(members: &'m [Member], key: &str) -> Option<&'m Member> {
    members
        .iter()
        .rev()
        .find(|m| m.key.len() == key.len() + 2 && &m.key[1..m.key.len() - 1] == key.as_bytes())
}

/// The message is one JSON value: checked as the relay checks a line, in bounded memory.
fn check(file: &SpoolFile) -> Result<(), String> {
    let reader = std::io::BufReader::with_capacity(256 * 1024, File::open(&file.path).map_err(|e| e.to_string())?);
    let mut de = serde_json::Deserializer::from_reader(reader);
    serde::de::IgnoredAny::deserialize(&mut de)
        .and_then(|_| de.end())
        .map_err(|e| format!("not a JSON-RPC message: {e}"))
}

use serde::Deserialize as _;

/// The message with each large value replaced by an empty one of its kind.
fn skeleton(file: &SpoolFile, members: &[Member]) -> std::io::Result<Vec<u8>> {
    let mut out = vec![b'{'];
    for (i, member) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&member.key);
        out.push(b':');
        let value = member.value.clone();
        if let Some(children) = &member.children {
            out.extend(skeleton(file, children)?);
        } else if value.end - value.start <= SMALL {
            out.extend(file.read(value)?);
        } else {
            let first = file.read(value.start..value.start + 1)?;
            out.extend_from_slice(match first.first() {
                Some(b'{') => b"{}",
                Some(b'[') => b"[]",
                Some(b'"') => b"\"\"",
                _ => b"0",
            });
        }
    }
    out.push(b'}');
    Ok(out)
}

/// One message arriving in pieces: held in memory up to [`SPOOL_AT`] bytes, then (when a
/// directory is given) written to a spool file as the rest arrives.
pub struct Sink<'d> {
    dir: Option<&'d SpoolDir>,
    line: Vec<u8>,
    spooling: Option<Spooling>,
    /// Line breaks in what is spooled become spaces (a message printed over several lines, as
    /// an HTTP body or an event's `data:` lines may be, must reach a stdio client as one line);
    /// a message held in memory is left to the caller.
    one_line: bool,
}

impl<'d> Sink<'d> {
    pub fn new(dir: Option<&'d SpoolDir>, one_line: bool) -> Self {
        Sink {
            dir,
            line: Vec::new(),
            spooling: None,
            one_line,
        }
    }

    /// Bytes of the message so far.
    pub fn bytes(&self) -> u64 {
        self.spooling.as_ref().map_or(self.line.len() as u64, |s| s.len)
    }

    /// True when nothing but whitespace arrived.
    pub fn is_blank(&self) -> bool {
        self.spooling.is_none() && self.line.iter().all(u8::is_ascii_whitespace)
    }

    /// Adds the next bytes of the message.
    pub async fn push(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if let Some(spooling) = self.spooling.as_mut() {
            return spooling.write(&one_line(bytes, self.one_line)).await;
        }
        self.line.extend_from_slice(bytes);
        if self.line.len() > SPOOL_AT
            && let Some(dir) = self.dir
        {
            match dir.create().await {
                Ok((file, path, name)) => {
                    let mut started = Spooling {
                        file,
                        path,
                        name,
                        len: 0,
                        scanner: Scanner::default(),
                        utf8: Utf8::default(),
                    };
                    started.write(&one_line(&self.line, self.one_line)).await?;
                    self.line = Vec::new();
                    self.spooling = Some(started);
                }
                // Held in memory as before: a full disk must not lose the message.
                Err(e) => {
                    eprintln!("lro proxy: a large message could not be spooled to disk, so it is held in memory: {e}")
                }
            }
        }
        Ok(())
    }

    /// The message: its line without surrounding whitespace (empty when blank), or the spooled
    /// message checked.
    pub async fn finish(mut self) -> std::io::Result<Incoming> {
        match self.spooling {
            Some(spooling) => Ok(Incoming::Spooled(spooling.finish().await?)),
            None if self.is_blank() => Ok(Incoming::Line(Vec::new())),
            None => Ok(Incoming::Line(super::upstream::take_trimmed(&mut self.line))),
        }
    }
}

/// `bytes` with line breaks as spaces, when `map` (borrowed when there are none).
fn one_line(bytes: &[u8], map: bool) -> std::borrow::Cow<'_, [u8]> {
    if !map || !bytes.iter().any(|&b| b == b'\n' || b == b'\r') {
        return bytes.into();
    }
    bytes
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect::<Vec<u8>>()
        .into()
}

impl Incoming {
    /// What the relay routes on: the line, or the spooled message's skeleton.
    pub fn head(&self) -> &[u8] {
        match self {
            Incoming::Line(line) => line,
            Incoming::Spooled(spooled) => &spooled.skeleton,
        }
    }
}

impl From<Incoming> for super::upstream::UpEvent {
    fn from(incoming: Incoming) -> Self {
        match incoming {
            Incoming::Line(line) => super::upstream::UpEvent::Message(line),
            Incoming::Spooled(spooled) => super::upstream::UpEvent::Spooled(spooled),
        }
    }
}

/// Reads one message (a line) from `reader`: in memory up to [`SPOOL_AT`], spooled beyond when
/// `dir` is given. `Ok(None)` at the end; a last line without its newline that is not a
/// complete message (a server that died while writing it) is dropped with a note on stderr.
pub async fn read_message<R>(
    reader: &mut tokio::io::BufReader<R>,
    dir: Option<&SpoolDir>,
) -> std::io::Result<Option<Incoming>>
where
    R: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncBufReadExt;
    let mut sink = Sink::new(dir, false);
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            // The end: a last line without its newline.
            if sink.is_blank() {
                return Ok(None);
            }
            let length = sink.bytes();
            let complete = match sink.finish().await? {
                Incoming::Spooled(spooled) if spooled.problem.is_none() => Some(Incoming::Spooled(spooled)),
                Incoming::Line(line) if serde_json::from_slice::<serde::de::IgnoredAny>(&line).is_ok() => {
                    Some(Incoming::Line(line))
                }
                _ => None,
            };
            if complete.is_none() {
                eprintln!(
                    "lro proxy: the upstream server's output ended in the middle of a message ({length} bytes without a newline); it was dropped"
                );
            }
            return Ok(complete);
        }
        let (part, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let used = done.unwrap_or(part.len());
        sink.push(part).await?;
        reader.consume(used);
        if done.is_some() {
            return sink.finish().await.map(Some);
        }
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
