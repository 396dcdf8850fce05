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
//! the next proxy on the same directory after a day ([`remove_stale`]). `scan` reads a message's
//! layout as it streams by.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWrite, AsyncWriteExt};

mod scan;
use scan::{Member, Scanner, Utf8};

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
            return spooling.write(&breaks_as_spaces(bytes, self.one_line)).await;
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
                    started.write(&breaks_as_spaces(&self.line, self.one_line)).await?;
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
fn breaks_as_spaces(bytes: &[u8], map: bool) -> std::borrow::Cow<'_, [u8]> {
    if !map || !bytes.iter().any(|&b| b == b'\n' || b == b'\r') {
        return bytes.into();
    }
    bytes
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect::<Vec<u8>>()
        .into()
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
