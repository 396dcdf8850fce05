//! A 2026-07-28 client in front of a server that knows only the older `initialize` handshake
//! (every reference server today): the proxy answers the client's `server/discover` itself,
//! after doing the handshake with the server on the client's behalf, and from then on stamps
//! what the client's version requires on each result (`resultType`, and the cache hints of
//! list and read results), and serves `subscriptions/listen` with the server's list-changed
//! notifications. Requests go to the server as the client sent them: the older protocol
//! ignores the `_meta` keys it does not know.

use serde_json::{Map, Value, json};

use super::message::{self, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
use super::{Pending, Relay};

/// The version the proxy speaks to such a server.
const LEGACY_VERSION: &str = "2025-11-25";
/// The client's version the proxy answers for.
const MODERN_VERSION: &str = "2026-07-28";
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The listen filter's list-changed keys and the notifications they stand for.
const LIST_CHANGES: [(&str, &str); 3] = [
    ("toolsListChanged", "notifications/tools/list_changed"),
    ("promptsListChanged", "notifications/prompts/list_changed"),
    ("resourcesListChanged", "notifications/resources/list_changed"),
];

/// Opens a bridged client's `subscriptions/listen` stream: acknowledged at once with the
/// list changes it asked for (a server of the older protocol sends those freely; resource
/// subscriptions are not bridged), then left open until the client cancels it.
pub fn listen(relay: &mut Relay, id: String, params: Option<&Value>) {
    let asked = params.and_then(|p| p.get("notifications"));
    let mut accepted = Map::new();
    let mut methods = Vec::new();
    for (key, method) in LIST_CHANGES {
        if asked.and_then(|a| a.get(key)).and_then(Value::as_bool) == Some(true) {
            accepted.insert(key.into(), Value::Bool(true));
            methods.push(method.to_owned());
        }
    }
    let subscription: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
    let params = json!({"_meta": {META_SUBSCRIPTION_ID: subscription}, "notifications": accepted});
    relay.to_client(message::notification(
        "notifications/subscriptions/acknowledged",
        Some(&params),
    ));
    relay.session.listen = Some((id, methods));
}

/// A notification from the server to a bridged client: list changes go on its listen stream
/// (or nowhere, as the client did not ask for them); everything else as it came.
pub fn notify(relay: &Relay, method: &str, line: Vec<u8>) {
    if !LIST_CHANGES.iter().any(|(_, m)| *m == method) {
        return relay.to_client(line);
    }
    let Some((id, methods)) = &relay.session.listen else {
        return;
    };
    if !methods.iter().any(|m| m == method) {
        return;
    }
    let subscription: Value = serde_json::from_str(id).unwrap_or(Value::Null);
    let params = json!({"_meta": {META_SUBSCRIPTION_ID: subscription}});
    relay.to_client(message::notification(method, Some(&params)));
}

/// The upstream refused `server/discover` (`refusal`): initialise it with the client's
/// capabilities and name from the discover request's `_meta`.
pub fn start(relay: &mut Relay, client_id: String, meta: Option<Value>, refusal: Vec<u8>) {
    let meta = meta.unwrap_or_default();
    let mut capabilities = meta
        .get(META_CLIENT_CAPABILITIES)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    message::mark_proxy(&mut capabilities);
    let mut client_info = meta
        .get(META_CLIENT_INFO)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_else(|| {
            json!({"name": "lro-proxy", "version": env!("CARGO_PKG_VERSION")})
                .as_object()
                .cloned()
                .unwrap_or_default()
        });
    client_info.insert("proxy".into(), Value::Bool(true));
    let params = json!({"protocolVersion": LEGACY_VERSION, "capabilities": capabilities, "clientInfo": client_info});
    let (id, key) = relay.own_ids.take();
    relay.pending.insert(key, Pending::Bridge { client_id, refusal });
    relay.to_upstream(message::request(&id, "initialize", &params));
}

/// The upstream's `initialize` result: finish its handshake and answer the client's
/// `server/discover` with the same server, as 2026-07-28 describes it.
pub fn finish(relay: &mut Relay, client_id: &str, result: &str) {
    let result: Map<String, Value> = message::parse(result).unwrap_or_default();
    relay.to_upstream(message::notification("notifications/initialized", None));
    relay.session.bridged = true;
    let mut discover = Map::new();
    discover.insert("resultType".into(), json!("complete"));
    discover.insert("supportedVersions".into(), json!([MODERN_VERSION]));
    let mut capabilities = result
        .get("capabilities")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    capabilities.entry("tools").or_insert_with(|| json!({}));
    capabilities.entry("resources").or_insert_with(|| json!({}));
    discover.insert("capabilities".into(), Value::Object(capabilities));
    if let Some(instructions) = result.get("instructions") {
        discover.insert("instructions".into(), instructions.clone());
    }
    discover.insert("ttlMs".into(), json!(0));
    discover.insert("cacheScope".into(), json!("private"));
    if let Some(info) = result.get("serverInfo") {
        discover.insert("_meta".into(), json!({ META_SERVER_INFO: info }));
    }
    relay.to_client(message::response(client_id, &Value::Object(discover).to_string()));
    relay.check_tools(None);
}

/// The result with what a 2026-07-28 client requires added, or `None` when it has it.
pub fn stamp(result: &str, pending: &Pending) -> Option<String> {
    let mut result: Map<String, Value> = message::parse(result).ok()?;
    let mut changed = false;
    if !result.contains_key("resultType") {
        result.insert("resultType".into(), json!("complete"));
        changed = true;
    }
    let cacheable = match pending {
        Pending::Plain(method) => matches!(method.as_str(), "prompts/list" | "resources/read"),
        Pending::ToolsList { .. } | Pending::Resources { .. } => true,
        _ => false,
    };
    if cacheable && result.get("resultType").and_then(Value::as_str) == Some("complete") {
        for (key, value) in [("ttlMs", json!(0)), ("cacheScope", json!("private"))] {
            if !result.contains_key(key) {
                result.insert(key.into(), value);
                changed = true;
            }
        }
    }
    changed.then(|| Value::Object(result).to_string())
}

/// A bridged client's request without the 2026-07-28 per-request protocol metadata
/// (`protocolVersion`, `clientInfo`, `clientCapabilities` in `_meta`): the server holds an
/// `initialize` session, whose version the metadata contradicts, and a server that checks
/// (rmcp's HTTP transport) refuses such a request. `None` when there is nothing to remove.
pub fn unmark(line: &[u8], params: Option<&Value>) -> Option<Vec<u8>> {
    let mut params = params?.clone();
    let meta = params.get_mut("_meta")?.as_object_mut()?;
    let before = meta.len();
    meta.retain(|key, _| ![META_PROTOCOL_VERSION, META_CLIENT_INFO, META_CLIENT_CAPABILITIES].contains(&key.as_str()));
    if meta.len() == before {
        return None;
    }
    if meta.is_empty() {
        params.as_object_mut()?.remove("_meta");
    }
    message::with_params(line, &params)
}
