//! A streamable HTTP upstream (MCP's HTTP transport): each message is POSTed; the answer comes
//! back as a JSON body or an event stream; server-initiated messages arrive on a GET event
//! stream. A request that cannot be delivered fails alone and the next one tries again, so the
//! proxy keeps serving while the server restarts; an expired session is re-initialised with
//! the client's own `initialize`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use base64::Engine;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;

mod events;

use events::read_events;

use super::edit::Object;
use super::message::{self, Kind, META_PROTOCOL_VERSION};
use super::spool::{Incoming, Sink, SpoolDir};
use super::upstream::{CHANNEL, Link, UpEvent};

const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// Headers the transport sets itself; `--header` may not set them.
const RESERVED: [&str; 5] = ["accept", "content-type", SESSION_ID, PROTOCOL_VERSION, "last-event-id"];

/// Parses `--header "NAME: VALUE"`.
pub fn parse_header(text: &str) -> anyhow::Result<(HeaderName, HeaderValue)> {
    let Some((name, value)) = text.split_once(':') else {
        bail!("--header {text:?}: expected \"NAME: VALUE\"");
    };
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .with_context(|| format!("--header {text:?}: {:?} is not a header name", name.trim()))?;
    if RESERVED.contains(&name.as_str()) {
        bail!("--header {text:?}: the proxy sets {name} itself");
    }
    let value = HeaderValue::from_str(value.trim())
        .with_context(|| format!("--header {text:?}: the value is not a valid header value"))?;
    Ok((name, value))
}

/// `url` parsed, if it is an http or https URL (what `--url` takes).
pub fn connect_check(url: &str) -> anyhow::Result<reqwest::Url> {
    let parsed = reqwest::Url::parse(url).with_context(|| format!("--url {url:?} is not a URL"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        bail!("--url {url:?}: only http and https URLs are supported");
    }
    Ok(parsed)
}

/// The client's `initialize` request and `notifications/initialized`, as sent.
type Handshake = (Option<Vec<u8>>, Option<Vec<u8>>);

struct Shared {
    /// Where messages over `spool::SPOOL_AT` bytes are written as they arrive.
    spool: Option<SpoolDir>,
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    session: Mutex<Option<String>>,
    /// The version `initialize` settled on (sent as `MCP-Protocol-Version` from then on).
    version: Mutex<Option<String>>,
    /// The client's `initialize` and `notifications/initialized`, replayed when the server
    /// forgets the session.
    handshake: Mutex<Handshake>,
    events: mpsc::Sender<UpEvent>,
    listening: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The POSTs of requests still waiting for their answer, by id key: dropped when the
    /// client cancels the request.
    in_flight: Mutex<HashMap<String, tokio::task::AbortHandle>>,
}

/// Links to the streamable HTTP endpoint `url`, sending `headers` with every request.
pub fn connect(url: &str, headers: HeaderMap, spool: Option<SpoolDir>) -> anyhow::Result<Link> {
    let parsed = connect_check(url)?;
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(same_origin_redirects(&parsed))
        .build()
        .context("building the HTTP client")?;
    let (send, mut outgoing) = mpsc::channel::<Vec<u8>>(CHANNEL);
    let (events_tx, events) = mpsc::channel(CHANNEL);
    let shared = Arc::new(Shared {
        client,
        url: url.to_owned(),
        headers,
        session: Mutex::new(None),
        version: Mutex::new(None),
        handshake: Mutex::new((None, None)),
        events: events_tx,
        listening: Mutex::new(None),
        in_flight: Mutex::new(HashMap::new()),
        spool,
    });
    let finished = tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            // `initialize` and notifications are delivered in order (the session must exist
            // before anything else is sent, and `initialized` must follow it); requests run side
            // by side, so a slow call does not hold up the rest.
            let (in_order, id, cancelled) = match message::classify(&message) {
                Ok(Kind::Request { id, method, .. }) => (method == "initialize", Some(message::id_key(id)), None),
                Ok(Kind::Notification { method, params }) => {
                    let cancelled = if method == "notifications/cancelled" {
                        params.and_then(|p| message::cancelled_id(p.get()))
                    } else {
                        None
                    };
                    (true, None, cancelled)
                }
                _ => (false, None, None),
            };
            let shared = shared.clone();
            if let Some(cancelled) = cancelled {
                // A 2026-07-28 server has no session to tie the notification to: it stops a
                // request when the client drops its answer. Both are done, for either kind.
                if let Some(post) = lock(&shared.in_flight).remove(&cancelled) {
                    post.abort();
                }
                if lock(&shared.session).is_none() {
                    continue;
                }
            }
            if in_order {
                deliver(&shared, message).await;
            } else {
                // Held while spawning, so the task's own removal comes after the insertion.
                let mut in_flight = lock(&shared.in_flight);
                let task = tokio::spawn({
                    let shared = shared.clone();
                    let id = id.clone();
                    async move {
                        deliver(&shared, message).await;
                        if let Some(id) = id {
                            lock(&shared.in_flight).remove(&id);
                        }
                    }
                });
                if let Some(id) = id {
                    in_flight.insert(id, task.abort_handle());
                }
            }
        }
        // The client is gone: end the GET stream and the session.
        if let Some(listening) = lock(&shared.listening).take() {
            listening.abort();
        }
        let session = lock(&shared.session).clone();
        if let Some(session) = session {
            let request = shared
                .client
                .delete(&shared.url)
                .headers(shared.headers.clone())
                .header(SESSION_ID, session);
            let _ = tokio::time::timeout(Duration::from_secs(2), request.send()).await;
        }
    });
    Ok(Link {
        send,
        events,
        finished,
        stopper: None,
    })
}

/// Follows a redirect only within the origin (scheme, host and port) of `--url`: a redirect to
/// another origin would carry the JSON-RPC body, every `--header` (an API key) and the session
/// id to a server the user never named. The 3xx answer then fails the request, naming where it
/// pointed.
fn same_origin_redirects(url: &reqwest::Url) -> reqwest::redirect::Policy {
    let origin = url.origin();
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= 10 {
            attempt.error("more than 10 redirects")
        } else if attempt.url().origin() == origin {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sends one message and routes what comes back.
async fn deliver(shared: &Shared, message: Vec<u8>) {
    let (id, method) = match message::classify(&message) {
        Ok(Kind::Request { id, method, .. }) => (Some(message::id_key(id)), Some(method)),
        Ok(Kind::Notification { method, .. }) => (None, Some(method)),
        _ => (None, None),
    };
    match method.as_deref() {
        Some("initialize") => lock(&shared.handshake).0 = Some(message.clone()),
        Some("notifications/initialized") => lock(&shared.handshake).1 = Some(message.clone()),
        _ => {}
    }
    let is_initialize = method.as_deref() == Some("initialize");
    let mut outcome = post(shared, &message, id.as_deref(), is_initialize).await;
    if let Err(Failure::SessionExpired) = outcome
        && !is_initialize
    {
        outcome = match reinitialize(shared).await {
            Ok(()) => post(shared, &message, id.as_deref(), false).await,
            Err(e) => Err(Failure::Other(format!(
                "the session expired and re-initialising failed: {e}"
            ))),
        };
    }
    if method.as_deref() == Some("notifications/initialized") && outcome.is_ok() {
        listen(shared);
    }
    match (outcome, id) {
        (Ok(()), _) => {}
        (Err(failure), Some(id)) => {
            let reason = format!("the upstream server at {} {}", shared.url, failure.text());
            let _ = shared.events.send(UpEvent::Failed { id, reason }).await;
        }
        (Err(failure), None) => {
            eprintln!("lro proxy: a message to {} was lost: {}", shared.url, failure.text());
        }
    }
}

enum Failure {
    SessionExpired,
    Other(String),
}

impl Failure {
    fn text(&self) -> String {
        match self {
            Failure::SessionExpired => "forgot the session".to_owned(),
            Failure::Other(text) => text.clone(),
        }
    }
}

/// The SEP-2243 routing headers a 2026-07-28 server requires: `Mcp-Method`, and `Mcp-Name` for
/// the methods that name a tool, prompt, resource or task.
fn routing_headers(message: &[u8]) -> (Option<String>, Vec<(&'static str, String)>) {
    let Some(value) = std::str::from_utf8(message)
        .ok()
        .and_then(|m| message::parse::<Value>(m).ok())
    else {
        return (None, Vec::new());
    };
    let params = value.get("params");
    let version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut headers = Vec::new();
    if version.is_none() {
        return (None, headers);
    }
    let Some(method) = value.get("method").and_then(Value::as_str) else {
        return (version, headers);
    };
    headers.push(("mcp-method", method.to_owned()));
    let key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    };
    if let Some(name) = key.and_then(|k| params?.get(k)).and_then(Value::as_str) {
        headers.push(("mcp-name", header_text(name)));
    }
    (version, headers)
}

/// SEP-2243's header encoding: plain when it is printable ASCII without edge spaces, else
/// `=?base64?...?=`.
fn header_text(value: &str) -> String {
    let edge_space = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = !edge_space && !looks_encoded && value.chars().all(|c| (' '..='~').contains(&c));
    if plain {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value))
    }
}

/// A POST of `body` with the transport's headers: `--header`s, the session, and the protocol
/// version (the one `initialize` settled on wins over `version`, the message's own: a
/// 2026-07-28 client bridged to a server of the older protocol still marks its requests
/// 2026-07-28).
fn post_request(shared: &Shared, body: Vec<u8>, version: Option<String>) -> reqwest::RequestBuilder {
    let mut request = shared
        .client
        .post(&shared.url)
        .headers(shared.headers.clone())
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(session) = lock(&shared.session).clone() {
        request = request.header(SESSION_ID, session);
    }
    let negotiated = lock(&shared.version).clone();
    if let Some(version) = negotiated.or(version) {
        request = request.header(PROTOCOL_VERSION, version);
    }
    request
}

async fn post(shared: &Shared, message: &[u8], id: Option<&str>, is_initialize: bool) -> Result<(), Failure> {
    let (version, routing) = routing_headers(message);
    let session = lock(&shared.session).clone();
    let mut request = post_request(shared, message.to_vec(), version);
    for (name, value) in routing {
        request = request.header(name, value);
    }
    let response = request
        .send()
        .await
        .map_err(|e| Failure::Other(format!("could not be reached: {}", error_chain(&e))))?;
    let status = response.status();
    if status == StatusCode::NOT_FOUND && session.is_some() {
        return Err(Failure::SessionExpired);
    }
    if status.is_redirection() {
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("nowhere")
            .chars()
            .take(500)
            .collect::<String>();
        return Err(Failure::Other(format!(
            "answered HTTP {status}, a redirect to {location:?} on another origin, which the proxy does not follow (it would send the request, its headers and the session there); point --url at the new address"
        )));
    }
    if !status.is_success() {
        let body = error_body(response).await;
        return Err(Failure::Other(format!("answered HTTP {status}: {}", body.trim())));
    }
    if is_initialize && let Some(session) = response.headers().get(SESSION_ID).and_then(|v| v.to_str().ok()) {
        *lock(&shared.session) = Some(session.to_owned());
    }
    read_reply(shared, response, id, is_initialize).await
}

/// Reads a POST's answer: nothing (202), one JSON message or a batch, or an event stream that
/// ends with the response to `id`.
async fn read_reply(shared: &Shared, response: Response, id: Option<&str>, is_initialize: bool) -> Result<(), Failure> {
    let event_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut answered = id.is_none();
    let mut inspect = |data: &[u8]| {
        if let Some(id) = id
            && let Ok(Kind::Response { id: got, result }) = message::classify(data)
            && message::id_key(got) == id
        {
            answered = true;
            if is_initialize && let Some(version) = result.and_then(|r| protocol_version(r.get())) {
                *lock(&shared.version) = Some(version);
            }
        }
    };
    if event_stream {
        read_events(response, &shared.events, shared.spool.as_ref(), &mut inspect)
            .await
            .map_err(Failure::Other)?;
    } else {
        let mut response = response;
        let mut sink = Sink::new(shared.spool.as_ref(), true);
        let broke = |e: reqwest::Error| Failure::Other(format!("broke off its answer: {}", error_chain(&e)));
        while let Some(chunk) = response.chunk().await.map_err(broke)? {
            sink.push(&chunk).await.map_err(spool_failure)?;
        }
        match sink.finish().await.map_err(spool_failure)? {
            Incoming::Line(body) if body.is_empty() => {}
            Incoming::Line(body) => send_body(shared, body, &mut inspect).await?,
            // A batch is taken apart in memory, as the relay takes one apart.
            Incoming::Spooled(spooled) if spooled.skeleton.starts_with(b"[") => {
                let body = spooled.file.load().map_err(spool_failure)?;
                send_body(shared, body, &mut inspect).await?;
            }
            Incoming::Spooled(spooled) => {
                inspect(&spooled.skeleton);
                let _ = shared.events.send(UpEvent::Spooled(spooled)).await;
            }
        }
    }
    if answered {
        Ok(())
    } else {
        Err(Failure::Other("ended its answer without a response".to_owned()))
    }
}

/// An answer's body held in memory: one message or a batch of them, each passed on as one line.
async fn send_body(shared: &Shared, body: Vec<u8>, inspect: &mut impl FnMut(&[u8])) -> Result<(), Failure> {
    if body.starts_with(b"[") {
        let batch: Vec<Box<serde_json::value::RawValue>> =
            serde_json::from_slice(&body).map_err(|e| Failure::Other(format!("sent a batch that is not JSON: {e}")))?;
        for one in batch {
            inspect(one.get().as_bytes());
            let _ = shared
                .events
                .send(UpEvent::Message(one_line(one.get().as_bytes().to_vec())))
                .await;
        }
    } else {
        inspect(&body);
        let _ = shared.events.send(UpEvent::Message(one_line(body))).await;
    }
    Ok(())
}

fn spool_failure(e: std::io::Error) -> Failure {
    Failure::Other(format!("its answer could not be spooled to disk: {e}"))
}

/// A message as one line, as the client's side (stdio: a message a line) and the relay need it:
/// a server may print its JSON over several lines (a pretty-printed body, an event's several
/// `data:` lines). The whitespace between tokens goes; every token stays as sent. Text that is not
/// UTF-8 is left alone: it is no message, and the relay never forwards it.
fn one_line(message: Vec<u8>) -> Vec<u8> {
    if !message.iter().any(|&b| b == b'\n' || b == b'\r') {
        return message;
    }
    match std::str::from_utf8(&message) {
        Ok(text) => lro_core::json_text::raw::minify(text).into_owned().into_bytes(),
        Err(_) => message,
    }
}

/// The start of an error answer's body, for the message: at most 2 KiB is read, so a server
/// that answers an error with gigabytes is not held in memory.
async fn error_body(mut response: Response) -> String {
    let mut body = Vec::new();
    while body.len() < 2048 {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).chars().take(500).collect()
}

fn protocol_version(result: &str) -> Option<String> {
    let value: Value = serde_json::from_str(result).ok()?;
    value.get("protocolVersion")?.as_str().map(str::to_owned)
}

/// Opens the GET event stream for server-initiated messages, once per session, and keeps it
/// open while the server allows it (a 405 means the server has none).
fn listen(shared: &Shared) {
    let mut listening = lock(&shared.listening);
    if listening.as_ref().is_some_and(|task| !task.is_finished()) {
        return;
    }
    let client = shared.client.clone();
    let url = shared.url.clone();
    let headers = shared.headers.clone();
    let session = lock(&shared.session).clone();
    let version = lock(&shared.version).clone();
    let events = shared.events.clone();
    let spool = shared.spool.clone();
    *listening = Some(tokio::spawn(async move {
        for _attempt in 0..60 {
            let mut request = client
                .get(&url)
                .headers(headers.clone())
                .header(ACCEPT, "text/event-stream");
            if let Some(session) = &session {
                request = request.header(SESSION_ID, session);
            }
            if let Some(version) = &version {
                request = request.header(PROTOCOL_VERSION, version);
            }
            match request.send().await {
                Ok(response) if response.status().is_success() => {
                    let _ = read_events(response, &events, spool.as_ref(), &mut |_| {}).await;
                }
                Ok(response) if response.status().is_client_error() => return,
                _ => {}
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }));
}

/// Replays the client's handshake after the server forgot the session (it restarted), so the
/// request that found out can be sent again. The replayed answers are not forwarded: the client
/// already has them.
async fn reinitialize(shared: &Shared) -> anyhow::Result<()> {
    let (initialize, initialized) = lock(&shared.handshake).clone();
    let initialize = initialize.context("the client never initialised a session")?;
    *lock(&shared.session) = None;
    // Replayed as the client sent it, under an id of the proxy's own.
    let mut replay = std::str::from_utf8(&initialize)
        .ok()
        .and_then(Object::parse)
        .context("the saved initialize is not a JSON object")?;
    replay.set("id", "\"lro-proxy-reinitialize\"");
    let response = post_request(shared, replay.to_string().into_bytes(), None)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("{}", error_chain(&e)))?;
    if !response.status().is_success() {
        bail!("initialize answered HTTP {}", response.status());
    }
    if let Some(session) = response.headers().get(SESSION_ID).and_then(|v| v.to_str().ok()) {
        *lock(&shared.session) = Some(session.to_owned());
    }
    // Read the answer to the end, dropping it.
    let _ = response.bytes().await;
    if let Some(initialized) = initialized {
        let _ = post_request(shared, initialized, None).send().await;
    }
    eprintln!(
        "lro proxy: the upstream server at {} forgot the session; a new one was started",
        shared.url
    );
    if let Some(listening) = lock(&shared.listening).take() {
        listening.abort();
    }
    listen(shared);
    Ok(())
}

/// An error with its causes, which reqwest keeps apart ("error sending request" alone says
/// nothing).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
