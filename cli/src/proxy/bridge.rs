//! A 2026-07-28 client in front of a server that knows only the older `initialize` handshake
//! (every reference server today): the proxy answers the client's `server/discover` itself,
//! after doing the handshake with the server on the client's behalf, and from then on stamps
//! what the client's version requires on each result (`resultType`, and the cache hints of
//! list and read results), and serves `subscriptions/listen` with the server's list-changed
//! notifications. Requests go to the server as the client sent them: the older protocol
//! ignores the `_meta` keys it does not know.

use serde_json::{Value, json};

use super::edit::{self, Object};
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
    let mut accepted = Object::default();
    let mut methods = Vec::new();
    for (key, method) in LIST_CHANGES {
        if asked.and_then(|a| a.get(key)).and_then(Value::as_bool) == Some(true) {
            accepted.set(key, "true");
            methods.push(method.to_owned());
        }
    }
    let params = format!("{{\"_meta\":{},\"notifications\":{accepted}}}", subscription_meta(&id));
    relay.to_client(message::notification(
        "notifications/subscriptions/acknowledged",
        Some(&params),
    ));
    relay.session.listen = Some((id, methods));
}

/// The `_meta` that ties a notification to the listen request `id` (an id key, JSON text).
fn subscription_meta(id: &str) -> String {
    format!("{{{}:{id}}}", edit::quoted(META_SUBSCRIPTION_ID))
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
    let params = format!("{{\"_meta\":{}}}", subscription_meta(id));
    relay.to_client(message::notification(method, Some(&params)));
}

/// The upstream refused `server/discover` (`refusal`): initialise it with the client's
/// capabilities and name from the discover request's `_meta` (JSON text), as the client sent
/// them but for the proxy's marker.
pub fn start(relay: &mut Relay, client_id: String, meta: Option<String>, refusal: Vec<u8>) {
    let meta = meta.as_deref().and_then(Object::parse).unwrap_or_default();
    let capabilities = meta
        .get(META_CLIENT_CAPABILITIES)
        .and_then(message::mark_proxy)
        .or_else(|| message::mark_proxy("{}"))
        .unwrap_or_default();
    let default_info = json!({"name": "lro-proxy", "version": env!("CARGO_PKG_VERSION")}).to_string();
    let client_info = meta
        .get(META_CLIENT_INFO)
        .and_then(|info| edit::set_at(info, &[], "proxy", "true"))
        .or_else(|| edit::set_at(&default_info, &[], "proxy", "true"))
        .unwrap_or_default();
    let mut params = Object::default();
    params.set("protocolVersion", edit::quoted(LEGACY_VERSION));
    params.set("capabilities", capabilities);
    params.set("clientInfo", client_info);
    let (id, key) = relay.own_ids.take();
    relay.pending.insert(key, Pending::Bridge { client_id, refusal });
    relay.to_upstream(message::request(&id, "initialize", &params.to_string()));
}

/// The upstream's `initialize` result: finish its handshake and answer the client's
/// `server/discover` with the same server, as 2026-07-28 describes it (what the server declared
/// as it came).
pub fn finish(relay: &mut Relay, client_id: &str, result: &str) {
    let result = Object::parse(result).unwrap_or_default();
    relay.to_upstream(message::notification("notifications/initialized", None));
    relay.session.bridged = true;
    let mut discover = Object::default();
    discover.set(message::RESULT_TYPE, message::COMPLETE_JSON);
    discover.set("supportedVersions", format!("[{}]", edit::quoted(MODERN_VERSION)));
    let declared = result.get("capabilities").filter(|c| Object::parse(c).is_some());
    let capabilities = super::add_capabilities(declared).unwrap_or_else(|| declared.unwrap_or("{}").to_owned());
    discover.set("capabilities", capabilities);
    if let Some(instructions) = result.get("instructions") {
        discover.set("instructions", instructions);
    }
    discover.set("ttlMs", "0");
    discover.set("cacheScope", "\"private\"");
    if let Some(info) = result.get("serverInfo") {
        discover.set("_meta", format!("{{{}:{info}}}", edit::quoted(META_SERVER_INFO)));
    }
    relay.to_client(message::response(client_id, &discover.to_string()));
    relay.check_tools(None);
}

/// The result with what a 2026-07-28 client requires added, or `None` when it has it. Every
/// member the server sent is kept as it came.
pub fn stamp(result: &str, pending: &Pending) -> Option<String> {
    let mut result = Object::parse(result)?;
    let added = additions(&result, pending);
    for (key, value) in &added {
        result.set_default(key, *value);
    }
    (!added.is_empty()).then(|| result.to_string())
}

/// What a 2026-07-28 client requires of `result` that it lacks, as member texts: `resultType`,
/// and the cache hints of list and read results.
pub fn additions(result: &Object<'_>, pending: &Pending) -> Vec<(&'static str, &'static str)> {
    let mut added = Vec::new();
    if result.get(message::RESULT_TYPE).is_none() {
        added.push((message::RESULT_TYPE, message::COMPLETE_JSON));
    }
    let cacheable = match pending {
        Pending::Plain(method) => matches!(method.as_str(), "prompts/list" | "resources/read"),
        Pending::ToolsList { .. } | Pending::Resources { .. } => true,
        _ => false,
    };
    if cacheable
        && result
            .get_str(message::RESULT_TYPE)
            .is_none_or(|t| t == message::COMPLETE)
    {
        for (key, value) in [("ttlMs", "0"), ("cacheScope", "\"private\"")] {
            if result.get(key).is_none() {
                added.push((key, value));
            }
        }
    }
    added
}

/// A bridged client's request without the 2026-07-28 per-request protocol metadata
/// (`protocolVersion`, `clientInfo`, `clientCapabilities` in `_meta`): the server holds an
/// `initialize` session, whose version the metadata contradicts, and a server that checks
/// (rmcp's HTTP transport) refuses such a request. `params` is the request's, JSON text; the
/// rest is kept as sent. `None` when there is nothing to remove.
pub fn unmark(line: &[u8], params: Option<&str>) -> Option<Vec<u8>> {
    let mut params = Object::parse(params?)?;
    let mut meta = Object::parse(params.get("_meta")?)?;
    let mut removed = false;
    for key in [META_PROTOCOL_VERSION, META_CLIENT_INFO, META_CLIENT_CAPABILITIES] {
        removed |= meta.remove(key);
    }
    if !removed {
        return None;
    }
    if meta.is_empty() {
        params.remove("_meta");
    } else {
        params.set("_meta", meta.to_string());
    }
    message::with_params(line, &params.to_string())
}
