//! JSON-RPC messages as the proxy sees them: the few fields it routes on, read without copying,
//! and the responses it writes itself. Messages it does not change are forwarded as the bytes
//! that arrived, so a client and a server see each other exactly as over a direct connection.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

/// `_meta` key that carries the protocol version on every 2026-07-28 request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key that carries the client's capabilities on every 2026-07-28 request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// JSON-RPC "internal error": what a request gets when the upstream is gone.
pub const INTERNAL_ERROR: i64 = -32603;
/// JSON-RPC "invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// MCP's "resource not found" before 2026-07-28 (later versions use invalid params).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// The routing fields of one message. `id` and `params` stay raw text.
#[derive(Deserialize)]
pub struct Head<'a> {
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
}

/// What one line holds.
pub enum Kind<'a> {
    /// A request: it has a method and an id.
    Request {
        id: &'a RawValue,
        method: String,
        params: Option<&'a RawValue>,
    },
    /// A notification: a method and no id.
    Notification {
        method: String,
        params: Option<&'a RawValue>,
    },
    /// A response: an id and a result or an error.
    Response {
        id: &'a RawValue,
        result: Option<&'a RawValue>,
    },
    /// A batch (JSON-RPC arrays, protocol 2025-03-26 only) or anything the proxy does not route:
    /// forwarded as it is.
    Other,
}

/// Reads what a line holds. `Err` names why it is not a JSON-RPC message.
pub fn classify(line: &[u8]) -> Result<Kind<'_>, String> {
    let first = line.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        return Ok(Kind::Other);
    }
    let head: Head<'_> = serde_json::from_slice(line).map_err(|e| format!("not a JSON-RPC message: {e}"))?;
    Ok(match (head.id, head.method) {
        (Some(id), Some(method)) => Kind::Request {
            id,
            method,
            params: head.params,
        },
        (None, Some(method)) => Kind::Notification {
            method,
            params: head.params,
        },
        (Some(id), None) if head.result.is_some() || head.error.is_some() => Kind::Response {
            id,
            result: head.result,
        },
        _ => Kind::Other,
    })
}

/// The key a request id is tracked by: its JSON text, so `1` and `"1"` stay apart.
pub fn id_key(id: &RawValue) -> String {
    id.get().trim().to_owned()
}

/// A success response with `result`, one line.
pub fn response(id: &str, result: &str) -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}").into_bytes()
}

/// An error response, one line.
pub fn error_response(id: &str, code: i64, message: &str) -> Vec<u8> {
    let error = json!({"code": code, "message": message});
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}").into_bytes()
}

/// A request the proxy sends on its own behalf, one line.
pub fn request(id: &str, method: &str, params: &Value) -> Vec<u8> {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    message.to_string().into_bytes()
}

/// A notification, one line.
pub fn notification(method: &str, params: Option<&Value>) -> Vec<u8> {
    let mut message = json!({"jsonrpc": "2.0", "method": method});
    if let Some(params) = params {
        message["params"] = params.clone();
    }
    message.to_string().into_bytes()
}

/// The same message with `params` replaced.
pub fn with_params(line: &[u8], params: &Value) -> Option<Vec<u8>> {
    let mut message: Map<String, Value> = serde_json::from_slice(line).ok()?;
    message.insert("params".into(), params.clone());
    serde_json::to_vec(&message).ok()
}

/// The same response with `result` replaced (its text already JSON).
pub fn with_result(id: &RawValue, result: &str) -> Vec<u8> {
    response(&id_key(id), result)
}

/// The object at `key` in `object`, created empty when absent or not an object.
pub fn object_at<'v>(object: &'v mut Map<String, Value>, key: &str) -> &'v mut Map<String, Value> {
    let slot = object
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(map) => map,
        _ => unreachable!("replaced by an object above"),
    }
}

/// Marks client capabilities as an LRO proxy's (`experimental.lro.proxy`, the spec's marker that
/// survives every SDK), so an LRO-aware server sends full results.
pub fn mark_proxy(capabilities: &mut Map<String, Value>) {
    object_at(object_at(capabilities, "experimental"), "lro").insert("proxy".into(), Value::Bool(true));
}

/// True when a request's params carry the 2026-07-28 `_meta` protocol version.
pub fn is_modern(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .is_some()
}
