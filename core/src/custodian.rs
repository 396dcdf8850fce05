//! The custodian (the WIT `custodian` interface): [`sweep`] deletes offloaded files whose time to
//! live has passed. It also keeps the offload directory within its storage caps before a write
//! (`make_room`), and says which directory entries are ours and when they were created, for
//! the extractor's expiry check.

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

/// The created time recorded in a file's header line, if it can be read.
fn header_timestamp(path: &str) -> Option<u64> {
    let file = File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(MAX_HEADER_BYTES))
        .read_until(b'\n', &mut line)
        .ok()?;
    let header: Value = serde_json::from_slice(line.strip_suffix(b"\n")?).ok()?;
    if header.get("type")?.as_str()? != "lro_header" {
        return None;
    }
    parse_rfc3339_ms(header.get("timestamp")?.as_str()?)
}

/// When a file was created: its header's timestamp (when `header` has one), unless the header
/// is dated after both its ULID's time and its modification time (by more than a minute of
/// clock skew): then the earlier of those two. A header written with a timestamp far in the
/// future cannot keep a file from ever being swept.
pub(crate) fn created_ms(path: &str, ulid: Ulid, header: Option<u64>) -> u64 {
    const SKEW_MS: u64 = 60_000;
    let modified = fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let ulid_ms = ulid.timestamp_ms();
    let dated = modified.map_or(ulid_ms, |m| m.min(ulid_ms));
    let latest = modified.map_or(ulid_ms, |m| m.max(ulid_ms));
    match header {
        Some(stamp) if stamp <= latest.saturating_add(SKEW_MS) => stamp,
        _ => dated,
    }
}

/// The regular LRO files (not temporaries) in `dir`, oldest first by ULID, with their sizes
/// when `sizes` (0 otherwise: finding a size costs a call per file).
fn offload_files(config: &Config, dir: &str, sizes: bool) -> io::Result<Vec<(Ulid, String, u64)>> {
    let ulid_of_ours = |name: &str| match classify(&config.prefix, name) {
        Some(Kind::Offload(ulid)) => Some(ulid),
        _ => None,
    };
    let mut files = crate::sink::Dir::open(dir)?.regular_files(&ulid_of_ours, sizes)?;
    files.sort();
    Ok(files)
}

/// Makes room for `files` new files of `bytes` in all under `config.max_files` and
/// `config.max_bytes`, deleting the oldest LRO files first (`OffloadFileEvicted`). Fails, having
/// deleted nothing, when the new files alone exceed a cap.
pub(crate) fn make_room(config: &Config, files: u32, bytes: u64, emit: &mut dyn FnMut(Event)) -> io::Result<()> {
    let (max_bytes, max_files) = (config.max_bytes, u64::from(config.max_files));
    if max_bytes == 0 && max_files == 0 {
        return Ok(());
    }
    if max_bytes != 0 && bytes > max_bytes {
        return Err(io::Error::other(format!(
            "the result needs {bytes} bytes, more than the offload directory's cap of {max_bytes} (max_bytes)"
        )));
    }
    if max_files != 0 && u64::from(files) > max_files {
        return Err(io::Error::other(format!(
            "the result needs {files} files, more than the offload directory's cap of {max_files} (max_files)"
        )));
    }
    let base = config.dir_base();
    let existing = offload_files(config, if base.is_empty() { "/" } else { base }, max_bytes != 0)?;
    let mut count = existing.len() as u64;
    let mut total: u64 = existing.iter().map(|f| f.2).sum();
    for (_, name, size) in existing {
        let over_files = max_files != 0 && count + u64::from(files) > max_files;
        let over_bytes = max_bytes != 0 && total.saturating_add(bytes) > max_bytes;
        if !over_files && !over_bytes {
            break;
        }
        let path = format!("{base}/{name}");
        match fs::remove_file(&path) {
            Ok(()) => emit(Event::OffloadFileEvicted {
                path,
                bytes: size,
                cap: if over_files { "max-files" } else { "max-bytes" }.to_owned(),
            }),
            // Another process swept or evicted it since we listed it.
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io::Error::new(e.kind(), format!("making room: deleting {path}: {e}"))),
        }
        count -= 1;
        total = total.saturating_sub(size);
    }
    Ok(())
}

/// Deletes every expired LRO file in `config.output_dir`: `created + ttl_seconds <= now`.
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
        let created = match &kind {
            Kind::Offload(ulid) => created_ms(&path, *ulid, header_timestamp(&path)),
            Kind::Temporary(ulid) => created_ms(&path, *ulid, None),
        };
        let expired = created.saturating_add(ttl_ms);
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
mod tests {
    use super::*;

    const ULID: &str = "01JDEF7X2K0000000000000000";

    #[test]
    fn recognises_only_our_names() {
        let ulid = Ulid::from_string(ULID).unwrap();
        assert_eq!(
            classify("atlatl", &format!("atlatl-recall-{ULID}.jsonl")),
            Some(Kind::Offload(ulid))
        );
        assert_eq!(
            classify("atlatl", &format!("atlatl-my-tool_2-{ULID}.jsonl")),
            Some(Kind::Offload(ulid))
        );
        assert_eq!(
            classify("atlatl", &format!(".atlatl-recall-{ULID}.jsonl.tmp")),
            Some(Kind::Temporary(ulid))
        );
        for other in [
            format!("lro-recall-{ULID}.jsonl"),
            format!("atlatl-recall-{ULID}.json"),
            format!("atlatl-{ULID}.jsonl"),
            format!("atlatl-Recall-{ULID}.jsonl"),
            "atlatl-recall-notaulid.jsonl".to_owned(),
            "atlatl-recall-01JDEF7X2K000000000000000U.jsonl".to_owned(),
            format!("atlatlx-recall-{ULID}.jsonl"),
            "notes.txt".to_owned(),
        ] {
            assert_eq!(classify("atlatl", &other), None, "{other}");
        }
    }
}
