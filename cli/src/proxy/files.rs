//! Offloaded files as MCP resources (`lro_host::mcp::resources` says what they are): the proxy
//! adds them to the upstream's lists and answers the reads of `lro://offload/` URIs.

use lro_host::mcp::Offloader;
use lro_host::mcp::resources::{self, ReadError, SessionFiles};
use rmcp::model::{ListResourceTemplatesResult, ListResourcesResult, Resource};
use serde::Serialize;
use serde_json::Value;

use super::Relay;
use super::edit::{self, Object};
use super::message::{self, ErrorCode};

/// True when a `resources/read` names an offloaded file.
pub fn is_ours(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .is_some_and(resources::is_offload_uri)
}

/// The offloaded files to list: with a store, every unexpired offload of the principal's, made
/// by any replica in any session (a store that cannot be listed gives this session's, and says
/// so on standard error); else this session's. It blocks on the store: run it in
/// [`Relay::component`].
fn listed(offloader: &Offloader, files: &SessionFiles) -> Vec<Resource> {
    match offloader.stored_resources() {
        Some(Ok(resources)) => resources,
        Some(Err(e)) => {
            eprintln!("lro proxy: listing the offloads kept in the store: {e}; listing this session's");
            files.resources()
        }
        None => files.resources(),
    }
}

fn json_text(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

/// `page` (a `resources/list` or `resources/templates/list` result from the upstream) with the
/// proxy's `added` entries on its last page (the one without `nextCursor`); the upstream's own
/// entries and members as they came. None: `page` goes on unchanged.
fn with_entries(page: &str, templates: bool, added: &[String]) -> Option<String> {
    let mut page = Object::parse(page)?;
    if page.contains("nextCursor") || added.is_empty() {
        return None;
    }
    let key = if templates { "resourceTemplates" } else { "resources" };
    let mut entries: Vec<String> = match page.get(key) {
        Some(entries) => edit::elements(entries)?.into_iter().map(str::to_owned).collect(),
        None => Vec::new(),
    };
    entries.extend_from_slice(added);
    page.set(key, edit::array(&entries));
    Some(page.to_string())
}

/// Answers a `resources/list` or `resources/templates/list` the upstream answered with `line`
/// (its `result`, `result`): the offloaded files (or the template) added to its last page.
pub fn add_to_list(relay: &Relay, key: String, line: Vec<u8>, result: &str, templates: bool) {
    if templates {
        let added = [json_text(&resources::template())];
        let page = with_entries(result, true, &added).map(|r| message::response(&key, &r));
        return relay.to_client(page.unwrap_or(line));
    }
    let (offloader, files, down, result) = (
        relay.offloader.clone(),
        relay.files.clone(),
        relay.down.clone(),
        result.to_owned(),
    );
    relay.component(move || {
        let added: Vec<String> = listed(&offloader, &files).iter().map(json_text).collect();
        let page = with_entries(&result, false, &added).map(|r| message::response(&key, &r));
        let _ = down.blocking_send(page.unwrap_or(line).into());
    });
}

/// The list for an upstream without resources: the proxy's own alone.
pub fn list_alone(relay: &Relay, id: String, templates: bool, modern: bool) {
    if templates {
        let page = ListResourceTemplatesResult::with_all_items(vec![resources::template()]);
        return relay.to_client(message::own_response(&id, &page, modern));
    }
    let (offloader, files, down) = (relay.offloader.clone(), relay.files.clone(), relay.down.clone());
    relay.component(move || {
        let page = ListResourcesResult::with_all_items(listed(&offloader, &files));
        let _ = down.blocking_send(message::own_response(&id, &page, modern).into());
    });
}

/// Answers a `resources/read` of an offloaded file, in the sandboxed extractor.
pub fn read(relay: &Relay, id: String, params: Option<&Value>, modern: bool) {
    let uri = params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let offloader = relay.offloader.clone();
    let down = relay.down.clone();
    relay.component(move || {
        let answer = match offloader.read_resource(&uri) {
            Ok(result) => message::own_response(&id, &result, modern),
            Err(ReadError::InvalidUri(text)) => message::error_response(&id, ErrorCode::INVALID_PARAMS, &text),
            // 2026-07-28 answers a missing resource with invalid params; older versions with -32002.
            Err(ReadError::NotFound(text)) if modern => message::error_response(&id, ErrorCode::INVALID_PARAMS, &text),
            Err(ReadError::NotFound(text)) => message::error_response(&id, ErrorCode::RESOURCE_NOT_FOUND, &text),
            Err(ReadError::Failed(text)) => message::error_response(&id, ErrorCode::INTERNAL_ERROR, &text),
        };
        let _ = down.blocking_send(answer.into());
    });
}
