//! The custodian (the WIT `custodian` interface): [`sweep`] deletes offloaded files whose expiry
//! has passed. It also keeps the offload directory within its storage caps around a write
//! (`make_room`), and says which directory entries are ours and when they expire, for the
//! extractor's expiry check. Several processes with different settings may share one
//! directory: a file's expiry is the one its writer recorded, never the reader's ttl.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, ErrorKind, Read};
use std::time::UNIX_EPOCH;

use serde_json::Value;
use ulid::Ulid;

use crate::time::parse_rfc3339_ms;
use crate::{Config, Error, Event};

/// What one sweep did (the WIT `sweep-report` record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Paths deleted, in name order.
    pub deleted: Vec<String>,
    /// LRO files still within their time to live.
    pub kept: u32,
    /// Expired files that could not be deleted.
    pub failed: Vec<SweepFailure>,
}

/// A file that could not be deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepFailure {
    /// Its path.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// Longest header line read to find a file's timestamp; a longer one counts as unreadable.
const MAX_HEADER_BYTES: u64 = 1 << 20;

/// Which of our files a directory entry is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `{prefix}-{operation}-{ulid}.jsonl`
    Offload(Ulid),
    /// `.{prefix}-{operation}-{ulid}.jsonl.tmp`, left by an interrupted write.
    Temporary(Ulid),
}

impl Kind {
    pub(crate) fn is_offload(&self) -> bool {
        matches!(self, Kind::Offload(_))
    }

    fn ulid(&self) -> Ulid {
        match self {
            Kind::Offload(ulid) | Kind::Temporary(ulid) => *ulid,
        }
    }
}

/// Recognises our file names; anything else is None and is never touched.
pub(crate) fn classify(prefix: &str, name: &str) -> Option<Kind> {
    let (stem, temporary) = match name.strip_prefix('.') {
        Some(rest) => (rest.strip_suffix(".jsonl.tmp")?, true),
        None => (name.strip_suffix(".jsonl")?, false),
    };
    let rest = stem.strip_prefix(prefix)?.strip_prefix('-')?;
    // `{operation}-{ulid}`: a non-empty operation of [a-z0-9_-], then a 26-character ULID.
    let (operation, ulid) = rest.rsplit_once('-')?;
    let operation_ok = !operation.is_empty()
        && operation
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !operation_ok || ulid.len() != 26 {
        return None;
    }
    let ulid = Ulid::from_string(ulid).ok()?;
    Some(if temporary {
        Kind::Temporary(ulid)
    } else {
        Kind::Offload(ulid)
    })
}

/// The longest a file's recorded expiry is honoured after its creation: a writer's `ttl_seconds`
/// above it is recorded as this. It bounds what a header can promise, so a damaged or
/// hand-written header cannot keep a file (and the storage it takes) forever.
pub const MAX_TTL_SECONDS: u64 = 366 * 86_400;

/// The least time a temporary is left alone after its creation, whatever the sweeper's ttl: it
/// may be another process's write in progress (a reservation being checked against the caps).
pub const TEMPORARY_GRACE_MS: u64 = 3_600_000;

/// The expiry a writer records in a new file's header (`expires_at`): `created + ttl_seconds`,
/// the ttl bounded by [`MAX_TTL_SECONDS`].
pub(crate) fn promised_expiry(config: &Config, created_ms: u64) -> u64 {
    created_ms.saturating_add(config.ttl_seconds.min(MAX_TTL_SECONDS) * 1000)
}

/// The times a header line records, if it can be read: `timestamp`, and `expires_at` when the
/// writer recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamps {
    pub timestamp: u64,
    pub expires_at: Option<u64>,
}

impl Stamps {
    /// The stamps of a parsed header; None without a readable `timestamp`. An `expires_at` that
    /// is not an RFC 3339 time counts as absent (the reader's ttl then applies).
    pub(crate) fn of(header: &Value) -> Option<Stamps> {
        let time = |key: &str| header.get(key).and_then(Value::as_str).and_then(parse_rfc3339_ms);
        Some(Stamps {
            timestamp: time("timestamp")?,
            expires_at: time("expires_at"),
        })
    }
}

/// The stamps recorded in a file's header line, if it can be read.
fn header_stamps(path: &str) -> Option<Stamps> {
    let file = File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(MAX_HEADER_BYTES))
        .read_until(b'\n', &mut line)
        .ok()?;
    let header: Value = serde_json::from_slice(line.strip_suffix(b"\n")?).ok()?;
    if header.get("type")?.as_str()? != "lro_header" {
        return None;
    }
    Stamps::of(&header)
}

/// When a file was created: its header's timestamp (when `header` has one), unless the header
/// is dated after both its ULID's time and its modification time (by more than a minute of
/// clock skew): then the earlier of those two. A header written with a timestamp far in the
/// future cannot keep a file from ever being swept.
pub(crate) fn created_ms(path: &str, ulid: Ulid, header: Option<u64>) -> u64 {
    let modified = fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    created_from(modified, ulid, header)
}

/// [`created_ms`] from a modification time already known (a file's, or a stored object's).
fn created_from(modified: Option<u64>, ulid: Ulid, header: Option<u64>) -> u64 {
    const SKEW_MS: u64 = 60_000;
    let ulid_ms = ulid.timestamp_ms();
    let dated = modified.map_or(ulid_ms, |m| m.min(ulid_ms));
    let latest = modified.map_or(ulid_ms, |m| m.max(ulid_ms));
    match header {
        Some(stamp) if stamp <= latest.saturating_add(SKEW_MS) => stamp,
        _ => dated,
    }
}

/// When a file of ours was created, and when it expires, for a process whose own ttl is
/// `ttl_ms`. An offload file expires when its header's `expires_at` says (bounded by created +
/// [`MAX_TTL_SECONDS`]), or, in a file written before headers recorded it, at created + `ttl_ms`.
/// A temporary expires at created + the larger of `ttl_ms` and [`TEMPORARY_GRACE_MS`].
/// `stamps`: the header's, when the caller has read them (None: read here for an offload file).
pub(crate) fn lifetime(path: &str, kind: &Kind, ttl_ms: u64, stamps: Option<Stamps>) -> (u64, u64) {
    match kind {
        Kind::Offload(ulid) => {
            let stamps = stamps.or_else(|| header_stamps(path));
            let created = created_ms(path, *ulid, stamps.map(|s| s.timestamp));
            let expires = match stamps.and_then(|s| s.expires_at) {
                Some(promised) => promised.min(created.saturating_add(MAX_TTL_SECONDS * 1000)),
                None => created.saturating_add(ttl_ms),
            };
            (created, expires)
        }
        Kind::Temporary(ulid) => {
            let created = created_ms(path, *ulid, None);
            (created, created.saturating_add(ttl_ms.max(TEMPORARY_GRACE_MS)))
        }
    }
}

/// When an offload file kept in an object store expires, by the rule [`lifetime`] applies to a
/// file on disk: `name` is its file name, `head` its first bytes (the header line, if whole),
/// `modified_ms` the store's last-modified time and `ttl_ms` the reader's ttl. None when `name`
/// is not an offload file with `prefix`: such an object is never deleted.
pub fn stored_expiry(prefix: &str, name: &str, head: &[u8], modified_ms: u64, ttl_ms: u64) -> Option<u64> {
    let Some(Kind::Offload(ulid)) = classify(prefix, name) else {
        return None;
    };
    let stamps = head
        .split(|&b| b == b'\n')
        .next()
        .filter(|_| head.contains(&b'\n'))
        .and_then(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|h| h.get("type").and_then(Value::as_str) == Some("lro_header"))
        .and_then(|h| Stamps::of(&h));
    let created = created_from(Some(modified_ms), ulid, stamps.map(|s| s.timestamp));
    Some(match stamps.and_then(|s| s.expires_at) {
        Some(promised) => promised.min(created.saturating_add(MAX_TTL_SECONDS * 1000)),
        None => created.saturating_add(ttl_ms),
    })
}

/// Keeps the offload directory within `config.max_files` and `config.max_bytes` with `adding`
/// more files of `adding_bytes` in all, counting every offload file and every temporary (a write
/// in progress, ours or another process's) it lists. When over a cap it deletes files that have
/// expired at `now_ms` (by [`lifetime`]), oldest ULID first (`OffloadFileEvicted`), and never a
/// file whose expiry is still ahead, nor one of `own` (this call's temporaries); when that is
/// not enough it fails naming the cap, having deleted only expired files.
///
/// Called twice per write: before it (`adding` = the new files: no bytes are written in vain)
/// and once its files are complete and renamed into place (`adding` = 0, `own` = their names,
/// which the listing counts). Of two writers that keep their files, the later check lists the
/// earlier one's, so the caps hold across processes without a lock.
pub(crate) fn make_room(
    config: &Config,
    adding: u32,
    adding_bytes: u64,
    own: &[String],
    now_ms: u64,
    emit: &mut dyn FnMut(Event),
) -> io::Result<()> {
    let (max_bytes, max_files) = (config.max_bytes, u64::from(config.max_files));
    if max_bytes == 0 && max_files == 0 {
        return Ok(());
    }
    if max_bytes != 0 && adding_bytes > max_bytes {
        return Err(io::Error::other(format!(
            "the result needs {adding_bytes} bytes, more than the offload directory's cap of {max_bytes} (max_bytes)"
        )));
    }
    if max_files != 0 && u64::from(adding) > max_files {
        return Err(io::Error::other(format!(
            "the result needs {adding} files, more than the offload directory's cap of {max_files} (max_files)"
        )));
    }
    let base = config.dir_base();
    let ours = |name: &str| classify(&config.prefix, name);
    let mut listed =
        crate::sink::Dir::open(if base.is_empty() { "/" } else { base })?.regular_files(&ours, max_bytes != 0)?;
    listed.sort_by(|a, b| a.0.ulid().cmp(&b.0.ulid()).then_with(|| a.1.cmp(&b.1)));
    let mut count = listed.len() as u64 + u64::from(adding);
    let mut total = listed.iter().map(|f| f.2).sum::<u64>().saturating_add(adding_bytes);
    let over = |count: u64, total: u64| {
        if max_files != 0 && count > max_files {
            Some("max-files")
        } else if max_bytes != 0 && total > max_bytes {
            Some("max-bytes")
        } else {
            None
        }
    };
    let ttl_ms = config.ttl_seconds.saturating_mul(1000);
    let mut next_expiry: Option<u64> = None;
    for (kind, name, size) in listed {
        let Some(cap) = over(count, total) else {
            return Ok(());
        };
        if own.contains(&name) {
            continue;
        }
        let path = format!("{base}/{name}");
        let (_, expires) = lifetime(&path, &kind, ttl_ms, None);
        if expires > now_ms {
            next_expiry = Some(next_expiry.map_or(expires, |n| n.min(expires)));
            continue;
        }
        match fs::remove_file(&path) {
            Ok(()) => emit(Event::OffloadFileEvicted {
                path,
                bytes: size,
                cap: cap.to_owned(),
            }),
            // Another process swept or evicted it since we listed it.
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io::Error::new(e.kind(), format!("making room: deleting {path}: {e}"))),
        }
        count -= 1;
        total = total.saturating_sub(size);
    }
    let Some(cap) = over(count, total) else {
        return Ok(());
    };
    let next = next_expiry.map_or_else(String::new, |t| {
        format!("; the first of them expires at {}", crate::time::format_rfc3339_ms(t))
    });
    Err(io::Error::other(if cap == "max-files" {
        format!(
            "the offload directory's cap of {max_files} files (max_files) is taken by files that have not expired or are being written{next}"
        )
    } else {
        format!(
            "the offload directory's cap of {max_bytes} bytes (max_bytes) is taken by files that have not expired or are being written{next}"
        )
    }))
}

/// Deletes every expired LRO file in `config.output_dir` (see [`lifetime`]): an offload file once
/// the expiry its writer recorded has passed, whatever this caller's ttl.
pub fn sweep(config: &Config, now_ms: u64, emit: &mut dyn FnMut(Event)) -> Result<SweepReport, Error> {
    config.validate()?;
    let base = config.dir_base();
    let dir = if base.is_empty() { "/" } else { base };
    let entries = fs::read_dir(dir).map_err(|e| Error::Io(format!("listing {dir}: {e}")))?;
    let mut ours = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            // Renamed or deleted by another writer since the listing began.
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::Io(format!("listing {dir}: {e}"))),
        };
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let Some(kind) = classify(&config.prefix, &name) else {
            continue;
        };
        // Only regular files: a symlink or directory wearing our name is not ours to delete.
        match entry.file_type() {
            Ok(t) if t.is_file() => ours.push((name, kind)),
            _ => {}
        }
    }
    ours.sort_by(|a, b| a.0.cmp(&b.0));

    let ttl_ms = config.ttl_seconds.saturating_mul(1000);
    let mut report = SweepReport::default();
    for (name, kind) in ours {
        let path = format!("{base}/{name}");
        let (created, expired) = lifetime(&path, &kind, ttl_ms, None);
        if expired > now_ms {
            if matches!(kind, Kind::Offload(_)) {
                report.kept += 1;
            }
            continue;
        }
        match fs::remove_file(&path) {
            Ok(()) => {
                emit(Event::OffloadFileExpired {
                    path: path.clone(),
                    created,
                    expired,
                });
                report.deleted.push(path);
            }
            // Deleted by someone else (another sweep) since we listed it: nothing left to do.
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => report.failed.push(SweepFailure {
                path,
                reason: e.to_string(),
            }),
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests;
