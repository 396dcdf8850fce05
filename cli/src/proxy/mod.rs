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
//!   complete result goes through the component's `intercept` (`tools`), and so does the result
//!   of a task the call created, fetched later with `tasks/result` or `tasks/get` (`tasks`).
//! - `resources/*`: offloaded files are readable as `lro://offload/...` resources (`files`).
//! - the end: when the upstream dies, every request in flight fails at once, naming why.
//!
//! This file holds the relay's main flow: the session loop (`serve`) and the routing of
//! well-formed messages from either side (`Relay::on_client`, `Relay::on_upstream`). What keeps
//! it whole against broken or hostile input (batches, lines that are not messages, unknown and
//! duplicate ids, unreadable calls) and fails the requests that will not be answered (an
//! upstream that died, the grace period after the client closed its input) is `guard`.
//! `upstream` and `http` turn a child process or a streamable HTTP endpoint into the same pair
//! of channels; `message` reads the few fields the relay routes on; `edit` changes one member of
//! a message and keeps the others as the text that arrived.

mod bridge;
mod edit;
mod files;
mod guard;
pub mod http;
pub mod listen;
pub mod message;
pub mod spool;
mod spooled;
mod tasks;
mod tools;
pub mod upstream;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lro_host::mcp::Sweeper;
use lro_host::mcp::resources::SessionFiles;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use edit::Object;
use message::{ErrorCode, Kind, id_key};
use spool::Out;
use upstream::{Link, UpEvent};

/// How a proxy session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// The client closed its side and every request it had made was answered: a normal end.
    ClientClosed,
    /// The client closed its side and the upstream did not answer this many requests within
    /// the grace period; each got an error response.
    Abandoned(usize),
    /// The upstream died (a child process exited); every request in flight was failed.
    UpstreamDied(String),
    /// The proxy cannot serve this upstream (it already has a tool named `lro_extract`).
    Refused(String),
    /// The proxy was told to stop by this signal (SIGTERM, SIGINT or SIGHUP); its upstream
    /// child, if any, was stopped first.
    Signalled(i32),
}

/// What the proxy needs besides its two connections: the component, the configuration
/// (`extract_tool` on, `output_dir` canonical, so resource paths match the descriptors') and
/// `lro_extract`'s definition, shared with every other MCP integration.
pub use lro_host::mcp::Offloader;

pub use guard::DEFAULT_GRACE;

/// Free room a channel must have before the relay takes the next message that may write to it:
/// one message can make a few (a response and a list-changed notification).
const ROOM: usize = 8;
/// A client request the relay waits on the answer to.
enum Pending {
    /// Its answer goes through unchanged (stamped for a bridged client); the method.
    Plain(String),
    /// `initialize`: the answer's capabilities gain `tools` and `resources`.
    Initialize,
    /// `server/discover` (2026-07-28): likewise; the request's `_meta` (JSON text), to bridge to
    /// an upstream that knows only `initialize`.
    Discover(Option<String>),
    /// The proxy's own `initialize` of an upstream that knows only that handshake, for the
    /// 2026-07-28 client whose `server/discover` (this id, and the upstream's refusal) it answers.
    Bridge { client_id: String, refusal: Vec<u8> },
    /// `tools/list`: rewritten; `modern` when the request was 2026-07-28.
    ToolsList { modern: bool },
    /// `tools/call` of an upstream tool: intercepted; a task it creates is remembered.
    ToolsCall(tools::Call),
    /// `tasks/result` of a task a `tools/call` created (its id, and the call): intercepted as
    /// that call's result.
    TaskResult { task: String, call: tools::Call },
    /// `tasks/get` of such a task: a completed task's result inline (2026-07-28) is intercepted.
    TaskGet { task: String, call: tools::Call },
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

/// Serves one client on `down_in`/`down_out` in front of `link` until either side ends. When
/// the client closes its input, the answers to its requests still in flight are relayed for up
/// to `grace`.
pub async fn serve<R, W>(offloader: Offloader, link: Link, down_in: R, down_out: W, grace: Duration) -> Ending
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let Link {
        send: up,
        events: mut up_events,
        finished,
        stopper: _,
    } = link;
    let (down, mut to_client) = mpsc::channel::<Out>(upstream::CHANNEL);
    let writer = tokio::spawn(async move {
        let mut out = down_out;
        while let Some(message) = to_client.recv().await {
            let written = match message {
                Out::Line(mut line) => {
                    line.push(b'\n');
                    out.write_all(&line).await
                }
                Out::File { file, splices } => file.write_to(&mut out, &splices).await,
            };
            if written.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    let (from_client_tx, mut from_client) = mpsc::channel::<Vec<u8>>(upstream::CHANNEL);
    tokio::spawn(async move {
        let mut reader = BufReader::new(down_in);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let message = upstream::take_trimmed(&mut line);
                    if !message.is_empty() && from_client_tx.send(message).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let (fatal_tx, mut fatal) = mpsc::unbounded_channel::<String>();
    let sweeper = Sweeper::start(&offloader);
    let handles = offloader.handles;

    let mut relay = Relay {
        offloader,
        down,
        up,
        fatal: fatal_tx,
        pending: HashMap::new(),
        session: Session::default(),
        files: Arc::new(SessionFiles::new(handles)),
        tasks: tasks::Tasks::default(),
        own_ids: message::OwnIds::default(),
        calls: component_slots(),
    };
    // Clones to wait for room on while `relay` is borrowed by the branch that runs.
    let (down_room, up_room) = (relay.down.clone(), relay.up.clone());
    let mut client_open = true;
    let drain_until = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(drain_until);
    let ending = loop {
        if !client_open && relay.waiting() == 0 {
            break Ending::ClientClosed;
        }
        let room_down = down_room.capacity() >= ROOM;
        let room_up = up_room.capacity() >= ROOM;
        tokio::select! {
            line = from_client.recv(), if client_open && room_up => match line {
                Some(line) => relay.on_client(line),
                None => {
                    client_open = false;
                    drain_until.as_mut().reset(tokio::time::Instant::now() + grace);
                }
            },
            event = up_events.recv(), if room_down => match event {
                Some(UpEvent::Message(line)) => relay.on_upstream(line),
                Some(UpEvent::Spooled(spooled)) => relay.on_upstream_spooled(spooled),
                Some(UpEvent::Failed { id, reason }) => relay.fail(&id, &reason),
                Some(UpEvent::Died(reason)) => {
                    relay.fail_all(&format!("{reason} before answering this request"));
                    break Ending::UpstreamDied(reason);
                }
                None => {
                    let reason = "the upstream connection closed".to_owned();
                    relay.fail_all(&format!("{reason} before answering this request"));
                    break Ending::UpstreamDied(reason);
                }
            },
            Some(message) = fatal.recv() => break Ending::Refused(message),
            // The client is slow to read (or the upstream to take): wait for room rather than
            // queue without bound.
            _ = down_room.reserve_many(ROOM), if !room_down => {}
            _ = up_room.reserve_many(ROOM), if !room_up && client_open => {}
            () = &mut drain_until, if !client_open => break relay.abandon(grace),
        }
    };
    drop(sweeper);
    drop((down_room, up_room));
    // Closing the upstream's input asks it to exit; the writer drains what is queued for the
    // client (answers still being intercepted hold their own sender and finish first).
    let Relay { down, up, .. } = relay;
    drop(up);
    drop(down);
    let _ = tokio::time::timeout(grace.max(Duration::from_secs(5)), writer).await;
    let _ = tokio::time::timeout(Duration::from_secs(3), finished).await;
    ending
}

struct Relay {
    offloader: Offloader,
    down: mpsc::Sender<Out>,
    up: mpsc::Sender<Vec<u8>>,
    fatal: mpsc::UnboundedSender<String>,
    pending: HashMap<String, Pending>,
    session: Session,
    /// The files offloaded in this session, listed as resources.
    files: Arc<SessionFiles>,
    tasks: tasks::Tasks,
    own_ids: message::OwnIds,
    /// Component calls running at once (intercept, extract, list, read), [`component_slots`].
    calls: Arc<tokio::sync::Semaphore>,
}

/// The slots for component calls, one per core (at least two), shared by every relay of the
/// process: each call may use the component's whole memory limit, so many large calls at once,
/// from one client or from the many sessions of `--listen`, are done a few at a time instead
/// of exhausting the machine.
fn component_slots() -> Arc<tokio::sync::Semaphore> {
    static SLOTS: std::sync::OnceLock<Arc<tokio::sync::Semaphore>> = std::sync::OnceLock::new();
    SLOTS
        .get_or_init(|| {
            Arc::new(tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, |n| n.get().max(2)),
            ))
        })
        .clone()
}

/// Sends on a bounded channel without blocking the relay: the relay only takes a message when
/// the channel has [`ROOM`], so this overflows only where one message makes many (every request
/// failing at once), and those wait in a task of their own.
fn send_or_queue<T: Send + 'static>(channel: &mpsc::Sender<T>, message: T) {
    if let Err(mpsc::error::TrySendError::Full(message)) = channel.try_send(message) {
        let channel = channel.clone();
        tokio::spawn(async move {
            let _ = channel.send(message).await;
        });
    }
}

impl Relay {
    fn to_client(&self, message: impl Into<Out>) {
        send_or_queue(&self.down, message.into());
    }

    fn to_upstream(&self, message: Vec<u8>) {
        send_or_queue(&self.up, message);
    }

    /// Runs `call` (which calls the component) on a blocking thread, once a slot of `calls` is
    /// free.
    fn component<F>(&self, call: F)
    where
        F: FnOnce() + Send + 'static,
    {
        let calls = self.calls.clone();
        tokio::spawn(async move {
            let Ok(slot) = calls.acquire_owned().await else {
                return;
            };
            let _ = tokio::task::spawn_blocking(move || {
                call();
                drop(slot);
            })
            .await;
        });
    }

    /// How many of the client's requests still wait for the upstream's answer.
    fn waiting(&self) -> usize {
        self.pending
            .values()
            .filter(|p| !matches!(p, Pending::ToolCheck))
            .count()
    }

    fn on_client(&mut self, line: Vec<u8>) {
        let (id, method, params) = match message::classify(&line) {
            Ok(Kind::Request { id, method, params }) => (id_key(id), method, params.map(|p| p.get().to_owned())),
            Ok(Kind::Notification { method, params }) => {
                if method == "notifications/cancelled"
                    && let Some(id) = params.and_then(|p| message::cancelled_id(p.get()))
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
            // Answers to the server's requests (sampling, elicitation, roots).
            Ok(Kind::Response { .. }) => return self.to_upstream(line),
            Ok(Kind::Other) => return self.on_client_other(&line, None),
            Err(problem) => return self.on_client_other(&line, Some(problem)),
        };
        if self.refuse_id_in_use(&id) {
            return;
        }
        let parsed: Option<Value> = match params.as_deref().map(message::parse::<Value>) {
            Some(Ok(value)) => Some(value),
            Some(Err(problem)) if method == "tools/call" => return self.refuse_unreadable_call(&id, &problem),
            _ => None,
        };
        let modern = message::is_modern(parsed.as_ref());
        let line = if self.session.bridged && modern {
            bridge::unmark(&line, params.as_deref()).unwrap_or(line)
        } else {
            line
        };
        match method.as_str() {
            "initialize" => {
                self.session.initialize_params = params.clone();
                self.pending.insert(id, Pending::Initialize);
                let marked = params.as_deref().and_then(|p| {
                    let p = edit::set_at(p, &["capabilities", "experimental", "lro"], "proxy", "true")?;
                    let p = edit::set_at(&p, &["clientInfo"], "proxy", "true")?;
                    message::with_params(&line, &p)
                });
                self.to_upstream(marked.unwrap_or(line));
            }
            "server/discover" => {
                let meta = params
                    .as_deref()
                    .and_then(Object::parse)
                    .and_then(|p| Some(p.get("_meta")?.to_owned()));
                self.pending.insert(id, Pending::Discover(meta));
                self.to_upstream(line);
            }
            "tools/list" => {
                self.pending.insert(id, Pending::ToolsList { modern });
                self.to_upstream(line);
            }
            "tools/call" => match tools::Call::from_params(params.as_deref(), modern, &self.session) {
                Some(call) if call.tool == tools::EXTRACT_TOOL => tools::extract(self, id, call),
                Some(call) => {
                    // A bridged server's `initialize` carried the marker.
                    let marked = (!self.session.bridged)
                        .then(|| call.marked_line(&line, params.as_deref()))
                        .flatten();
                    self.pending.insert(id, Pending::ToolsCall(call));
                    self.to_upstream(marked.unwrap_or(line));
                }
                None => {
                    self.pending.insert(id, Pending::Plain(method));
                    self.to_upstream(line);
                }
            },
            "tasks/result" | "tasks/get" => {
                let task = params
                    .as_deref()
                    .and_then(Object::parse)
                    .and_then(|p| p.get_str("taskId"));
                let pending = match task.and_then(|task| Some((self.tasks.get(&task)?.clone(), task))) {
                    Some((call, task)) if method == "tasks/result" => Pending::TaskResult { task, call },
                    Some((call, task)) => Pending::TaskGet { task, call },
                    None => Pending::Plain(method),
                };
                self.pending.insert(id, pending);
                self.to_upstream(line);
            }
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
        let classified = message::classify(&line);
        if let Err(problem) = &classified {
            return self.on_upstream_broken(&line, problem);
        }
        if matches!(classified, Ok(Kind::Other)) && line.trim_ascii_start().starts_with(b"[") {
            return self.on_upstream_batch(&line);
        }
        let Ok(Kind::Response { id, result }) = classified else {
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
                        return self.to_upstream(message::error_response(
                            &id_key(id),
                            ErrorCode::METHOD_NOT_FOUND,
                            &text,
                        ));
                    }
                    _ => {}
                }
            }
            return self.to_client(line);
        };
        let key = id_key(id);
        let Some(pending) = self.pending.remove(&key) else {
            return self.drop_unexpected(&key);
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
                Pending::TaskResult { task, .. } => {
                    // The task's own failure, or the end of it: its result is delivered.
                    self.tasks.remove(&task);
                    self.to_client(line);
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
            Pending::ToolsCall(call) => match tasks::created(result) {
                Some(task) => {
                    self.tasks.insert(task, call);
                    self.to_client(line);
                }
                None => tools::intercept(self, call, line, tools::Place::Result),
            },
            Pending::TaskResult { task, call } => {
                self.tasks.remove(&task);
                tools::intercept(self, call, line, tools::Place::Result);
            }
            Pending::TaskGet { task, call } => {
                // A task's outcome inline (the 2026-07-28 tasks extension): a completed task's
                // result, or a failed one's error, is its delivery.
                if edit::member(result, "result").is_some() {
                    self.tasks.remove(&task);
                    tools::intercept(self, call, line, tools::Place::Inline);
                } else {
                    if edit::member(result, "error").is_some() {
                        self.tasks.remove(&task);
                    }
                    self.to_client(line);
                }
            }
            Pending::Resources { templates, .. } => {
                let result = result.to_owned();
                files::add_to_list(self, key, line, &result, templates);
            }
            Pending::ToolCheck => tools::check_page(self, result),
        }
    }

    /// Asks the upstream for its tools (from `cursor`), to refuse one named `lro_extract`
    /// before the client lists them.
    fn check_tools(&mut self, cursor: Option<String>) {
        let (id, key) = self.own_ids.take();
        let params = match cursor {
            Some(cursor) => format!("{{\"cursor\":{}}}", edit::quoted(&cursor)),
            None => "{}".to_owned(),
        };
        self.pending.insert(key, Pending::ToolCheck);
        self.to_upstream(message::request(&id, "tools/list", &params));
    }
}

/// A response with its id replaced; every other member as it came.
fn retarget(line: &[u8], id: &str) -> Vec<u8> {
    let Some(mut response) = std::str::from_utf8(line).ok().and_then(Object::parse) else {
        return line.to_vec();
    };
    response.set("id", id);
    response.to_string().into_bytes()
}

fn method_not_found(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.get("error")?.get("code")?.as_i64())
        == Some(i64::from(ErrorCode::METHOD_NOT_FOUND.0))
}

/// An `initialize` or `server/discover` result with the capabilities the proxy adds: `tools`
/// (it lists `lro_extract`) and `resources` (the offloaded files), each only when the server
/// lacks it; everything the server declared is forwarded as it came.
fn with_capabilities(result: &str) -> Option<String> {
    let mut result = Object::parse(result)?;
    let capabilities = add_capabilities(result.get("capabilities"))?;
    result.set("capabilities", capabilities);
    Some(result.to_string())
}

/// The server's capabilities (JSON text) with `tools` and `resources` added where absent, the
/// rest as declared; `None` when it has both.
fn add_capabilities(declared: Option<&str>) -> Option<String> {
    match declared.and_then(Object::parse) {
        Some(mut capabilities) => {
            let added = capabilities.set_default("tools", "{}") | capabilities.set_default("resources", "{}");
            added.then(|| capabilities.to_string())
        }
        None => Some(r#"{"tools":{},"resources":{}}"#.to_owned()),
    }
}
