//! One client session of `lro proxy --listen`: the stdio proxy's relay (`super::super::serve`)
//! in front of an upstream of the session's own, fed through in-memory pipes, and the routing
//! of what the relay sends back to the HTTP responses waiting for it.
//!
//! The relay writes one message per line. An answer goes to the POST that sent its request (an
//! event stream that ends with the last answer it waits for). A message of the server's own (a
//! notification, or a request such as sampling) goes to the session's GET stream when one is
//! open, or else to the newest POST stream still open, where a client reading its call's
//! progress or answering its call's sampling request looks for it; with neither, it waits for
//! the next GET (at most [`PARKED`] of them, the oldest dropped first).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use serde_json::Value;

use super::super::edit::{self, Object};
use super::super::message::{self, Kind, id_key};
use super::super::upstream::{self, Link, Stopper};
use super::super::{Ending, Offloader, serve};

/// Server messages kept for a GET stream that is not open yet.
const PARKED: usize = 256;
/// Events queued for one HTTP response before the relay waits for its client to read.
const EVENTS: usize = 16;
/// The pipes between the HTTP side and the relay.
const PIPE: usize = 64 * 1024;
/// How long the router waits for a client to read before giving up its stream.
const SEND_WAIT: Duration = Duration::from_secs(30);

/// An open session.
pub struct Session {
    /// Its `MCP-Session-Id` (for a principal's 2026-07-28 requests, `stateless:NAME`).
    pub id: String,
    /// Serves 2026-07-28 requests of any number of clients: each request's id (and progress
    /// token) is replaced by one of the proxy's own on the way in and restored on the way out,
    /// so two clients' requests never collide in the one relay.
    stateless: bool,
    next_id: AtomicU64,
    /// The principal that opened it: only that principal's requests reach it.
    pub principal: String,
    /// Lines to the relay; `None` once the session is closed.
    input: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    routes: Mutex<Routes>,
    last_used: Mutex<Instant>,
    /// Stops the upstream child at once (when the proxy itself is told to stop).
    stopper: Mutex<Option<Stopper>>,
    ended: AtomicBool,
}

#[derive(Default)]
struct Routes {
    /// Request id key → the POST stream its answer goes to, and the client's own id (JSON
    /// text) where the proxy replaced it.
    waiting: HashMap<String, (u64, Option<String>)>,
    /// A stateless request's progress token (the proxy's, a key) → its stream and the client's
    /// own token (JSON text).
    tokens: HashMap<String, (u64, String)>,
    /// Open POST streams by number (newest last), each with how many answers it still waits for.
    posts: BTreeMap<u64, (mpsc::Sender<Bytes>, usize)>,
    next: u64,
    get: Option<mpsc::Sender<Bytes>>,
    parked: VecDeque<Bytes>,
}

/// Why a POST could not be routed.
pub enum Refusal {
    /// The session was closed (or its upstream ended) meanwhile.
    Closed,
    /// A request id the client already has in flight in this session.
    IdInUse(String),
}

impl Session {
    /// Starts the relay for a new session in front of `link`, with `offloader` (the principal's
    /// own directory) and `grace` for answers still in flight when the session is closed.
    pub fn start(
        id: String,
        stateless: bool,
        principal: String,
        offloader: Offloader,
        mut link: Link,
        grace: Duration,
        on_end: impl FnOnce(&Session, Ending) + Send + 'static,
    ) -> Arc<Session> {
        let (input_tx, mut input_rx) = mpsc::channel::<Vec<u8>>(upstream::CHANNEL);
        let (mut to_relay, relay_in) = tokio::io::duplex(PIPE);
        let (relay_out, from_relay) = tokio::io::duplex(PIPE);
        let session = Arc::new(Session {
            id,
            stateless,
            next_id: AtomicU64::new(1),
            principal,
            input: Mutex::new(Some(input_tx)),
            routes: Mutex::default(),
            last_used: Mutex::new(Instant::now()),
            stopper: Mutex::new(link.stopper.take()),
            ended: AtomicBool::new(false),
        });
        // Lines in: one writer, so messages from concurrent POSTs never interleave. When the
        // session is closed its sender is dropped, the pipe closes, and the relay sees the
        // client's end (answering what is in flight for `grace`).
        tokio::spawn(async move {
            while let Some(mut line) = input_rx.recv().await {
                line.push(b'\n');
                if to_relay.write_all(&line).await.is_err() {
                    break;
                }
            }
            let _ = to_relay.shutdown().await;
        });
        // Lines out, routed.
        let router = session.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(from_relay);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        // Moved out, as the stdio relay reads its lines: the buffer keeps no
                        // large message's capacity for the rest of the session.
                        let message = upstream::take_trimmed(&mut line);
                        if !message.is_empty() {
                            router.route(&message).await;
                        }
                    }
                }
            }
            router.close_streams();
        });
        let ending = session.clone();
        let (relay_read, relay_write) = (relay_in, relay_out);
        tokio::spawn(async move {
            let end = serve(offloader, link, relay_read, relay_write, grace).await;
            ending.ended.store(true, Ordering::SeqCst);
            ending.close();
            on_end(&ending, end);
        });
        session
    }

    /// Whether the relay has ended (its upstream died, or the session closed and drained).
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Notes a request now, for the idle timer.
    pub fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// True when nothing has happened in the session for `idle`: no request, and no stream
    /// open (a client holding its GET stream open is still there).
    pub fn idle_for(&self, idle: Duration) -> bool {
        let routes = lock(&self.routes);
        // A POST whose client left, and whose answer never came, does not keep a session.
        let streams_open =
            routes.posts.values().any(|(tx, _)| !tx.is_closed()) || routes.get.as_ref().is_some_and(|g| !g.is_closed());
        !streams_open && lock(&self.last_used).elapsed() >= idle
    }

    /// Ends the session: its relay sees the client's end, answers what is in flight for its
    /// grace period, then closes its upstream.
    pub fn close(&self) {
        lock(&self.input).take();
    }

    /// Stops the upstream child at once (the proxy was told to stop).
    pub async fn stop_upstream(&self) {
        let stopper = lock(&self.stopper).take();
        if let Some(stopper) = stopper {
            stopper.stop().await;
        }
    }

    /// Sends `line` (one message, or a batch) to the relay. With `requests` (their id keys),
    /// returns the event stream their answers arrive on, ending after the last one.
    pub async fn send(&self, line: Vec<u8>, requests: &[String]) -> Result<Option<mpsc::Receiver<Bytes>>, Refusal> {
        let waits: Vec<(String, Option<String>)> = requests.iter().map(|id| (id.clone(), None)).collect();
        self.deliver(line, &waits, None).await
    }

    /// Sends one 2026-07-28 message (`line`, parsed as `message`) to a stateless session's
    /// relay: a request under an id of the proxy's own (its progress token too), returning the
    /// stream its answer arrives on, with the client's id and token restored.
    pub async fn send_stateless(
        &self,
        line: Vec<u8>,
        message: &Value,
    ) -> Result<Option<mpsc::Receiver<Bytes>>, Refusal> {
        let text = std::str::from_utf8(&line).unwrap_or_default();
        let (Some(original), Some(mut object)) = (
            message.get("id").filter(|_| message.get("method").is_some()),
            Object::parse(text),
        ) else {
            return self.deliver(line, &[], None).await;
        };
        let own = format!("\"lro-{}\"", self.next_id.fetch_add(1, Ordering::Relaxed));
        object.set("id", own.clone());
        let mut token = None;
        if let Some(client_token) = message
            .get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("progressToken"))
            && let Some(params) = object
                .get("params")
                .and_then(|p| edit::set_at(p, &["_meta"], "progressToken", &own))
        {
            object.set("params", params);
            token = Some((own.clone(), client_token.to_string()));
        }
        let line = object.to_string().into_bytes();
        self.deliver(line, &[(own, Some(original.to_string()))], token).await
    }

    /// Registers the answers `line` waits for (id keys, with the client's own ids where the
    /// proxy replaced them, and a replaced progress token) on a new stream, then sends it.
    async fn deliver(
        &self,
        line: Vec<u8>,
        waits: &[(String, Option<String>)],
        token: Option<(String, String)>,
    ) -> Result<Option<mpsc::Receiver<Bytes>>, Refusal> {
        self.touch();
        let input = lock(&self.input).clone().ok_or(Refusal::Closed)?;
        let stream = if waits.is_empty() {
            None
        } else {
            let mut routes = lock(&self.routes);
            if let Some((id, _)) = waits.iter().find(|(id, _)| routes.waiting.contains_key(id)) {
                return Err(Refusal::IdInUse(id.clone()));
            }
            let (tx, rx) = mpsc::channel(EVENTS);
            let number = routes.next;
            routes.next += 1;
            routes.posts.insert(number, (tx, waits.len()));
            for (id, client) in waits {
                routes.waiting.insert(id.clone(), (number, client.clone()));
            }
            if let Some((own, client)) = token {
                routes.tokens.insert(own, (number, client));
            }
            Some(rx)
        };
        if input.send(line).await.is_err() {
            return Err(Refusal::Closed);
        }
        Ok(stream)
    }

    /// Opens the session's GET stream, with the messages parked for it; `None` when one is
    /// open already.
    pub fn listen(&self) -> Option<mpsc::Receiver<Bytes>> {
        self.touch();
        let mut routes = lock(&self.routes);
        if routes.get.as_ref().is_some_and(|g| !g.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(PARKED + EVENTS);
        for event in routes.parked.drain(..) {
            let _ = tx.try_send(event);
        }
        routes.get = Some(tx);
        Some(rx)
    }

    /// Routes one message from the relay (see the module documentation). Waits while the
    /// stream it goes to is full: a client that does not read slows its own session only.
    async fn route(&self, line: &[u8]) {
        let answer = match message::classify(line) {
            Ok(Kind::Response { id, .. }) => Some(id_key(id)),
            _ => None,
        };
        let mut event = event(line);
        let target = {
            let mut routes = lock(&self.routes);
            let related = if self.stateless && answer.is_none() {
                related(&routes, line)
            } else {
                None
            };
            match answer.as_ref().and_then(|id| routes.waiting.remove(id)) {
                Some((number, client)) => {
                    let Some((tx, left)) = routes.posts.get_mut(&number) else {
                        return;
                    };
                    *left -= 1;
                    let tx = tx.clone();
                    if *left == 0 {
                        routes.posts.remove(&number);
                        routes.tokens.retain(|_, (n, _)| *n != number);
                        // The idle clock runs from the last answer, not from the request.
                        self.touch();
                    }
                    if let Some(client) = client
                        && let Some(mut object) = std::str::from_utf8(line).ok().and_then(Object::parse)
                    {
                        object.set("id", client);
                        event = self::event(object.to_string().as_bytes());
                    }
                    Some(tx)
                }
                None if related.is_some() => {
                    let (number, restored) = related.unwrap_or_default();
                    event = self::event(&restored);
                    routes.posts.get(&number).map(|(tx, _)| tx.clone())
                }
                None if self.stateless => {
                    // An answer or progress of a request whose client left belongs to nobody
                    // else. Anything else of the server's own: 2026-07-28 has no stream for
                    // it, so the newest request's stream is the only place a client may read it.
                    if answer.is_some() || has_progress_token(line) {
                        return;
                    }
                    newest_open(&routes)
                }
                None => {
                    // An answer to no waiting request (one whose client left) is dropped; a
                    // message of the server's own goes where the client listens.
                    if answer.as_ref().is_some_and(|id| id != "null") {
                        return;
                    }
                    let open = |tx: &mpsc::Sender<Bytes>| !tx.is_closed();
                    match routes.get.clone().filter(open) {
                        Some(get) => Some(get),
                        None => match newest_open(&routes) {
                            Some(post) => Some(post),
                            None => {
                                if routes.parked.len() == PARKED {
                                    routes.parked.pop_front();
                                }
                                routes.parked.push_back(event.clone());
                                None
                            }
                        },
                    }
                }
            }
        };
        // A client that stops reading (but keeps its connection) loses its stream after a
        // while, rather than holding up the session's other streams (in a stateless session,
        // every client of the principal).
        if let Some(tx) = target
            && !matches!(tokio::time::timeout(SEND_WAIT, tx.send(event)).await, Ok(Ok(())))
        {
            // Its client left: forget what it waited for.
            let mut routes = lock(&self.routes);
            routes.posts.retain(|_, (post, _)| !post.same_channel(&tx));
            routes.posts.retain(|_, (post, _)| !post.is_closed());
            let alive: Vec<u64> = routes.posts.keys().copied().collect();
            routes.waiting.retain(|_, (number, _)| alive.contains(number));
            routes.tokens.retain(|_, (number, _)| alive.contains(number));
        }
    }

    /// Ends every open stream: the relay has ended.
    fn close_streams(&self) {
        let mut routes = lock(&self.routes);
        // A request the relay took but never answered gets an answer that says so, rather than
        // a stream that ends empty.
        let waiting: Vec<(String, (u64, Option<String>))> = routes.waiting.drain().collect();
        for (key, (number, client)) in waiting {
            let id = client.unwrap_or(key);
            let answer = message::error_response(
                &id,
                message::ErrorCode::INTERNAL_ERROR,
                "lro proxy: the session ended before the upstream answered this request",
            );
            if let Some((tx, _)) = routes.posts.get(&number) {
                let _ = tx.try_send(event(&answer));
            }
        }
        routes.posts.clear();
        routes.waiting.clear();
        routes.tokens.clear();
        routes.get = None;
    }
}

/// For a stateless session: the stream a message of the server's belongs to, and the message
/// with the client's own token or id restored, when it names a request in flight: a progress
/// notification by its token, a list change by the `subscriptions/listen` request it answers.
fn related(routes: &Routes, line: &[u8]) -> Option<(u64, Vec<u8>)> {
    const SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";
    let text = std::str::from_utf8(line).ok()?;
    let params = edit::member(text, "params")?;
    if let Some(token) = edit::member(params, "progressToken")
        && let Some((number, client)) = routes.tokens.get(token.trim())
    {
        let params = edit::set_at(params, &[], "progressToken", client)?;
        return Some((*number, message::with_params(line, &params)?));
    }
    let id = edit::member(params, "_meta").and_then(|m| edit::member(m, SUBSCRIPTION))?;
    let (number, client) = routes.waiting.get(id.trim())?;
    let params = edit::set_at(params, &["_meta"], SUBSCRIPTION, client.as_deref()?)?;
    Some((*number, message::with_params(line, &params)?))
}

/// The newest POST stream whose client still reads it.
fn newest_open(routes: &Routes) -> Option<mpsc::Sender<Bytes>> {
    routes
        .posts
        .values()
        .rev()
        .find(|(tx, _)| !tx.is_closed())
        .map(|(tx, _)| tx.clone())
}

/// Whether a message's params carry a progress token (on a stateless session, always one of
/// the proxy's own).
fn has_progress_token(line: &[u8]) -> bool {
    std::str::from_utf8(line)
        .ok()
        .and_then(|text| edit::member(text, "params"))
        .and_then(|params| edit::member(params, "progressToken"))
        .is_some()
}

/// One message as a server-sent event. A bare carriage return (JSON whitespace) would end the
/// event's line, so it becomes a space.
fn event(line: &[u8]) -> Bytes {
    let mut event = Vec::with_capacity(line.len() + 24);
    event.extend_from_slice(b"event: message\ndata: ");
    event.extend(line.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
