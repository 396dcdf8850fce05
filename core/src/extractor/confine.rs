//! Confinement: what an extraction may read. The path must name an LRO file directly inside the
//! offload directory (checked lexically before anything is read), the file must be a regular
//! file with a valid header, and it must not have expired.

use std::fs;
use std::io::ErrorKind;

use serde_json::Value;

use crate::custodian;
use crate::{Config, Detail, Error};

/// The path, made lexical-canonical, if it names a file directly in the offload directory with
/// our name pattern. Nothing is read before this check passes.
pub(super) fn confine(config: &Config, path: &str) -> Result<String, Error> {
    let shown = Shown(path);
    if !path.starts_with('/') {
        return Err(Error::OutsideDirectory(format!(
            "{shown:?} is relative; pass the absolute file_path from the descriptor"
        )));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let normal = format!("/{}", parts.join("/"));
    let dir = config.dir_base();
    let Some(name) = normal.strip_prefix(dir).and_then(|rest| rest.strip_prefix('/')) else {
        return Err(Error::OutsideDirectory(format!(
            "{shown} (the offload directory is {dir})"
        )));
    };
    if name.contains('/') {
        return Err(Error::OutsideDirectory(format!(
            "{shown} is in a subdirectory; offload files sit directly in {dir}"
        )));
    }
    if custodian::classify(&config.prefix, name).is_none_or(|kind| !kind.is_offload()) {
        return Err(Error::NotLroFile(format!(
            "{shown}: offload files are named {}-OPERATION-ULID.jsonl",
            config.prefix
        )));
    }
    Ok(normal)
}

/// The longest path an error shows whole: a longer one (no real path is; Linux's limit is 4,096
/// bytes) shows its start and its end, the file's name, around a note of what was cut.
const SHOWN_PATH: usize = 1024;

/// A path as error messages show it: whole up to [`SHOWN_PATH`] bytes, else its first 512 and last
/// 256 bytes around `[... N bytes cut ...]`. `{:?}` quotes the parts as Rust strings.
struct Shown<'a>(&'a str);

impl Shown<'_> {
    /// The start, the number of bytes cut and the end; None when the path is shown whole.
    fn parts(&self) -> Option<(&str, usize, &str)> {
        let path = self.0;
        if path.len() <= SHOWN_PATH {
            return None;
        }
        let head = path.floor_char_boundary(512);
        let tail = path.ceil_char_boundary(path.len() - 256);
        Some((&path[..head], tail - head, &path[tail..]))
    }
}

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.parts() {
            None => f.write_str(self.0),
            Some((head, cut, tail)) => write!(f, "{head}[... {cut} bytes cut ...]{tail}"),
        }
    }
}

impl std::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.parts() {
            None => write!(f, "{:?}", self.0),
            Some((head, cut, tail)) => write!(f, "{head:?}[... {cut} bytes cut ...]{tail:?}"),
        }
    }
}

/// Reads an offload file. Only a regular file is opened: a FIFO or device wearing an LRO name
/// would block the open (and a deadline cannot interrupt a blocking open), a directory cannot be
/// read. The check follows a symlink that stays inside the directory, as the read does.
pub(super) fn read(path: &str) -> Result<String, Error> {
    let meta = fs::metadata(path).map_err(|e| read_error(path, e))?;
    if !meta.is_file() {
        return Err(Error::NotLroFile(format!(
            "{path} is not a regular file (a directory, FIFO, socket or device); nothing was read"
        )));
    }
    let bytes = fs::read(path).map_err(|e| read_error(path, e))?;
    // Offload files are mostly ASCII, which is checked sixteen bytes a step (the standard
    // library's check runs a 32-bit word at a time in the component).
    if crate::json_text::is_ascii(&bytes) {
        // SAFETY: ASCII is valid UTF-8.
        #[allow(unsafe_code, reason = "skips a second check of bytes just found to be ASCII")]
        return Ok(unsafe { String::from_utf8_unchecked(bytes) });
    }
    String::from_utf8(bytes).map_err(|_| Error::NotLroFile(format!("{path}: not UTF-8 text")))
}

/// The error a failed read means for the model: missing, refused by the sandbox, or not text.
fn read_error(path: &str, e: std::io::Error) -> Error {
    match e.kind() {
        ErrorKind::NotFound => Error::NotFound(format!("{path} does not exist (it may have expired and been swept)")),
        // The sandbox answers a symlink (or any path) leading out of the directory this way.
        ErrorKind::PermissionDenied => {
            Error::OutsideDirectory(format!("{path} is a link leading out of it; the sandbox refused it"))
        }
        // WASI ENOTCAPABLE: the other way a capability refusal can come back.
        _ if e.raw_os_error() == Some(76) => {
            Error::OutsideDirectory(format!("{path} is a link leading out of it; the sandbox refused it"))
        }
        _ => Error::Io(format!("reading {path}: {e}")),
    }
}

/// The detail level the header names (None for a generic result), if the file is an LRO file
/// that has not expired at `now_ms`.
pub(super) fn check_header(config: &Config, path: &str, header: &str, now_ms: u64) -> Result<Option<Detail>, Error> {
    let not_lro = |why: &str| Error::NotLroFile(format!("{path}: {why}"));
    let header: Value = serde_json::from_str(header).map_err(|_| not_lro("its first line is not a JSON header"))?;
    if header.get("type").and_then(Value::as_str) != Some("lro_header") {
        return Err(not_lro("its first line has no \"type\": \"lro_header\""));
    }
    // Generic results (any tool's data) have no detail level, hence no numbered recipes.
    let detail = match header.get("detail").and_then(Value::as_str) {
        Some("generic") => None,
        Some(level) => Some(Detail::parse(level).ok_or_else(|| not_lro("its header names an unknown detail level"))?),
        None => return Err(not_lro("its header has no detail level")),
    };
    let stamps = custodian::Stamps::of(&header).ok_or_else(|| not_lro("its header has no RFC 3339 timestamp"))?;
    // The expiry the custodian goes by, so a file is never readable past the time a sweep
    // would delete it, nor refused before the time its writer promised.
    let name = path.rsplit('/').next().unwrap_or(path);
    let ttl_ms = config.ttl_seconds.saturating_mul(1000);
    let expired = match custodian::classify(&config.prefix, name) {
        Some(kind @ custodian::Kind::Offload(_)) => custodian::lifetime(path, &kind, ttl_ms, Some(stamps)).1,
        _ => stamps.timestamp.saturating_add(ttl_ms),
    };
    if expired <= now_ms {
        let why = match stamps.expires_at {
            Some(_) => "the expiry its writer recorded".to_owned(),
            None => format!("ttl {} s", config.ttl_seconds),
        };
        return Err(Error::Expired(format!(
            "{path} expired at {} ({why}); run the tool again for fresh results",
            crate::time::format_rfc3339_ms(expired),
        )));
    }
    Ok(detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confinement_is_lexical_first() {
        let cfg = Config {
            output_dir: "/srv/lro".into(),
            ..Config::default()
        };
        let ok = "01JDEF7X2K0000000000000000";
        assert_eq!(
            confine(&cfg, &format!("/srv/lro/./atlatl-recall-{ok}.jsonl")).unwrap(),
            format!("/srv/lro/atlatl-recall-{ok}.jsonl")
        );
        for (path, kind) in [
            ("/srv/lro/../etc/passwd", "outside"),
            ("/etc/passwd", "outside"),
            ("relative.jsonl", "outside"),
            (
                "/srv/lro-other/atlatl-recall-01JDEF7X2K0000000000000000.jsonl",
                "outside",
            ),
            ("/srv/lro/sub/atlatl-recall-01JDEF7X2K0000000000000000.jsonl", "outside"),
            ("/srv/lro/notes.txt", "not-lro"),
            (
                "/srv/lro/.atlatl-recall-01JDEF7X2K0000000000000000.jsonl.tmp",
                "not-lro",
            ),
        ] {
            let err = confine(&cfg, path).unwrap_err();
            let matches = match kind {
                "outside" => matches!(err, Error::OutsideDirectory(_)),
                _ => matches!(err, Error::NotLroFile(_)),
            };
            assert!(matches, "{path}: {err}");
        }
    }

    /// Extraction refuses a file as `expired` by the expiry its header records, not by the
    /// reader's ttl; a header without one goes by the reader's ttl.
    #[test]
    fn extraction_goes_by_the_recorded_expiry() {
        let t = 1_795_000_000_000;
        let ulid = ulid::Ulid::from_parts(t, 1);
        let path = format!("/nonexistent-lro/atlatl-recall-{ulid}.jsonl");
        let header = |expires_at: Option<u64>| {
            let mut h = serde_json::json!({"type": "lro_header", "timestamp": crate::time::format_rfc3339_ms(t), "detail": "light"});
            if let Some(at) = expires_at {
                h["expires_at"] = crate::time::format_rfc3339_ms(at).into();
            }
            h.to_string()
        };
        let short = Config {
            output_dir: "/nonexistent-lro".into(),
            ttl_seconds: 1,
            ..Config::default()
        };
        let long = Config {
            ttl_seconds: 86_400,
            ..short.clone()
        };
        let promised = header(Some(t + 3_600_000));
        assert_eq!(
            check_header(&short, &path, &promised, t + 3_599_999).unwrap(),
            Some(Detail::Light)
        );
        let err = check_header(&long, &path, &promised, t + 3_600_000).unwrap_err();
        assert!(matches!(err, Error::Expired(_)), "{err}");
        assert!(
            err.to_string()
                .contains("expired at 2026-11-18T12:06:40.000Z (the expiry its writer recorded)"),
            "{err}"
        );
        let unstated = header(None);
        assert!(check_header(&long, &path, &unstated, t + 3_600_000).is_ok());
        let err = check_header(&short, &path, &unstated, t + 1000).unwrap_err();
        assert!(err.to_string().contains("(ttl 1 s)"), "{err}");
    }
}
