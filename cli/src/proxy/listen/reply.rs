//! The HTTP side of `--listen`'s answers: response bodies (whole, or an event stream), the
//! JSON-RPC error bodies of refusals, and reading a request's body and `Accept` header.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::http::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::http::{HeaderMap, Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;

/// The largest request body taken: a tool call's arguments, far beyond any real one, and small
/// enough that parsing it (to route it) stays cheap.
const MAX_BODY: usize = 16 << 20;

/// Whether the `Accept` header takes `kind` (or anything); a request without one takes all.
pub fn accepts(headers: &HeaderMap, kind: &str) -> bool {
    let mut values = headers.get_all(ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return true;
    }
    values
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .any(|v| v == kind || v == "*/*" || v.strip_suffix("/*").is_some_and(|t| kind.starts_with(&format!("{t}/"))))
}

pub async fn read_body(mut body: Incoming) -> Result<Vec<u8>, Response<Reply>> {
    let mut bytes = Vec::new();
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return Ok(bytes),
            Some(Err(e)) => {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    &format!("Bad Request: reading the body: {e}"),
                ));
            }
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if bytes.len() + data.len() > MAX_BODY {
                        return Err(error(
                            StatusCode::PAYLOAD_TOO_LARGE,
                            &format!("Payload Too Large: a message may have at most {} MiB", MAX_BODY >> 20),
                        ));
                    }
                    bytes.extend_from_slice(&data);
                }
            }
        }
    }
}

pub fn not_found() -> Response<Reply> {
    rpc_error(
        StatusCode::NOT_FOUND,
        -32001,
        "Session not found: it ended, or it never existed; open a new one with initialize",
    )
}

/// An HTTP error with a JSON-RPC error body (code -32000), as the MCP SDKs' servers send.
pub fn error(status: StatusCode, message: &str) -> Response<Reply> {
    rpc_error(status, -32000, message)
}

pub fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<Reply> {
    let body = serde_json::json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": null});
    json_response(status, &body)
}

pub fn json_response(status: StatusCode, body: &Value) -> Response<Reply> {
    let mut response = Response::new(Reply::Full(Some(Bytes::from(body.to_string()))));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A response body: a whole one, or an event stream that ends when its sender is dropped.
pub enum Reply {
    Full(Option<Bytes>),
    Events(mpsc::Receiver<Bytes>),
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Reply::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Reply::Events(events) => events.poll_recv(cx).map(|e| e.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Reply::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Reply::Events(_) => SizeHint::default(),
        }
    }
}
