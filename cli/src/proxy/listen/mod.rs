//! `lro proxy --listen HOST:PORT`: the proxy as a streamable HTTP server at `/mcp`, for many
//! clients at once (docs/PROXY.md, "Serving remote clients").
//!
//! Each client session (opened by `initialize`) gets an upstream of its own and a relay of its
//! own: the code that serves one client over stdio (`super::serve`), fed through in-memory
//! pipes (`session`), started by `start`; `reply` makes the HTTP answers. Requests are authenticated (`auth`), and
//! each principal's offloads live in a directory of its own and are named by handles
//! (`lro_host::mcp::handles`), so a principal reaches only its own.

pub mod auth;
mod reply;
mod session;
mod start;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::{Bytes, Incoming};
use hyper::http::header::{ALLOW, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::http::{HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::Offloader;
use super::message::{META_PROTOCOL_VERSION, id_key};
use reply::{Reply, accepts, error, json_response, not_found, read_body, rpc_error};
use session::{Refusal, Session};
use start::{find, open, stateless_for};

const SESSION_ID: &str = "mcp-session-id";
/// Connections served at once.
const MAX_CONNECTIONS: usize = 1024;
/// The longest a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// The upstream each session connects to.
pub enum Upstream {
    /// A child process per session, over stdio.
    Command(Vec<String>),
    /// A session of its own on a streamable HTTP endpoint, with these headers.
    Url { url: String, headers: HeaderMap },
}

/// What `--listen` serves with.
pub struct Listen {
    /// The offloader of the base directory: each principal's is made from it, in a
    /// subdirectory named after the principal.
    pub offloader: Offloader,
    /// `--store`: where every principal's offloads are also kept, under the principal's name.
    pub store: Option<Arc<lro_host::store::Store>>,
    pub upstream: Upstream,
    /// `--tokens`; without it, every request is [`auth::LOCAL`]'s (a loopback listener only).
    pub tokens: Option<auth::Tokens>,
    /// Sessions open at once, at most.
    pub max_sessions: usize,
    /// A session with no request and no open stream for this long is closed.
    pub idle: Duration,
    /// How long a closed session's answers still in flight are relayed.
    pub grace: Duration,
}

struct State {
    listen: Listen,
    /// The listener is on a loopback address: requests must name it so (DNS rebinding).
    loopback: bool,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Each principal's session for 2026-07-28 requests, which carry no session id.
    stateless: Mutex<HashMap<String, Arc<Session>>>,
    /// Held while a stateless session starts.
    starting: tokio::sync::Mutex<()>,
    /// Relays running, each with its upstream: counted from before a session starts until its
    /// relay has ended (a closed session still answers what is in flight for its grace period),
    /// and bounded by `--max-sessions`.
    live: std::sync::atomic::AtomicUsize,
    /// Each principal's offloader, made on its first session.
    offloaders: tokio::sync::Mutex<HashMap<String, Offloader>>,
}

/// Serves on `listener` until `stop` resolves (to a signal's number), then stops every
/// session's upstream child and returns the signal.
pub async fn run(listener: TcpListener, listen: Listen, stop: impl Future<Output = i32>) -> i32 {
    let loopback = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
    let idle = listen.idle;
    let state = Arc::new(State {
        listen,
        loopback,
        sessions: Mutex::default(),
        stateless: Mutex::default(),
        starting: tokio::sync::Mutex::default(),
        live: std::sync::atomic::AtomicUsize::new(0),
        offloaders: tokio::sync::Mutex::default(),
    });
    let reaper = tokio::spawn(reap_idle(Arc::downgrade(&state), idle));
    let store_sweeper = state
        .listen
        .store
        .clone()
        .map(|store| tokio::spawn(sweep_store(store, state.listen.offloader.clone())));
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(stop);
    let signal = loop {
        tokio::select! {
            // At most MAX_CONNECTIONS at once: beyond that, connections wait in the backlog
            // instead of taking the descriptors that upstreams and files need.
            accepted = accept(&listener, &connections) => {
                let Some((stream, permit)) = accepted else { continue };
                let state = state.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(handle(&state, request).await) }
                    });
                    // A connection that sends its headers slower than this is dropped before
                    // anyone is authenticated (hyper applies the timeout only with a timer).
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_TIMEOUT)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                    drop(permit);
                });
            }
            signal = &mut stop => break signal,
        }
    };
    reaper.abort();
    if let Some(sweeper) = store_sweeper {
        sweeper.abort();
    }
    let mut sessions: Vec<Arc<Session>> = lock(&state.sessions).drain().map(|(_, s)| s).collect();
    sessions.extend(lock(&state.stateless).drain().map(|(_, s)| s));
    // At once: each child gets its own grace to exit.
    let stops: Vec<_> = sessions
        .into_iter()
        .map(|s| tokio::spawn(async move { s.stop_upstream().await }))
        .collect();
    for stop in stops {
        let _ = stop.await;
    }
    signal
}

/// The next connection, once fewer than [`MAX_CONNECTIONS`] are open; `None` after a failed
/// accept (out of descriptors, say), having waited a moment rather than spin.
async fn accept(
    listener: &TcpListener,
    connections: &Arc<tokio::sync::Semaphore>,
) -> Option<(tokio::net::TcpStream, tokio::sync::OwnedSemaphorePermit)> {
    let permit = connections.clone().acquire_owned().await.ok()?;
    match listener.accept().await {
        Ok((stream, _)) => Some((stream, permit)),
        Err(e) => {
            eprintln!("lro proxy: accepting a connection: {e}");
            tokio::time::sleep(Duration::from_millis(100)).await;
            None
        }
    }
}

/// Closes sessions left idle, checking every quarter of `idle` (between 1 and 60 seconds).
async fn reap_idle(state: std::sync::Weak<State>, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    loop {
        tokio::time::sleep(every).await;
        let Some(state) = state.upgrade() else { return };
        let mut idle_ones: Vec<Arc<Session>> = Vec::new();
        for table in [&state.sessions, &state.stateless] {
            let mut sessions = lock(table);
            let keys: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| s.idle_for(idle))
                .map(|(key, _)| key.clone())
                .collect();
            idle_ones.extend(keys.iter().filter_map(|key| sessions.remove(key)));
        }
        for session in idle_ones {
            eprintln!(
                "lro proxy: session {} ({}) closed after {} s without a request",
                session.id,
                session.principal,
                idle.as_secs()
            );
            session.close();
        }
    }
}

async fn handle(state: &Arc<State>, request: Request<Incoming>) -> Response<Reply> {
    if request.uri().path() != "/mcp" {
        return error(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp");
    }
    // DNS rebinding: a page in the user's browser reaching a loopback listener that asks for
    // no credentials. With tokens, such a page has none to send (and a reverse proxy in front
    // forwards its own Host), so the check is for a listener without them.
    if state.loopback
        && state.listen.tokens.is_none()
        && let Err(why) = auth::local_request(request.headers())
    {
        return error(StatusCode::FORBIDDEN, &format!("Forbidden: {why}"));
    }
    let principal = match &state.listen.tokens {
        None => auth::LOCAL.to_owned(),
        Some(tokens) => match tokens.principal(request.headers()) {
            Some(principal) => principal.to_owned(),
            None => {
                let mut response = error(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: send `Authorization: Bearer TOKEN` with a token of the proxy's --tokens file",
                );
                response
                    .headers_mut()
                    .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return response;
            }
        },
    };
    match *request.method() {
        Method::POST => post(state, principal, request).await,
        Method::GET => get(state, &principal, request.headers()),
        Method::DELETE => delete(state, &principal, request.headers()),
        _ => {
            let mut response = error(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method not allowed: use POST, GET or DELETE",
            );
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

/// A message POSTed: answers come back on an event stream of the request's own.
async fn post(state: &Arc<State>, principal: String, request: Request<Incoming>) -> Response<Reply> {
    let headers = request.headers().clone();
    if !accepts(&headers, "application/json") || !accepts(&headers, "text/event-stream") {
        return error(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept both application/json and text/event-stream",
        );
    }
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/json"));
    if !json {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: the body must be application/json",
        );
    }
    let body = match read_body(request.into_body()).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let value: Value = match super::message::parse(std::str::from_utf8(&body).unwrap_or("\u{0}")) {
        Ok(value) => value,
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, -32700, &format!("Parse error: {e}")),
    };
    let messages: Vec<&Value> = match &value {
        Value::Array(batch) if !batch.is_empty() => batch.iter().collect(),
        Value::Object(_) => vec![&value],
        _ => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "Invalid Request: expected a JSON-RPC message (an object) or a batch of them",
            );
        }
    };
    let modern = messages.iter().any(|m| {
        m.get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(META_PROTOCOL_VERSION))
            .is_some()
    });
    let mut requests = Vec::new();
    let mut initialize = false;
    for message in &messages {
        if let (Some(id), Some(method)) = (message.get("id"), message.get("method").and_then(Value::as_str)) {
            // An answer is routed by its id: one that cannot be told apart, or that JSON-RPC
            // does not allow, would leave its stream waiting for ever.
            if !(id.is_string() || id.is_number()) {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    "Invalid Request: a request's id must be a string or a number",
                );
            }
            let Ok(raw) = serde_json::value::to_raw_value(id) else {
                continue;
            };
            let key = id_key(&raw);
            if requests.contains(&key) {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    &format!("Invalid Request: the id {key} is used twice in this batch"),
                );
            }
            requests.push(key);
            initialize |= method == "initialize";
        }
    }
    // One line for the relay: JSON that parsed has no newline inside a string, so each one is
    // whitespace between tokens.
    let line: Vec<u8> = body
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect();
    let given = headers.get(SESSION_ID).and_then(|v| v.to_str().ok());
    if given.is_none() && modern && !initialize {
        if messages.len() > 1 {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "Invalid Request: 2026-07-28 has no batches",
            );
        }
        // A stateless session closed meanwhile (idle, or its upstream died) is replaced once:
        // the client named no session, so "not found" would mean nothing to it.
        for retry in [false, true] {
            let session = match stateless_for(state, principal.clone()).await {
                Ok(session) => session,
                Err(response) => return response,
            };
            match session.send_stateless(line.clone(), messages[0]).await {
                Err(Refusal::Closed) if !retry => {
                    let mut stateless = lock(&state.stateless);
                    if stateless.get(&principal).is_some_and(|s| Arc::ptr_eq(s, &session)) {
                        stateless.remove(&principal);
                    }
                }
                Err(Refusal::Closed) => break,
                sent => return answer(sent, &session, false),
            }
        }
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            "Service Unavailable: the upstream session closed while the request was sent; send it again",
        );
    }
    let (session, opened) = if initialize {
        if messages.len() > 1 {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "Invalid Request: initialize must be sent alone",
            );
        }
        if given.is_some() {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "Invalid Request: this session is initialized already; send initialize without Mcp-Session-Id to open a new one",
            );
        }
        match open(state, principal).await {
            Ok(session) => (session, true),
            Err(response) => return response,
        }
    } else {
        let Some(id) = given else {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32000,
                "Bad Request: Mcp-Session-Id header is required; this proxy serves sessions opened by initialize",
            );
        };
        match find(state, &principal, id) {
            Some(session) => (session, false),
            None => return not_found(),
        }
    };
    let sent = session.send(line, &requests).await;
    answer(sent, &session, opened)
}

/// The HTTP answer to a POST the session took: its answers' event stream, or 202 when it
/// holds no request.
fn answer(sent: Result<Option<mpsc::Receiver<Bytes>>, Refusal>, session: &Session, opened: bool) -> Response<Reply> {
    match sent {
        Ok(Some(events)) => {
            let mut response = Response::new(Reply::Events(events));
            let headers = response.headers_mut();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.insert("cache-control", HeaderValue::from_static("no-cache"));
            if opened && let Ok(id) = HeaderValue::from_str(&session.id) {
                headers.insert(SESSION_ID, id);
            }
            response
        }
        Ok(None) => {
            let mut response = Response::new(Reply::Full(None));
            *response.status_mut() = StatusCode::ACCEPTED;
            response
        }
        Err(Refusal::Closed) => not_found(),
        Err(Refusal::IdInUse(id)) => {
            let text = format!("Invalid Request: request id {id} is already in flight in this session");
            let body = serde_json::json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": text}, "id": serde_json::from_str::<Value>(&id).unwrap_or(Value::Null)});
            json_response(StatusCode::BAD_REQUEST, &body)
        }
    }
}

/// The session's stream of the server's own messages.
fn get(state: &Arc<State>, principal: &str, headers: &HeaderMap) -> Response<Reply> {
    if !accepts(headers, "text/event-stream") {
        return error(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept text/event-stream",
        );
    }
    let Some(id) = headers.get(SESSION_ID).and_then(|v| v.to_str().ok()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "Bad Request: Mcp-Session-Id header is required",
        );
    };
    let Some(session) = find(state, principal, id) else {
        return not_found();
    };
    match session.listen() {
        Some(events) => {
            let mut response = Response::new(Reply::Events(events));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            response
                .headers_mut()
                .insert("cache-control", HeaderValue::from_static("no-cache"));
            response
        }
        None => error(
            StatusCode::CONFLICT,
            "Conflict: only one GET stream is allowed per session",
        ),
    }
}

/// Ends a session at once.
fn delete(state: &Arc<State>, principal: &str, headers: &HeaderMap) -> Response<Reply> {
    let Some(id) = headers.get(SESSION_ID).and_then(|v| v.to_str().ok()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "Bad Request: Mcp-Session-Id header is required",
        );
    };
    let session = {
        let mut sessions = lock(&state.sessions);
        match sessions.get(id) {
            Some(s) if s.principal == principal => sessions.remove(id),
            _ => None,
        }
    };
    match session {
        Some(session) => {
            session.close();
            Response::new(Reply::Full(None))
        }
        None => not_found(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Deletes every principal's expired objects from the store, now and every
/// [`Offloader::sweep_interval`]: a principal with no session has its offloads swept too.
async fn sweep_store(store: Arc<lro_host::store::Store>, offloader: Offloader) {
    let mut ticks = tokio::time::interval(offloader.sweep_interval());
    loop {
        ticks.tick().await;
        let (store, config) = (store.clone(), offloader.config.clone());
        let swept = tokio::task::spawn_blocking(move || {
            let ttl_ms = config.ttl_seconds.saturating_mul(1000);
            store.sweep("", 1, &config.prefix, ttl_ms, lro_host::mcp::now_ms())
        })
        .await;
        if let Ok(Err(e)) = swept {
            eprintln!("lro proxy: sweeping expired offloads: {e}");
        }
    }
}
