//! The custodian: deletes offloaded files whose time to live has passed.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, ErrorKind, Read};

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

/// Deletes every expired LRO file in `config.dir`: `created + ttl <= now`.
pub fn sweep(config: &Config, now_ms: u64, emit: &mut dyn FnMut(Event)) -> Result<SweepReport, Error> {
    config.validate()?;
    let base = config.dir_base();
    let dir = if base.is_empty() { "/" } else { base };
    let entries = fs::read_dir(dir).map_err(|e| Error::Io(format!("listing {dir}: {e}")))?;
    let mut ours = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::Io(format!("listing {dir}: {e}")))?;
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

    let ttl_ms = config.ttl.saturating_mul(1000);
    let mut report = SweepReport::default();
    for (name, kind) in ours {
        let path = format!("{base}/{name}");
        let created = match &kind {
            Kind::Offload(ulid) => header_timestamp(&path).unwrap_or_else(|| ulid.timestamp_ms()),
            Kind::Temporary(ulid) => ulid.timestamp_ms(),
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
