//! Offloaded files as MCP resources, for clients without a shell or a tool loop: each file of a
//! session is listed as `lro://offload/{file}`, and the template `lro://offload/{file}{?from,to}`
//! reads any offloaded file, or records `from` (inclusive) to `to` (exclusive) of it, counted
//! from 0. A read runs in the sandboxed extractor, so the file must be an unexpired LRO file
//! directly in the offload directory, and the output is capped at `threshold_tokens` like any
//! extraction (the text then says how many records were shown).
//!
//! `lro proxy` and [`crate::rmcp::WithLro`] both serve them from here, as `rmcp::model` types.

use std::path::Path;
use std::sync::Mutex;

use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};

use super::{Offloader, clip, error_text};
use crate::ExtractRequest;

/// The URI prefix of offloaded files (their handles' too).
pub use super::handles::SCHEME;
/// The template that reads any offloaded file, or a range of its records.
pub const TEMPLATE: &str = "lro://offload/{file}{?from,to}";
const MIME: &str = "text/plain";

/// True when `uri` names an offloaded file (a read of it is the integration's, not the server's).
pub fn is_offload_uri(uri: &str) -> bool {
    uri.starts_with(SCHEME)
}

struct Offloaded {
    path: String,
    tool: String,
    tokens: u32,
}

/// The files offloaded in one session, listed by `resources/list` while they exist.
#[derive(Default)]
pub struct SessionFiles {
    files: Mutex<Vec<Offloaded>>,
    /// Descriptions name each file by its handle, not its path ([`Offloader::handles`]).
    handles: bool,
}

impl SessionFiles {
    /// No files yet; with `handles`, the listing names files as [`Offloader::handles`] does.
    pub fn new(handles: bool) -> Self {
        SessionFiles {
            files: Mutex::default(),
            handles,
        }
    }

    /// Records the files of one offloaded result of `tool`, about `tokens` tokens.
    pub fn remember(&self, tool: &str, paths: &[String], tokens: u32) {
        let mut list = self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for path in paths {
            list.push(Offloaded {
                path: path.clone(),
                tool: tool.to_owned(),
                tokens,
            });
        }
    }

    /// The resources of this session's files that still exist (an expired file was swept).
    pub fn resources(&self) -> Vec<Resource> {
        let mut files = self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        files.retain(|f| Path::new(&f.path).is_file());
        files
            .iter()
            .filter_map(|f| {
                let name = Path::new(&f.path).file_name()?.to_str()?.to_owned();
                let shown = if self.handles {
                    format!("{SCHEME}{name}")
                } else {
                    f.path.clone()
                };
                let size = std::fs::metadata(&f.path).map_or(0, |m| m.len());
                Some(resource(
                    name,
                    &f.tool,
                    &format!(" (about {} tokens)", f.tokens),
                    &shown,
                    size,
                ))
            })
            .collect()
    }
}

/// An offloaded file as `resources/list` lists it.
fn resource(name: String, tool: &str, tokens: &str, shown: &str, size: u64) -> Resource {
    Resource::new(format!("{SCHEME}{name}"), name)
        .with_title(format!("Offloaded result of {tool}"))
        .with_description(format!(
            "The result of `{tool}`{tokens}, one JSON record per line, as the descriptor's file_path {shown} holds it. Read a range with ?from=N&to=M."
        ))
        .with_mime_type(MIME)
        .with_size(size)
}

#[cfg(feature = "store")]
impl Offloader {
    /// With a store, every unexpired offload of this offloader's part of it (made by any
    /// replica, in any session), as `resources/list` lists it; None without a store. It
    /// blocks on the store: call it where a component call is made.
    pub fn stored_resources(&self) -> Option<Result<Vec<Resource>, String>> {
        let stored = self.store.as_ref()?;
        let listed = match stored.store.list(&stored.scope) {
            Ok(listed) => listed,
            Err(e) => return Some(Err(e.to_string())),
        };
        let resources = listed
            .into_iter()
            // Only offload files, by their names (an object another writer put in the bucket
            // is not listed), and only those unexpired.
            .filter(|(name, _, _)| super::handles::is_offload_name(&self.config.prefix, name))
            .filter(|(name, _, _)| matches!(self.resolve(&format!("{SCHEME}{name}")), Some(Ok(_))))
            .map(|(name, size, _)| {
                // `{prefix}-{tool}-{ULID}.jsonl`: the tool as the file name records it.
                let tool = name
                    .strip_prefix(&format!("{}-", self.config.prefix))
                    .and_then(|rest| rest.get(..rest.len().checked_sub(33)?))
                    .unwrap_or("a tool")
                    .to_owned();
                let shown = format!("{SCHEME}{name}");
                resource(name, &tool, "", &shown, size)
            })
            .collect();
        Some(Ok(resources))
    }
}

/// `lro://offload/{file}{?from,to}` as `resources/templates/list` lists it.
pub fn template() -> ResourceTemplate {
    ResourceTemplate::new(TEMPLATE, "lro-offload")
        .with_title("Offloaded result file")
        .with_description("Records of an offloaded file (a descriptor's file_path: use its file name), from record `from` (inclusive, from 0) to `to` (exclusive); either may be left out. The output is capped like any extraction and says how many records it shows.")
        .with_mime_type(MIME)
}

/// Why a `resources/read` of an offloaded file has no contents. Each integration answers it
/// with its protocol's error code: invalid params, resource not found, internal error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The URI is not a well-formed `lro://offload/` URI.
    #[error("{0}")]
    InvalidUri(String),
    /// No such unexpired LRO file in the offload directory.
    #[error("{0}")]
    NotFound(String),
    /// The file exists, but reading it failed.
    #[error("{0}")]
    Failed(String),
}

impl Offloader {
    /// Reads the offloaded file (or the records) an `lro://offload/` URI names, in the
    /// sandboxed extractor. It calls the component: see the module documentation of
    /// [`crate::mcp`].
    pub fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ReadError> {
        let (name, from, to) = parse(uri).map_err(ReadError::InvalidUri)?;
        if self.handles
            && let Some(Err(missing)) = self.resolve(&format!("{SCHEME}{name}"))
        {
            return Err(ReadError::NotFound(missing.to_string()));
        }
        #[cfg(feature = "store")]
        if let Err(answer) = self.fetch(&name) {
            return Err(ReadError::Failed(answer.text));
        }
        let path = Path::new(&self.config.output_dir).join(&name);
        // Numbers only (checked by `parse`) go into the filter, so nothing can be injected.
        let (query, slurp) = match (from, to) {
            (None, None) => (".".to_owned(), false),
            (from, to) => {
                let bound = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_default();
                (format!(".[{}:{}][]", bound(from), bound(to)), true)
            }
        };
        let request = ExtractRequest {
            path: path.to_string_lossy().into_owned(),
            recipe: None,
            query: Some(query),
            params: None,
            slurp,
            limit: None,
        };
        match self.runtime.extract(&self.config, &request) {
            Ok(extracted) => Ok(ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(MIME.to_owned()),
                text: extracted.text,
                meta: None,
            }])),
            Err(e) => {
                let mut text = format!("{}: {}", clip(uri, 200), error_text(&e));
                if self.handles {
                    text = self.paths_as_handles(&text);
                }
                if e.kind().is_no_such_file() {
                    Err(ReadError::NotFound(text))
                } else {
                    Err(ReadError::Failed(text))
                }
            }
        }
    }
}

/// The file name and record range in an `lro://offload/` URI. Strict, so a URI never means
/// something other than it says: numbers are plain digits (no sign), each parameter at most
/// once; an error names the URI cut to a readable length.
fn parse(uri: &str) -> Result<(String, Option<u64>, Option<u64>), String> {
    let shown = clip(uri, 200);
    let rest = uri
        .strip_prefix(SCHEME)
        .ok_or_else(|| format!("{shown} is not an lro://offload/ URI"))?;
    let (name, query) = rest.split_once('?').unwrap_or((rest, ""));
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(format!(
            "{shown}: expected lro://offload/FILE, the file name of a descriptor's file_path"
        ));
    }
    let (mut from, mut to) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key_shown = clip(key, 40);
        let number = Some(value)
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| {
                format!(
                    "{shown}: {key_shown} must be a record number (digits, 0 or more), got {:?}",
                    clip(value, 40)
                )
            })?;
        let slot = match key {
            "from" => &mut from,
            "to" => &mut to,
            _ => {
                return Err(format!(
                    "{shown}: unknown parameter {key_shown:?} (expected from and to)"
                ));
            }
        };
        if slot.replace(number).is_some() {
            return Err(format!("{shown}: {key} is given more than once"));
        }
    }
    Ok((name.to_owned(), from, to))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn uris_mean_exactly_what_they_say() {
        let name = "atlatl-search-01JDEF7X2K0000000000000000.jsonl";
        assert_eq!(
            parse(&format!("lro://offload/{name}?from=3&to=5")),
            Ok((name.to_owned(), Some(3), Some(5)))
        );
        for (query, wrong) in [
            ("from=+3", "must be a record number"),
            ("from=-1", "must be a record number"),
            ("from=", "must be a record number"),
            ("from= 3", "must be a record number"),
            ("from=1&from=2", "from is given more than once"),
            ("to=1&to=1", "to is given more than once"),
            ("upto=1", "unknown parameter"),
        ] {
            let error = parse(&format!("lro://offload/{name}?{query}")).unwrap_err();
            assert!(error.contains(wrong), "{query}: {error}");
        }
    }

    #[test]
    fn errors_do_not_echo_a_long_uri_whole() {
        let long = format!("lro://offload/{}", "a".repeat(250_000));
        let error = parse(&format!("{long}?from=x")).unwrap_err();
        assert!(error.len() < 400, "{} bytes", error.len());
        assert!(error.contains("250021 characters in all"), "{error}");
    }
}
