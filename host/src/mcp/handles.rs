//! Handles: offloaded files named `lro://offload/NAME` instead of by their path, for clients
//! that cannot read the disk the files are on (`lro proxy --listen` serves remote clients).
//!
//! With [`Offloader::handles`] on, a descriptor's `file_path` (and every place its text names
//! the file: the recipes, the guidance) is the file's handle, `lro_extract` takes the handle in
//! `file_path`, and a handle whose time has passed is reported as expired, even once the sweep
//! has deleted the file: the file name's ULID records when it was written.
//!
//! A handle resolves only in the offloader's own directory. An integration that gives each
//! principal a directory of its own (the proxy does) thereby makes each principal's handles
//! its own: another principal's handle is a file that is not there, answered exactly as one
//! that never existed.

use std::path::Path;

use super::{ExtractAnswer, Offloader, now_ms};

/// The URI prefix of offloaded files as resources, and of their handles.
pub const SCHEME: &str = "lro://offload/";

/// Why a handle names no readable file: what `lro_extract` and a resource read answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// The file's lifetime has passed (it may still be on disk until the next sweep).
    Expired {
        /// The handle.
        handle: String,
        /// When it expired, milliseconds since the Unix epoch.
        at_ms: u64,
        /// The lifetime it had.
        ttl_seconds: u64,
    },
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::Expired {
                handle,
                at_ms,
                ttl_seconds,
            } => write!(
                f,
                "expired: the offload {handle} expired at {} (ttl_seconds {ttl_seconds}); call the tool again for a fresh result",
                lro_core::time::format_rfc3339_ms(*at_ms)
            ),
        }
    }
}

/// The handle of an offloaded file's path: `lro://offload/` and its file name.
pub fn handle_of(path: &str) -> Option<String> {
    let name = Path::new(path).file_name()?.to_str()?;
    Some(format!("{SCHEME}{name}"))
}

/// The file name a handle names, if it is one: no directory part, no leading dot, no query.
pub fn name_of(handle: &str) -> Option<&str> {
    let name = handle.strip_prefix(SCHEME)?;
    let valid = !name.is_empty() && !name.contains(['/', '\\', '?', '#']) && !name.starts_with('.');
    valid.then_some(name)
}

/// True when `name` is an offload file's name with `prefix`: `{prefix}-{tool}-{ULID}.jsonl`.
pub fn is_offload_name(prefix: &str, name: &str) -> bool {
    name.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('-'))
        && name_of(&format!("{SCHEME}{name}")).is_some()
        && written_ms(name).is_some()
}

/// When the file `name` was written, from the ULID that ends it (`{prefix}-{op}-{ULID}.jsonl`).
fn written_ms(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".jsonl")?;
    let ulid = stem.get(stem.len().checked_sub(26)?..)?;
    ulid::Ulid::from_string(ulid).ok().map(|u| u.timestamp_ms())
}

impl Offloader {
    /// `text` (a result's JSON text, or any answer) with each of `paths` replaced by its
    /// handle, when [`Offloader::handles`] is on; as it came otherwise. A path is letters,
    /// digits, `/`, `.`, `_` and `-` only (the component names its files so, in a canonical
    /// directory), so it reads the same at every level of JSON quoting and can be replaced as
    /// text.
    pub fn name_by_handles(&self, text: &str, paths: &[String]) -> String {
        if !self.handles {
            return text.to_owned();
        }
        let mut text = text.to_owned();
        for path in paths {
            if let Some(handle) = handle_of(path) {
                text = text.replace(path.as_str(), &handle);
            }
        }
        text
    }

    /// The file a handle names in this offloader's directory, or `Missing` when its time has
    /// passed; `None` when `handle` is not a handle.
    pub fn resolve(&self, handle: &str) -> Option<Result<String, Missing>> {
        let name = name_of(handle)?;
        let path = Path::new(&self.config.output_dir).join(name);
        if let Some(written) = written_ms(name) {
            let at_ms = written.saturating_add(self.config.ttl_seconds.saturating_mul(1000));
            if at_ms <= now_ms() {
                return Some(Err(Missing::Expired {
                    handle: handle.to_owned(),
                    at_ms,
                    ttl_seconds: self.config.ttl_seconds,
                }));
            }
        }
        Some(Ok(path.to_string_lossy().into_owned()))
    }

    /// `lro_extract`'s arguments with a handle in `file_path` replaced by the file's path, or
    /// the answer to give at once (an expired handle). Arguments that are not an object with a
    /// string `file_path` go on as they came: the component reports what is wrong with them.
    pub(super) fn resolve_arguments(&self, arguments: &str) -> Result<String, ExtractAnswer> {
        let Ok(serde_json::Value::Object(mut object)) = serde_json::from_str::<serde_json::Value>(arguments) else {
            return Ok(arguments.to_owned());
        };
        let Some(handle) = object.get("file_path").and_then(|p| p.as_str()).map(str::to_owned) else {
            return Ok(arguments.to_owned());
        };
        match self.resolve(&handle) {
            None => Ok(arguments.to_owned()),
            Some(Err(missing)) => Err(ExtractAnswer {
                text: missing.to_string(),
                is_error: true,
            }),
            Some(Ok(path)) => {
                object.insert("file_path".to_owned(), path.into());
                Ok(serde_json::Value::Object(object).to_string())
            }
        }
    }

    /// `text` (an answer of the component's) with paths of this offloader's directory written
    /// as handles, so that a remote client reads only names it can use.
    pub(super) fn paths_as_handles(&self, text: &str) -> String {
        let directory = self.config.output_dir.trim_end_matches('/');
        text.replace(&format!("{directory}/"), SCHEME)
            .replace(directory, SCHEME.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::{name_of, written_ms};

    #[test]
    fn a_handle_names_one_file_of_the_directory_and_nothing_else() {
        assert_eq!(
            name_of("lro://offload/atlatl-x-01JDEF7X2K0000000000000000.jsonl"),
            Some("atlatl-x-01JDEF7X2K0000000000000000.jsonl")
        );
        for wrong in [
            "lro://offload/",
            "lro://offload/../x.jsonl",
            "lro://offload/a/b.jsonl",
            "lro://offload/.hidden",
            "lro://offload/a.jsonl?from=1",
            "/tmp/a.jsonl",
        ] {
            assert_eq!(name_of(wrong), None, "{wrong}");
        }
    }

    #[test]
    fn the_write_time_comes_from_the_ulid_at_the_end_of_the_name() {
        let ulid = ulid::Ulid::from_parts(1_700_000_000_123, 42);
        assert_eq!(
            written_ms(&format!("atlatl-search-{ulid}.jsonl")),
            Some(1_700_000_000_123)
        );
        assert_eq!(written_ms("atlatl-search-short.jsonl"), None);
        assert_eq!(written_ms("notes.txt"), None);
        assert!(super::is_offload_name("atlatl", &format!("atlatl-search-{ulid}.jsonl")));
        for other in [
            format!("other-search-{ulid}.jsonl"),
            format!(".atlatl-search-{ulid}.jsonl"),
            "atlatl-x.jsonl".to_owned(),
        ] {
            assert!(!super::is_offload_name("atlatl", &other), "{other}");
        }
    }
}
