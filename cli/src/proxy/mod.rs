//! `lro proxy`: LRO in front of any MCP server (spec: "Local LRO proxy for remote servers" and
//! "Native extraction via MCP tools").
//!
//! The proxy is a relay of JSON-RPC messages, not a second MCP client and server: what it does
//! not change crosses as the bytes that arrived, so the client and the server negotiate their
//! own protocol version (2026-07-28 discovery or the older `initialize`), and progress,
//! cancellation, sampling, elicitation, roots, logging, subscriptions and list-changed
//! notifications work as over a direct connection. It steps in at five places:
//!
//! - `initialize`: the client's capabilities gain `experimental.lro.proxy` (and `clientInfo`
//!   gains `proxy`), so an LRO-aware server sends full results; the server's answer gains the
//!   `tools` and `resources` capabilities the proxy adds to (`tools`).
//! - `tools/list`: every page goes through the component's `rewrite_tools`; the last one gains
//!   `lro_extract` (`tools`).
//! - `tools/call`: `lro_extract` runs here in the sandboxed extractor; every other call's
//!   complete result goes through the component's `intercept` (`tools`).
//! - `resources/*`: offloaded files are readable as `lro://offload/...` resources (`files`).
//! - the end: when the upstream dies, every request in flight fails at once, naming why.
//!
//! `upstream` and `http` turn a child process or a streamable HTTP endpoint into the same pair
//! of channels; `message` reads the few fields the relay routes on.

mod bridge;
mod files;
pub mod http;
pub mod message;
mod tools;
pub mod upstream;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use message::{Kind, id_key};
use upstream::{Link, UpEvent};

/// How a proxy session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// The client closed its side: a normal end.
    ClientClosed,
    /// The upstream died (a child process exited); every request in flight was failed.
    UpstreamDied(String),
    /// The proxy cannot serve this upstream (it already has a tool named `lro_extract`).
    Refused(String),
}

/// What the proxy needs besides its two connections: the component, the configuration
/// (`extract_tool` on, `output_dir` canonical, so resource paths match the descriptors') and
/// `lro_extract`'s definition, shared with every other MCP integration.
pub use lro_host::mcp::Offloader as Settings;

/// A client request the relay waits on the answer to.
enum Pending {
    /// Its answer goes through unchanged (stamped for a bridged client); the method.
    Plain(String),
    /// `initialize`: the answer's capabilities gain `tools` and `resources`.
    Initialize,
    /// `server/discover` (2026-07-28): likewise; the request's `_meta`, to bridge to an
    /// upstream that knows only `initialize`.
    Discover(Option<Value>),
    /// The proxy's own `initialize` of an upstream that knows only that handshake, for the
    /// 2026-07-28 client whose `server/discover` (this id, and the upstream's refusal) it answers.
    Bridge { client_id: String, refusal: Vec<u8> },
    /// `tools/list`: rewritten; `modern` when the request was 2026-07-28.
    ToolsList { modern: bool },
    /// `tools/call` of an upstream tool: intercepted.
    ToolsCall(tools::Call),
    /// `resources/list` and `resources/templates/list`: the offloaded files are added.
    Resources { templates: bool, modern: bool },
    /// The proxy's own check of the upstream's tools (for a tool named `lro_extract`).
    ToolCheck,
}

/// The client's session as the relay knows it.
#[derive(Default)]
struct Session {
    /// The client's `initialize` params (JSON text): the `meta` the component reads for
    /// protocols before 2026-07-28.
    initialize_params: Option<String>,
    /// A 2026-07-28 client in front of an upstream that knows only `initialize`: the proxy
    /// did the handshake and stamps what the client's version requires on every result.
    bridged: bool,
    /// A bridged client's open `subscriptions/listen` (its id) and the list-changed
    /// notifications it accepted.
    listen: Option<(String, Vec<String>)>,
}

/// Serves one client on `down_in`/`down_out` in front of `link` until either side ends.
pub async fn serve<R, W>(settings: Settings, link: Link, down_in: R, down_out: W) -> Ending
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let Link {
        send: up,
        events: mut up_events,
        finished,
    } = link;
    let (down, mut to_client) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        let mut out = down_out;
        while let Some(mut message) = to_client.recv().await {
            message.push(b'\n');
            if out.write_all(&message).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    let (from_client_tx, mut from_client) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        let mut reader = BufReader::new(down_in);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = line.trim_ascii();
                    if !text.is_empty() && from_client_tx.send(text.to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let (fatal_tx, mut fatal) = mpsc::unbounded_channel::<String>();
    let sweeper = tokio::spawn(sweep_periodically(settings.clone()));

    let mut relay = Relay {
        settings,
        down,
        up,
        fatal: fatal_tx,
        pending: HashMap::new(),
        session: Session::default(),
        files: Arc::new(Mutex::new(Vec::new())),
        own_ids: 0,
    };
    let ending = loop {
        tokio::select! {
            line = from_client.recv() => match line {
                Some(line) => relay.on_client(line),
                None => break Ending::ClientClosed,
            },
            event = up_events.recv() => match event {
                Some(UpEvent::Message(line)) => relay.on_upstream(line),
                Some(UpEvent::Failed { id, reason }) => relay.fail(&id, &reason),
                Some(UpEvent::Died(reason)) => {
                    relay.fail_all(&reason);
                    break Ending::UpstreamDied(reason);
                }
                None => {
                    let reason = "the upstream connection closed".to_owned();
                    relay.fail_all(&reason);
                    break Ending::UpstreamDied(reason);
                }
            },
            Some(message) = fatal.recv() => break Ending::Refused(message),
        }
    };
    sweeper.abort();
    // Closing the upstream's input asks it to exit; the writer drains what is queued for the
    // client (answers still being intercepted hold their own sender and finish first).
    let Relay { down, up, .. } = relay;
    drop(up);
    drop(down);
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    let _ = tokio::time::timeout(Duration::from_secs(3), finished).await;
    ending
}

/// Sweeps expired files every `ttl/2` (at least once a second, at most once an hour), so
/// files die on time while the proxy runs for days.
async fn sweep_periodically(settings: Settings) {
    let mut ticks = tokio::time::interval(settings.sweep_interval());
    ticks.tick().await; // the first tick is now; `Settings::prepare` already swept
    loop {
        ticks.tick().await;
        let settings = settings.clone();
        let swept = tokio::task::spawn_blocking(move || settings.sweep()).await;
        if let Ok(Err(e)) = swept {
            eprintln!("lro proxy: sweeping expired files: {e}");
        }
    }
}

struct Relay {
    settings: Settings,
    down: mpsc::UnboundedSender<Vec<u8>>,
    up: mpsc::UnboundedSender<Vec<u8>>,
    fatal: mpsc::UnboundedSender<String>,
    pending: HashMap<String, Pending>,
    session: Session,
    files: Arc<Mutex<Vec<files::Offloaded>>>,
    own_ids: u64,
}

impl Relay {
    fn to_client(&self, message: Vec<u8>) {
        let _ = self.down.send(message);
    }

    fn to_upstream(&self, message: Vec<u8>) {
        let _ = self.up.send(message);
    }

    fn on_client(&mut self, line: Vec<u8>) {
        let (id, method, params) = match message::classify(&line) {
            Ok(Kind::Request { id, method, params }) => (id_key(id), method, params.map(|p| p.get().to_owned())),
            Ok(Kind::Notification { method, params }) => {
                if method == "notifications/cancelled"
                    && let Some(id) = params.and_then(|p| cancelled_id(p.get()))
                {
                    self.pending.remove(&id);
                    if self.session.listen.as_ref().is_some_and(|(listen, _)| *listen == id) {
                        self.session.listen = None;
                        return;
                    }
                }
                let initialized = method == "notifications/initialized";
                self.to_upstream(line);
                if initialized {
                    self.check_tools(None);
                }
                return;
            }
            // Responses to the server's requests (sampling, elicitation, roots), batches, and
            // anything else the relay does not route.
            Ok(_) | Err(_) => return self.to_upstream(line),
        };
        let parsed: Option<Value> = params.as_deref().and_then(|p| serde_json::from_str(p).ok());
        let modern = message::is_modern(parsed.as_ref());
        let line = if self.session.bridged && modern {
            bridge::unmark(&line, parsed.as_ref()).unwrap_or(line)
        } else {
            line
        };
        match method.as_str() {
            "initialize" => {
                self.session.initialize_params = params.clone();
                self.pending.insert(id, Pending::Initialize);
                let marked = parsed.and_then(|mut p| {
                    let object = p.as_object_mut()?;
                    message::mark_proxy(message::object_at(object, "capabilities"));
                    message::object_at(object, "clientInfo").insert("proxy".into(), Value::Bool(true));
                    message::with_params(&line, &p)
                });
                self.to_upstream(marked.unwrap_or(line));
            }
            "server/discover" => {
                let meta = parsed.as_ref().and_then(|p| p.get("_meta")).cloned();
                self.pending.insert(id, Pending::Discover(meta));
                self.to_upstream(line);
            }
            "tools/list" => {
                self.pending.insert(id, Pending::ToolsList { modern });
                self.to_upstream(line);
            }
            "tools/call" => match tools::Call::from_params(parsed.as_ref(), modern, &self.session) {
                Some(call) if call.tool == tools::EXTRACT_TOOL => tools::extract(self, id, call),
                Some(call) => {
                    // A bridged server's `initialize` carried the marker.
                    let marked = (!self.session.bridged)
                        .then(|| call.marked_line(&line, parsed.as_ref()))
                        .flatten();
                    self.pending.insert(id, Pending::ToolsCall(call));
                    self.to_upstream(marked.unwrap_or(line));
                }
                None => {
                    self.pending.insert(id, Pending::Plain(method));
                    self.to_upstream(line);
                }
            },
            "resources/list" | "resources/templates/list" => {
                let templates = method == "resources/templates/list";
                self.pending.insert(id, Pending::Resources { templates, modern });
                self.to_upstream(line);
            }
            "resources/read" if files::is_ours(parsed.as_ref()) => files::read(self, id, parsed.as_ref(), modern),
            "subscriptions/listen" if self.session.bridged => bridge::listen(self, id, parsed.as_ref()),
            _ => {
                self.pending.insert(id, Pending::Plain(method));
                self.to_upstream(line);
            }
        }
    }

    fn on_upstream(&mut self, line: Vec<u8>) {
        let Ok(Kind::Response { id, result }) = message::classify(&line) else {
            // The server's own requests and notifications reach the client untouched (for a
            // bridged client, list changes go on its listen stream).
            if self.session.bridged {
                match message::classify(&line) {
                    Ok(Kind::Notification { method, .. }) => return bridge::notify(self, &method, line),
                    // A 2026-07-28 client takes no requests from servers (it asks for input
                    // through results instead); the server hears so at once, not never.
                    Ok(Kind::Request { id, method, .. }) => {
                        let text = format!(
                            "lro proxy: the client speaks 2026-07-28, which has no server-to-client {method} request"
                        );
                        return self.to_upstream(message::error_response(&id_key(id), -32601, &text));
                    }
                    _ => {}
                }
            }
            return self.to_client(line);
        };
        let key = id_key(id);
        let Some(pending) = self.pending.remove(&key) else {
            return self.to_client(line);
        };
        if self.session.bridged
            && let Some(result) = result
            && let Some(stamped) = bridge::stamp(result.get(), &pending)
        {
            let line = message::response(&key, &stamped);
            self.pending.insert(key, pending);
            return self.on_upstream(line);
        }
        let Some(result) = result else {
            // An error answer. A server without tools or resources says "method not found"
            // where the proxy still has `lro_extract` and the offloaded files to offer.
            return match pending {
                Pending::ToolsList { modern } if method_not_found(&line) => tools::list_alone(self, key, modern),
                Pending::Resources { templates, modern } if method_not_found(&line) => {
                    files::list_alone(self, key, templates, modern)
                }
                Pending::Discover(meta) if method_not_found(&line) => bridge::start(self, key, meta, line),
                Pending::Bridge { client_id, refusal } => {
                    eprintln!(
                        "lro proxy: the upstream refused initialize too: {}",
                        String::from_utf8_lossy(&line)
                    );
                    self.to_client(retarget(&refusal, &client_id));
                }
                Pending::ToolCheck => {}
                _ => self.to_client(line),
            };
        };
        let result = result.get();
        match pending {
            Pending::Plain(_) => self.to_client(line),
            Pending::Bridge { client_id, .. } => bridge::finish(self, &client_id, result),
            Pending::Initialize | Pending::Discover(_) => {
                let changed = with_capabilities(result).map(|r| message::response(&key, &r));
                self.to_client(changed.unwrap_or(line));
            }
            Pending::ToolsList { .. } => tools::list(self, key, result.to_owned()),
            Pending::ToolsCall(call) => tools::intercept(self, call, line),
            Pending::Resources { templates, .. } => {
                let added = files::add_to_list(self, result, templates).map(|r| message::response(&key, &r));
                self.to_client(added.unwrap_or(line));
            }
            Pending::ToolCheck => tools::check_page(self, result),
        }
    }

    /// Asks the upstream for its tools (from `cursor`), to refuse one named `lro_extract`
    /// before the client lists them.
    fn check_tools(&mut self, cursor: Option<String>) {
        self.own_ids += 1;
        let id = format!("lro-proxy-{}", self.own_ids);
        let params = match cursor {
            Some(cursor) => serde_json::json!({"cursor": cursor}),
            None => serde_json::json!({}),
        };
        self.pending.insert(format!("\"{id}\""), Pending::ToolCheck);
        self.to_upstream(message::request(&id, "tools/list", &params));
    }

    /// Fails one request the upstream cannot answer.
    fn fail(&mut self, id: &str, reason: &str) {
        let error = message::error_response(id, message::INTERNAL_ERROR, &format!("lro proxy: {reason}"));
        match self.pending.remove(id) {
            // A server of the older protocol over HTTP refuses `server/discover` with an HTTP
            // error (no session yet) rather than "method not found": bridge it all the same.
            Some(Pending::Discover(meta)) => bridge::start(self, id.to_owned(), meta, error),
            Some(Pending::ToolCheck) | None => {}
            Some(_) => self.to_client(error),
        }
    }

    /// Fails every request in flight: the upstream is gone.
    fn fail_all(&mut self, reason: &str) {
        let text = format!("lro proxy: {reason} before answering this request");
        for (id, pending) in std::mem::take(&mut self.pending) {
            if !matches!(pending, Pending::ToolCheck) {
                self.to_client(message::error_response(&id, message::INTERNAL_ERROR, &text));
            }
        }
    }
}

/// A response with its id replaced.
fn retarget(line: &[u8], id: &str) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<Value>(line) else {
        return line.to_vec();
    };
    if let Ok(id) = serde_json::from_str::<Value>(id) {
        value["id"] = id;
    }
    value.to_string().into_bytes()
}

/// The `requestId` of `notifications/cancelled` params, as an id key.
pub(super) fn cancelled_id(params: &str) -> Option<String> {
    let value: Value = serde_json::from_str(params).ok()?;
    Some(value.get("requestId")?.to_string())
}

fn method_not_found(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.get("error")?.get("code")?.as_i64())
        == Some(-32601)
}

/// An `initialize` or `server/discover` result with the capabilities the proxy adds: `tools`
/// (it lists `lro_extract`) and `resources` (the offloaded files), each only when the server
/// lacks it; everything the server declared is forwarded as declared.
fn with_capabilities(result: &str) -> Option<String> {
    let mut result: Map<String, Value> = serde_json::from_str(result).ok()?;
    let capabilities = message::object_at(&mut result, "capabilities");
    if capabilities.contains_key("tools") && capabilities.contains_key("resources") {
        return None;
    }
    capabilities.entry("tools").or_insert_with(|| Value::Object(Map::new()));
    capabilities
        .entry("resources")
        .or_insert_with(|| Value::Object(Map::new()));
    serde_json::to_string(&result).ok()
}
