//! JSON-RPC messages as the proxy sees them: the few fields it routes on, read without copying,
//! and the responses it writes itself. Messages it does not change are forwarded as the bytes
//! that arrived, so a client and a server see each other exactly as over a direct connection.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::edit::{self, Object};

/// `_meta` key that carries the protocol version on every 2026-07-28 request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key that carries the client's capabilities on every 2026-07-28 request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The error codes the proxy answers with, as rmcp names them (the 2026-07-28 versions answer a
/// missing resource with `INVALID_PARAMS`, older ones with `RESOURCE_NOT_FOUND`).
pub use rmcp::model::ErrorCode;

/// The member a 2026-07-28 result carries and an older one does not, and its value for a
/// complete result: the one place the proxy writes it, in results it makes (`own_response`)
/// and in those it completes for a bridged client (`bridge::additions`).
pub const RESULT_TYPE: &str = "resultType";
/// See [`RESULT_TYPE`].
pub const COMPLETE: &str = "complete";
/// [`COMPLETE`] as JSON text, for the bridge's edits of relayed results.
pub const COMPLETE_JSON: &str = "\"complete\"";

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

/// The key a request id is tracked by: its value in one canonical spelling, so `1` and `"1"`
/// stay apart while `"\u0062ig"` and `"big"`, or `-0`, `0` and `0.0`, are one id (a server that
/// re-spells an id still answers the request it names, as every JSON parser reads it). An
/// integer too large for 64 bits keeps its own spelling, which a parsed value would round.
pub fn id_key(id: &RawValue) -> String {
    let text = id.get().trim();
    match serde_json::from_str::<Value>(text) {
        Ok(value) => canonical_id(&value, text).unwrap_or_else(|| text.to_owned()),
        Err(_) => text.to_owned(),
    }
}

/// The canonical spelling of an id value, read from `text`; `None` for what JSON-RPC ids cannot
/// be (objects, arrays, booleans, null).
fn canonical_id(value: &Value, text: &str) -> Option<String> {
    match value {
        Value::String(_) => Some(value.to_string()),
        Value::Number(n) => Some(match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            // Integral floats (`-0`, `1.0`, `1e2`) are the integer every client's parser reads.
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => (f as i64).to_string(),
            _ if text.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()) => text.to_owned(),
            _ => n.to_string(),
        }),
        _ => None,
    }
}

/// The id of a line that is not a well-formed message (invalid UTF-8, a duplicate key), read as
/// leniently as a forgiving parser would: so a request whose answer arrives broken still gets
/// exactly one answer.
pub fn lenient_id(line: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(line);
    // A map, not a struct: a repeated key is read as the last one, as a forgiving parser does.
    let members: HashMap<String, Box<RawValue>> = serde_json::from_str(&text).ok()?;
    let id = members.get("id")?;
    let value: Value = serde_json::from_str(id.get()).ok()?;
    canonical_id(&value, id.get())
}

/// The `requestId` of `notifications/cancelled` params, as an id key.
pub fn cancelled_id(params: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Cancelled<'a> {
        #[serde(borrow, rename = "requestId")]
        request_id: &'a RawValue,
    }
    let cancelled: Cancelled<'_> = serde_json::from_str(params).ok()?;
    let value: Value = serde_json::from_str(cancelled.request_id.get()).ok()?;
    canonical_id(&value, cancelled.request_id.get())
}

/// Ids for the proxy's own requests to the upstream: a random part per session, so no client
/// id can name one of them (a client that sends `"lro-proxy-1"` gets its own answer).
pub struct OwnIds {
    prefix: String,
    next: u64,
}

impl Default for OwnIds {
    fn default() -> Self {
        OwnIds {
            prefix: format!("lro-proxy-{}", ulid::Ulid::generate()),
            next: 0,
        }
    }
}

impl OwnIds {
    /// The next id: its text (for the request) and its key (for the pending table).
    pub fn take(&mut self) -> (String, String) {
        self.next += 1;
        let id = format!("{}-{}", self.prefix, self.next);
        let key = Value::String(id.clone()).to_string();
        (id, key)
    }
}

/// A success response with `result`, one line.
pub fn response(id: &str, result: &str) -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}").into_bytes()
}

/// A success response with a result the proxy made itself (an `rmcp::model` result): a
/// 2026-07-28 request's carries `resultType: "complete"`, an older one's no `resultType`.
pub fn own_response(id: &str, result: &impl serde::Serialize, modern: bool) -> Vec<u8> {
    let mut result = serde_json::to_value(result).unwrap_or_else(|_| Value::Object(Default::default()));
    if let Value::Object(members) = &mut result {
        members.remove(RESULT_TYPE);
        if modern {
            members.insert(RESULT_TYPE.to_owned(), Value::String(COMPLETE.to_owned()));
        }
    }
    response(id, &result.to_string())
}

/// An error response, one line.
pub fn error_response(id: &str, code: ErrorCode, message: &str) -> Vec<u8> {
    let error = rmcp::model::ErrorData::new(code, message.to_owned(), None);
    let error = serde_json::to_string(&error).unwrap_or_default();
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}").into_bytes()
}

/// A request the proxy sends on its own behalf, one line; `params` is JSON text.
pub fn request(id: &str, method: &str, params: &str) -> Vec<u8> {
    let (id, method) = (edit::quoted(id), edit::quoted(method));
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":{method},\"params\":{params}}}").into_bytes()
}

/// A notification, one line; `params` is JSON text.
pub fn notification(method: &str, params: Option<&str>) -> Vec<u8> {
    let method = edit::quoted(method);
    match params {
        Some(params) => format!("{{\"jsonrpc\":\"2.0\",\"method\":{method},\"params\":{params}}}"),
        None => format!("{{\"jsonrpc\":\"2.0\",\"method\":{method}}}"),
    }
    .into_bytes()
}

/// The same message with `params` (JSON text) in place of its own; every other member as it
/// came.
pub fn with_params(line: &[u8], params: &str) -> Option<Vec<u8>> {
    let mut message = Object::parse(std::str::from_utf8(line).ok()?)?;
    message.set("params", params);
    Some(message.to_string().into_bytes())
}

/// The same response with `result` replaced (its text already JSON).
pub fn with_result(id: &RawValue, result: &str) -> Vec<u8> {
    response(&id_key(id), result)
}

/// Client capabilities (JSON text) marked as an LRO proxy's (`experimental.lro.proxy`, the
/// spec's marker that survives every SDK), so an LRO-aware server sends full results; `None`
/// when they are not an object.
pub fn mark_proxy(capabilities: &str) -> Option<String> {
    edit::set_at(capabilities, &["experimental", "lro"], "proxy", "true")
}

/// True when a request's params carry the 2026-07-28 `_meta` protocol version.
pub fn is_modern(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .is_some()
}

/// How deep the JSON the proxy reads itself (requests' params, list pages) may nest: four times
/// serde_json's default, within a 2 MiB thread stack in a debug build (about 2 KiB a level).
/// Results are not parsed here: the component reads them, to its own depth.
pub const MAX_DEPTH: usize = 512;

/// Parses JSON text that may nest up to [`MAX_DEPTH`] levels (serde_json alone stops at 128,
/// and a tool's arguments or schema may go deeper); deeper text is refused before parsing, so
/// the parse cannot exhaust the stack.
pub fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let depth = lro_core::json_text::depth(text.as_bytes(), MAX_DEPTH);
    if depth > MAX_DEPTH {
        return Err(format!("it nests deeper than {MAX_DEPTH} levels ({depth})"));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    let value = T::deserialize(&mut deserializer).map_err(|e| e.to_string())?;
    deserializer.end().map_err(|e| e.to_string())?;
    Ok(value)
}

pub use lro_host::mcp::clip;

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> String {
        id_key(&RawValue::from_string(text.to_owned()).unwrap())
    }

    #[test]
    fn the_stamps_json_text_is_its_value_quoted() {
        assert_eq!(COMPLETE_JSON, edit::quoted(COMPLETE));
    }

    #[test]
    fn an_id_is_one_key_however_it_is_spelt() {
        assert_eq!(key(r#""\u0062ig""#), key(r#""big""#));
        assert_eq!(key("-0"), key("0"));
        assert_eq!(key("1.0"), key("1"));
        assert_eq!(key("1e2"), key("100"));
        assert_ne!(key("1"), key(r#""1""#));
        assert_ne!(key("1.5"), key("1"));
        let huge = "-123456789012345678901234567890";
        assert_eq!(key(huge), huge, "not rounded to 1.2345678901234568e29");
        assert_eq!(
            cancelled_id(&format!("{{\"requestId\":{huge}}}")),
            Some(huge.to_owned())
        );
        assert_eq!(
            lenient_id(format!("{{\"id\":{huge},\"id\":{huge}}}").as_bytes()),
            Some(huge.to_owned())
        );
    }

    #[test]
    fn own_ids_are_unguessable_and_distinct() {
        let (mut a, mut b) = (OwnIds::default(), OwnIds::default());
        let (first, first_key) = a.take();
        assert_ne!(first, b.take().0, "two sessions share no id");
        assert_ne!(first, a.take().0);
        assert_ne!(first, "lro-proxy-1");
        assert_eq!(first_key, key(&format!("\"{first}\"")));
    }

    #[test]
    fn json_nests_to_the_documented_depth_and_no_deeper() {
        let nested = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert!(parse::<Value>(&nested(MAX_DEPTH)).is_ok());
        let error = parse::<Value>(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert!(error.contains("deeper than 512 levels"), "{error}");
        assert!(
            parse::<Value>(&format!("[\"{}\"]", "[".repeat(5000))).is_ok(),
            "brackets in strings"
        );
        let deep_object = format!("{}{}", "{\"a\":".repeat(500), "}".repeat(500));
        assert!(parse::<Value>(&deep_object.replacen("}", "1}", 1)).is_ok());
    }

    #[test]
    fn a_broken_line_still_names_its_id() {
        assert_eq!(
            lenient_id(b"{\"id\":\"big\",\"result\":1,\"result\":2}"),
            Some(key(r#""big""#))
        );
        assert_eq!(lenient_id(b"{\"id\":7,\"result\":{\"t\":\"\xff\"}}"), Some(key("7")));
        assert_eq!(lenient_id(b"not json"), None);
    }
}
