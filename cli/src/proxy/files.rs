//! Offloaded files as MCP resources (`lro_host::mcp::resources` says what they are): the proxy
//! adds them to the upstream's lists and answers the reads of `lro://offload/` URIs.

use lro_host::mcp::resources::{self, ReadError};
use rmcp::model::{ListResourceTemplatesResult, ListResourcesResult};
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

/// This session's files, or the template, as JSON texts of list entries.
fn entries(relay: &Relay, templates: bool) -> Vec<String> {
    if templates {
        vec![json_text(&resources::template())]
    } else {
        relay.files.resources().iter().map(json_text).collect()
    }
}

fn json_text(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
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
    let added = entries(relay, templates);
    if added.is_empty() {
        return None;
    }
    let mut entries: Vec<String> = match page.get(key) {
        Some(entries) => edit::elements(entries)?.into_iter().map(str::to_owned).collect(),
        None => Vec::new(),
    };
    entries.extend(added);
    page.set(key, edit::array(&entries));
    Some(page.to_string())
}

/// The list for an upstream without resources: the proxy's own alone.
pub fn list_alone(relay: &Relay, id: String, templates: bool, modern: bool) {
    relay.to_client(if templates {
        let page = ListResourceTemplatesResult::with_all_items(vec![resources::template()]);
        message::own_response(&id, &page, modern)
    } else {
        let page = ListResourcesResult::with_all_items(relay.files.resources());
        message::own_response(&id, &page, modern)
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
