//! Guarding the relay: what keeps every request answered exactly once, and nothing passed on
//! uninspected, whatever the client and the upstream send or fail to send. The relay's main flow
//! (`super`) routes well-formed messages; it hands here:
//!
//! - batches from either side, taken apart so each message is handled as if sent alone;
//! - lines that are not well-formed messages: a client's is answered with an error, an
//!   upstream's answer becomes an error for the request it names, and neither is forwarded;
//! - an answer for an id no request waits for (a second answer, a cancelled request): dropped;
//! - a second request under an id already in flight, and a `tools/call` whose params cannot be
//!   read: refused;
//! - requests the upstream will not answer: failed once each, saying why, when a request cannot
//!   be delivered, when the upstream dies, and when the client has closed its input and the
//!   grace period runs out.
//!
//! A line the upstream leaves half-written is dropped where it is read (`super::upstream`).

use std::time::Duration;

use super::message::ErrorCode;
use super::{Ending, Pending, Relay, bridge, message};

/// How long the proxy keeps relaying after the client closes its input, by default: answers to
/// requests already made still reach a client that reads to the end (`printf ... | lro proxy`).
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);

impl Relay {
    /// A client line the relay cannot route: a batch is taken apart (each message handled as if
    /// sent alone, each answered alone); anything else is answered with a JSON-RPC error when it
    /// has an id, so it is never passed upstream uninspected.
    pub(super) fn on_client_other(&mut self, line: &[u8], problem: Option<String>) {
        if line.trim_ascii_start().starts_with(b"[") {
            match serde_json::from_slice::<Vec<Box<serde_json::value::RawValue>>>(line) {
                Ok(batch) if !batch.is_empty() => {
                    for one in batch {
                        let one = one.get().as_bytes();
                        if one.trim_ascii_start().starts_with(b"[") {
                            self.on_client_other(one, Some("a batch inside a batch".into()));
                        } else {
                            self.on_client(one.to_vec());
                        }
                    }
                }
                Ok(_) => self.to_client(message::error_response(
                    "null",
                    ErrorCode::INVALID_REQUEST,
                    "lro proxy: an empty batch",
                )),
                Err(e) => self.to_client(message::error_response(
                    "null",
                    ErrorCode::PARSE_ERROR,
                    &format!("lro proxy: the batch is not JSON: {e}"),
                )),
            }
            return;
        }
        let problem = problem.unwrap_or_else(|| "neither a request, a notification nor a response".into());
        match message::lenient_id(line) {
            Some(id) => {
                let text = format!("lro proxy: invalid request: {problem}");
                self.to_client(message::error_response(&id, ErrorCode::INVALID_REQUEST, &text));
            }
            None => {
                eprintln!("lro proxy: a message from the client was dropped: {problem}");
                let text = format!("lro proxy: {problem}");
                self.to_client(message::error_response("null", ErrorCode::PARSE_ERROR, &text));
            }
        }
    }

    /// Refuses a request under an id already in flight, answering it with an error; true when
    /// it did. Two requests in flight under one id: the second's answer could not be told from
    /// the first's, so it is refused here and the first still gets its own.
    pub(super) fn refuse_id_in_use(&self, id: &str) -> bool {
        if !self.pending.contains_key(id) {
            return false;
        }
        let text = format!("lro proxy: request id {id} is already in use by a request in flight");
        self.to_client(message::error_response(id, ErrorCode::INVALID_REQUEST, &text));
        true
    }

    /// Refuses a `tools/call` whose params cannot be read (`problem`): a call the proxy cannot
    /// read cannot be intercepted, so it is refused, not passed on.
    pub(super) fn refuse_unreadable_call(&self, id: &str, problem: &str) {
        let text = format!("lro proxy: the tools/call params cannot be read: {problem}");
        self.to_client(message::error_response(id, ErrorCode::INVALID_PARAMS, &text));
    }

    /// A batch from the server: each message is routed (and a response intercepted) as if it
    /// came alone.
    pub(super) fn on_upstream_batch(&mut self, line: &[u8]) {
        match serde_json::from_slice::<Vec<Box<serde_json::value::RawValue>>>(line) {
            Ok(batch) => {
                for one in batch {
                    if !one.get().trim_ascii_start().starts_with('[') {
                        self.on_upstream(one.get().as_bytes().to_vec());
                    }
                }
            }
            Err(e) => self.on_upstream_broken(line, &format!("a batch that is not JSON: {e}")),
        }
    }

    /// A line from the upstream that is not a well-formed message (invalid UTF-8, a duplicate
    /// key, not JSON). A request it seems to answer gets an error instead, and exactly once: the
    /// line is never passed on, since the client's parser may read it otherwise than ours.
    pub(super) fn on_upstream_broken(&mut self, line: &[u8], problem: &str) {
        let problem = message::clip(problem, 300);
        match message::lenient_id(line).and_then(|id| Some((self.pending.remove(&id)?, id))) {
            Some((pending, id)) => {
                let text = format!(
                    "lro proxy: the upstream's answer is not a valid JSON-RPC message ({problem}); it was not forwarded"
                );
                eprintln!("{text}");
                self.answer_error(pending, &id, &text);
            }
            None => eprintln!(
                "lro proxy: a message from the upstream was dropped: {problem} ({} bytes)",
                line.len()
            ),
        }
    }

    /// Fails the request behind `pending` (taken out of the table) with `text`: the client's own
    /// id for a request the proxy made on its behalf, nothing for the proxy's own checks.
    pub(super) fn answer_error(&mut self, pending: Pending, id: &str, text: &str) {
        match pending {
            Pending::ToolCheck => {}
            Pending::Bridge { client_id, .. } => {
                self.to_client(message::error_response(&client_id, ErrorCode::INTERNAL_ERROR, text));
            }
            _ => self.to_client(message::error_response(id, ErrorCode::INTERNAL_ERROR, text)),
        }
    }

    /// An answer under `key` that no request of the client's waits for (answered already,
    /// cancelled, or never made): a second answer is dropped, so every request gets exactly one.
    pub(super) fn drop_unexpected(&self, key: &str) {
        eprintln!(
            "lro proxy: the upstream answered id {} that no request is waiting for; the answer was dropped",
            message::clip(key, 200)
        );
    }

    /// Fails one request the upstream cannot answer.
    pub(super) fn fail(&mut self, id: &str, reason: &str) {
        let text = format!("lro proxy: {reason}");
        match self.pending.remove(id) {
            // A server of the older protocol over HTTP refuses `server/discover` with an HTTP
            // error (no session yet) rather than "method not found": bridge it all the same.
            Some(Pending::Discover(meta)) => {
                let error = message::error_response(id, ErrorCode::INTERNAL_ERROR, &text);
                bridge::start(self, id.to_owned(), meta, error);
            }
            Some(pending) => self.answer_error(pending, id, &text),
            None => {}
        }
    }

    /// Fails every request in flight, saying why.
    pub(super) fn fail_all(&mut self, reason: &str) {
        let text = format!("lro proxy: {reason}");
        for (id, pending) in std::mem::take(&mut self.pending) {
            self.answer_error(pending, &id, &text);
        }
    }

    /// The end of the grace period after the client closed its input: every request still
    /// waiting fails, saying so, and the session ends as abandoned.
    pub(super) fn abandon(&mut self, grace: Duration) -> Ending {
        let waiting = self.waiting();
        self.fail_all(&format!(
            "the client closed its input and the upstream did not answer within {} s",
            grace.as_secs_f64()
        ));
        Ending::Abandoned(waiting)
    }
}
