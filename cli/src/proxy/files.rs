//! Offloaded files as MCP resources, for clients without a shell or a tool loop: each file of
//! this session is listed as `lro://offload/{file}`, and the template
//! `lro://offload/{file}{?from,to}` reads any offloaded file, or records `from` (inclusive) to
//! `to` (exclusive) of it, counted from 0. A read runs in the sandboxed extractor, so the file
//! must be an unexpired LRO file directly in the offload directory, and the output is capped at
//! `threshold_tokens` like any extraction (the text then says how many records were shown).

use std::path::Path;
use std::sync::{Arc, Mutex};

use lro_host::ExtractRequest;
use serde_json::{Map, Value, json};

use super::Relay;
use super::edit::{self, Object};
use super::message;
use super::tools::error_text;

/// The URI prefix of offloaded files.
pub const SCHEME: &str = "lro://offload/";
const TEMPLATE: &str = "lro://offload/{file}{?from,to}";
const MIME: &str = "text/plain";

/// A file offloaded in this session.
pub struct Offloaded {
    path: String,
    tool: String,
    tokens: u32,
}

impl Offloaded {
    /// Records the files of one offloaded result.
    pub fn remember(list: &Mutex<Vec<Offloaded>>, tool: &str, paths: &[String], tokens: u32) {
        let mut list = list.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for path in paths {
            list.push(Offloaded {
                path: path.clone(),
                tool: tool.to_owned(),
                tokens,
            });
        }
    }
}

/// True when a `resources/read` names an offloaded file.
pub fn is_ours(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .is_some_and(|uri| uri.starts_with(SCHEME))
}

/// The resources of this session's files that still exist.
fn listed(files: &Arc<Mutex<Vec<Offloaded>>>) -> Vec<Value> {
    let mut files = files.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    files.retain(|f| Path::new(&f.path).is_file());
    files
        .iter()
        .filter_map(|f| {
            let name = Path::new(&f.path).file_name()?.to_str()?.to_owned();
            let size = std::fs::metadata(&f.path).map(|m| m.len()).unwrap_or(0);
            Some(json!({
                "uri": format!("{SCHEME}{name}"),
                "name": name,
                "title": format!("Offloaded result of {}", f.tool),
                "description": format!(
                    "The result of `{}` (about {} tokens), one JSON record per line, as the descriptor's file_path {} holds it. Read a range with ?from=N&to=M.",
                    f.tool, f.tokens, f.path
                ),
                "mimeType": MIME,
                "size": size,
            }))
        })
        .collect()
}

fn template() -> Value {
    json!({
        "uriTemplate": TEMPLATE,
        "name": "lro-offload",
        "title": "Offloaded result file",
        "description": "Records of a file the proxy offloaded (a descriptor's file_path: use its file name), from record `from` (inclusive, from 0) to `to` (exclusive); either may be left out. The output is capped like any extraction and says how many records it shows.",
        "mimeType": MIME,
    })
}

/// A `resources/list` or `resources/templates/list` page from the upstream with this session's
/// files (or the template) added to the last page (the one without `nextCursor`); the upstream's
/// own entries and members as they came.
pub fn add_to_list(relay: &Relay, result: &str, templates: bool) -> Option<String> {
    let mut page = Object::parse(result)?;
    if page.contains("nextCursor") {
        return None;
    }
    let key = if templates { "resourceTemplates" } else { "resources" };
    let added = if templates {
        vec![template()]
    } else {
        listed(&relay.files)
    };
    if added.is_empty() {
        return None;
    }
    let mut entries: Vec<String> = match page.get(key) {
        Some(entries) => edit::elements(entries)?.into_iter().map(str::to_owned).collect(),
        None => Vec::new(),
    };
    entries.extend(added.iter().map(Value::to_string));
    page.set(key, edit::array(&entries));
    Some(page.to_string())
}

/// The list for an upstream without resources: the proxy's own alone.
pub fn list_alone(relay: &Relay, id: String, templates: bool, modern: bool) {
    let mut page = Map::new();
    if templates {
        page.insert("resourceTemplates".into(), Value::Array(vec![template()]));
    } else {
        page.insert("resources".into(), Value::Array(listed(&relay.files)));
    }
    if modern {
        page.insert("resultType".into(), Value::String("complete".into()));
    }
    relay.to_client(message::response(&id, &Value::Object(page).to_string()));
}

/// The file name and record range in an `lro://offload/` URI. Strict, so a URI never means
/// something other than it says: numbers are plain digits (no sign), each parameter at most
/// once; an error names the URI cut to a readable length.
fn parse(uri: &str) -> Result<(String, Option<u64>, Option<u64>), String> {
    let shown = message::clip(uri, 200);
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
        let key_shown = message::clip(key, 40);
        let number = Some(value)
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| {
                format!(
                    "{shown}: {key_shown} must be a record number (digits, 0 or more), got {:?}",
                    message::clip(value, 40)
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

/// Answers a `resources/read` of an offloaded file.
pub fn read(relay: &Relay, id: String, params: Option<&Value>, modern: bool) {
    let uri = params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let not_found = if modern {
        message::INVALID_PARAMS
    } else {
        message::RESOURCE_NOT_FOUND
    };
    let (name, from, to) = match parse(&uri) {
        Ok(parsed) => parsed,
        Err(reason) => return relay.to_client(message::error_response(&id, message::INVALID_PARAMS, &reason)),
    };
    let settings = relay.settings.clone();
    let down = relay.down.clone();
    relay.component(move || {
        let path = Path::new(&settings.config.output_dir).join(&name);
        // Numbers only (checked above) go into the filter, so nothing can be injected.
        let (query, slurp) = match (from, to) {
            (None, None) => (".".to_owned(), false),
            (from, to) => (
                format!(
                    ".[{}:{}][]",
                    from.map(|n| n.to_string()).unwrap_or_default(),
                    to.map(|n| n.to_string()).unwrap_or_default()
                ),
                true,
            ),
        };
        let request = ExtractRequest {
            path: path.to_string_lossy().into_owned(),
            recipe: None,
            query: Some(query),
            params: None,
            slurp,
            limit: None,
        };
        let answer = match settings.runtime.extract(&settings.config, &request) {
            Ok(extracted) => {
                let mut result = Map::new();
                result.insert(
                    "contents".into(),
                    json!([{"uri": uri, "mimeType": MIME, "text": extracted.text}]),
                );
                if modern {
                    result.insert("resultType".into(), Value::String("complete".into()));
                }
                message::response(&id, &Value::Object(result).to_string())
            }
            Err(e) => {
                let code = if matches!(e.kind(), "not-found" | "expired" | "outside-directory" | "not-lro-file") {
                    not_found
                } else {
                    message::INTERNAL_ERROR
                };
                let text = format!("{}: {}", message::clip(&uri, 200), error_text(&e));
                message::error_response(&id, code, &text)
            }
        };
        let _ = down.blocking_send(answer.into());
    });
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
