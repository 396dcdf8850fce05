//! Tools through the proxy: `tools/list` rewritten by the component (no `outputSchema` where a
//! descriptor may replace the result, `lro_extract` appended), `tools/call` results (and the
//! results of the tasks they create, `super::tasks`) intercepted, and `lro_extract` answered here
//! by the sandboxed extractor.

pub use lro_host::mcp::EXTRACT_TOOL;
use lro_host::{ToolCall, ToolOutcome};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::edit::{self, Object};
use super::message::{self, ErrorCode, META_CLIENT_CAPABILITIES};
use super::spool::Out;
use super::{Relay, Session};
use rmcp::model::ListToolsResult;

/// A `tools/call` in flight, or the call behind a task.
#[derive(Clone)]
pub struct Call {
    /// The tool's name.
    pub tool: String,
    /// Its `arguments` object, JSON text (`{}` when absent).
    pub arguments: String,
    /// What the component reads to tell whether the client is itself an LRO proxy: the
    /// request's `_meta` (2026-07-28), else the client's `initialize` params.
    pub meta: Option<String>,
    /// True when the request was 2026-07-28 (results made here carry `resultType`).
    pub modern: bool,
}

impl Call {
    /// The call in a `tools/call` request's params (JSON text, read as sent); `None` when they
    /// have no tool name.
    pub fn from_params(params: Option<&str>, modern: bool, session: &Session) -> Option<Call> {
        let params = Object::parse(params?)?;
        let tool = params.get_str("name")?;
        let arguments = params.get("arguments").unwrap_or("{}").to_owned();
        let meta = if modern {
            params.get("_meta").map(str::to_owned)
        } else {
            session.initialize_params.clone()
        };
        Some(Call {
            tool,
            arguments,
            meta,
            modern,
        })
    }

    /// The request as sent upstream: for 2026-07-28, whose capabilities travel in each
    /// request's `_meta`, they gain the proxy marker; an older request is sent as it came (its
    /// `initialize` carried the marker).
    pub fn marked_line(&self, line: &[u8], params: Option<&str>) -> Option<Vec<u8>> {
        if !self.modern {
            return None;
        }
        let mut params = Object::parse(params?)?;
        let meta = edit::set_at(
            params.get("_meta")?,
            &[META_CLIENT_CAPABILITIES, "experimental", "lro"],
            "proxy",
            "true",
        )?;
        params.set("_meta", meta);
        message::with_params(line, &params.to_string())
    }
}

/// Runs `lro_extract` here. A refusal or a filter error is an `isError` result the model can
/// read and correct, never a protocol error.
pub fn extract(relay: &Relay, id: String, call: Call) {
    let offloader = relay.offloader.clone();
    let down = relay.down.clone();
    relay.component(move || {
        let result = offloader.extract(&call.arguments).into_result();
        let _ = down.blocking_send(message::own_response(&id, &result, call.modern).into());
    });
}

#[derive(Deserialize)]
struct ResultHead<'a> {
    #[serde(rename = "resultType", default)]
    result_type: Option<&'a str>,
}

/// Where a tool's result is in an answer.
#[derive(Clone, Copy)]
pub enum Place {
    /// The answer's `result` (`tools/call`, `tasks/result`).
    Result,
    /// The `result` member of the answer's `result`: a completed task's, inline in `tasks/get`
    /// (the 2026-07-28 tasks extension).
    Inline,
}

/// Sends an answer holding a tool's result (at `place`) on: a complete result goes through the
/// component's `intercept` (offloaded to a file and replaced by a descriptor when large); an
/// error result, an input request or a task goes on as it came. The file holds exactly what the
/// upstream sent: the component reads the result's own text, and the members it does not
/// replace (and the rest of the answer) are forwarded as they came.
pub fn intercept(relay: &Relay, call: Call, line: Vec<u8>, place: Place) {
    let offloader = relay.offloader.clone();
    let down = relay.down.clone();
    let files = relay.files.clone();
    relay.component(move || {
        let Ok(super::message::Kind::Response {
            id: raw_id,
            result: Some(answer),
        }) = message::classify(&line)
        else {
            return;
        };
        let result = match place {
            Place::Result => Some(answer.get()),
            Place::Inline => edit::member(answer.get(), "result"),
        };
        let Some(result) = result else {
            let _ = down.blocking_send(line.clone().into());
            return;
        };
        if !complete(result) {
            let _ = down.blocking_send(line.clone().into());
            return;
        }
        let tool_call = ToolCall {
            tool: call.tool.clone(),
            arguments: call.arguments.clone(),
            result: result.to_owned(),
            meta: call.meta.clone(),
        };
        let forward = match offloader.intercept(&tool_call) {
            Ok(ToolOutcome::Unchanged(_)) => None,
            // The component prints the members it does not replace (`_meta`, ...) its own way.
            Ok(ToolOutcome::Offloaded(offloaded)) => {
                files.remember(&call.tool, &offloaded.files, offloaded.tokens);
                Some(edit::rebase(result, &offloaded.result))
            }
            Ok(ToolOutcome::Degraded(degraded)) => {
                eprintln!("lro proxy: {}: {}", call.tool, degraded.warning);
                Some(edit::rebase(result, &degraded.result))
            }
            // The spec's fallback: the call never fails because offloading did. A result that
            // may be above the threshold (tokens never outnumber bytes) is not forwarded whole
            // though: the reason to offload it holds all the more when the component could not.
            Err(e) if result.len() as u64 > u64::from(offloader.config.threshold_tokens) => {
                eprintln!(
                    "lro proxy: {}: the result ({} bytes) could not be offloaded and was cut: {e}",
                    call.tool,
                    result.len()
                );
                Some(cut_result(result, &e.to_string(), offloader.config.threshold_tokens))
            }
            Err(e) => {
                eprintln!("lro proxy: {}: the result was forwarded as it came: {e}", call.tool);
                None
            }
        };
        let forward = forward.and_then(|result| match place {
            Place::Result => Some(result),
            Place::Inline => {
                let mut answer = Object::parse(answer.get())?;
                answer.set("result", result);
                Some(answer.to_string())
            }
        });
        let _ = down.blocking_send(
            match forward {
                Some(result) => message::with_result(raw_id, &result),
                None => line.clone(),
            }
            .into(),
        );
    });
}

/// True when `result` is a complete result (2026-07-28 `resultType`, absent before): an
/// `incomplete` one asks the client for input and is forwarded as it is.
pub(super) fn complete(result: &str) -> bool {
    serde_json::from_str::<ResultHead<'_>>(result)
        .is_ok_and(|head| head.result_type.is_none_or(|t| t == message::COMPLETE))
}

/// The upstream's tools the proxy can list, each as sent: an entry without a string `name`
/// cannot be called and would fail the whole page, so it is left out; a tool named
/// `lro_extract` that appears after the start (through `list_changed`) is hidden by the proxy's
/// own. Each is logged.
fn listable(tools: Vec<&str>) -> Vec<&str> {
    tools
        .into_iter()
        .enumerate()
        .filter(|(i, tool)| match Object::parse(tool).and_then(|t| t.get_str("name")).as_deref() {
            None => {
                eprintln!(
                    "lro proxy: the upstream's tools/list has an entry without a string `name` (tools[{i}]: {}); it is left out",
                    message::clip(tool, 200)
                );
                false
            }
            Some(EXTRACT_TOOL) => {
                eprintln!(
                    "lro proxy: the upstream now lists a tool named `{EXTRACT_TOOL}`; the proxy's own takes that name, so the upstream's is left out"
                );
                false
            }
            Some(_) => true,
        })
        .map(|(_, tool)| tool)
        .collect()
}

/// Rewrites one page of the upstream's `tools/list`: `lro_extract` is appended to the last page
/// (the one without `nextCursor`) only. Every tool and member the component does not change is
/// forwarded as it came.
pub fn list(relay: &Relay, id: String, result: String) {
    let offloader = relay.offloader.clone();
    let down = relay.down.clone();
    relay.component(move || {
        let rewritten = (|| -> Result<String, String> {
            let mut page = Object::parse(&result).ok_or("the upstream's tools/list result is not an object")?;
            let tools = match page.get("tools") {
                Some(tools) => edit::elements(tools).ok_or("the upstream's tools/list `tools` is not an array")?,
                None => Vec::new(),
            };
            let tools = listable(tools);
            let mut config = offloader.config.clone();
            config.extract_tool = !page.contains("nextCursor");
            let listed = offloader
                .runtime
                .rewrite_tools(&config, &edit::array(&tools))
                .map_err(|e| e.to_string())?;
            let listed = edit::elements(&listed).ok_or("the component's tools are not an array")?;
            if listed.len() < tools.len() {
                return Err(format!(
                    "the component listed {} of {} tools",
                    listed.len(),
                    tools.len()
                ));
            }
            // The component keeps the order and appends its own (`lro_extract`).
            let tools: Vec<String> = listed
                .iter()
                .enumerate()
                .map(|(i, new)| {
                    tools
                        .get(i)
                        .map_or_else(|| (*new).to_owned(), |sent| edit::rebase(sent, new))
                })
                .collect();
            page.set("tools", edit::array(&tools));
            Ok(page.to_string())
        })();
        let _ = down.blocking_send(Out::from(match rewritten {
            Ok(page) => message::response(&id, &page),
            Err(reason) => {
                let text = format!("lro proxy: cannot list the upstream's tools: {reason}");
                message::error_response(&id, ErrorCode::INTERNAL_ERROR, &text)
            }
        }));
    });
}

/// `tools/list` for an upstream without tools: `lro_extract` alone.
pub fn list_alone(relay: &Relay, id: String, modern: bool) {
    relay.to_client(match relay.offloader.extract_tool() {
        Ok(tool) => message::own_response(&id, &ListToolsResult::with_all_items(vec![tool]), modern),
        Err(e) => {
            let text = format!("lro proxy: the component's {EXTRACT_TOOL} definition is not a Tool: {e}");
            message::error_response(&id, ErrorCode::INTERNAL_ERROR, &text)
        }
    });
}

/// One page of the proxy's own look at the upstream's tools: a tool already named
/// `lro_extract` would make the proxy's own unreachable, so the proxy stops, saying why.
pub fn check_page(relay: &mut Relay, result: &str) {
    let Ok(page) = message::parse::<Value>(result) else {
        return;
    };
    let clash = page.get("tools").and_then(Value::as_array).is_some_and(|tools| {
        tools
            .iter()
            .any(|t| t.get("name").and_then(Value::as_str) == Some(EXTRACT_TOOL))
    });
    if clash {
        let _ = relay.fatal.send(format!(
            "the upstream server already has a tool named `{EXTRACT_TOOL}`; the proxy's own would hide it, so it will not start"
        ));
    } else if let Some(cursor) = page.get("nextCursor").and_then(Value::as_str) {
        relay.check_tools(Some(cursor.to_owned()));
    }
}

/// The first text block of a `CallToolResult`, borrowed as its JSON string literal.
#[derive(Deserialize)]
struct TextHead<'a> {
    #[serde(borrow, default)]
    content: Vec<BlockHead<'a>>,
    #[serde(borrow, rename = "_meta", default)]
    meta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct BlockHead<'a> {
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
}

/// The fallback for a result too large for the component: the degraded form's `truncated` and
/// `lro_warning`, and the first characters of its text (about half the threshold's tokens) as
/// `preview`, read from the JSON text without decoding the rest of it.
fn cut_result(result: &str, reason: &str, threshold_tokens: u32) -> String {
    let head: Option<TextHead<'_>> = serde_json::from_str(result).ok();
    let text = head
        .as_ref()
        .and_then(|h| h.content.iter().find_map(|b| b.text))
        .map(RawValue::get);
    let meta = head.as_ref().and_then(|h| h.meta).map(RawValue::get);
    cut(text, meta, result.len(), reason, threshold_tokens)
}

/// The cut result: the first characters of `text` (a JSON string literal, maybe only its start)
/// and the warning, keeping `_meta`; `total` is the result's size in bytes.
pub(super) fn cut(text: Option<&str>, meta: Option<&str>, total: usize, reason: &str, threshold_tokens: u32) -> String {
    let raw = text.unwrap_or("\"\"");
    let budget = (threshold_tokens as usize).saturating_mul(2).max(64);
    let preview = string_prefix(raw, budget);
    let warning = format!(
        "LRO could not offload this result ({}), and it is too large to forward whole ({total} bytes). Showing its first {} characters; the rest is not available. Narrow the request to see it.",
        message::clip(reason, 300),
        preview.chars().count()
    );
    let text = serde_json::json!({"truncated": true, "total_bytes": total, "lro_warning": warning, "preview": preview});
    let mut cut = Object::default();
    let content = serde_json::json!([{"type": "text", "text": text.to_string()}]);
    cut.set("content", content.to_string());
    if let Some(meta) = meta {
        cut.set("_meta", meta);
    }
    cut.to_string()
}

/// The first `max` bytes or so of the JSON string literal `raw`, decoded: cut on a character
/// boundary and backed off past a cut escape, so only the prefix is ever decoded.
fn string_prefix(raw: &str, max: usize) -> String {
    if raw.len() <= max {
        return serde_json::from_str(raw).unwrap_or_default();
    }
    let mut end = max;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    // An escape is at most 12 bytes (`\uD83D\uDE00`): backing off that far always finds a cut
    // outside one.
    for back in 0..=12 {
        let Some(cut) = end.checked_sub(back).filter(|&c| raw.is_char_boundary(c) && c >= 1) else {
            break;
        };
        if let Ok(text) = serde_json::from_str::<String>(&format!("{}\"", &raw[..cut])) {
            return text;
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_result_shows_a_decoded_prefix_and_says_why() {
        let text = format!("caf\u{e9} \\\"quoted\\\" {}", "row ".repeat(10_000));
        let result = serde_json::json!({"content": [{"type": "text", "text": text}], "_meta": {"k": 1}}).to_string();
        let cut: Value = serde_json::from_str(&cut_result(&result, "limit exceeded: memory", 100)).unwrap();
        let inner: Value = serde_json::from_str(cut["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(inner["truncated"], true);
        assert_eq!(inner["total_bytes"], result.len());
        let preview = inner["preview"].as_str().unwrap();
        assert!(
            text.starts_with(preview) && preview.len() >= 150 && preview.len() <= 200,
            "{preview:?}"
        );
        assert!(
            inner["lro_warning"]
                .as_str()
                .unwrap()
                .contains("limit exceeded: memory")
        );
        assert_eq!(cut["_meta"], serde_json::json!({"k": 1}));
        let exact = r#"{"content":[{"type":"text","text":"x"}],"_meta":{"n":1E+2}}"#;
        assert!(cut_result(exact, "why", 100).ends_with(r#","_meta":{"n":1E+2}}"#));
    }

    #[test]
    fn a_marked_call_keeps_the_arguments_and_meta_as_sent() {
        let params = r#"{"name":"t","arguments":{"n":1E+2},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"k":123456789012345678901234567890}}}}"#;
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
        let call = Call::from_params(Some(params), true, &Session::default()).unwrap();
        assert_eq!((call.tool.as_str(), call.arguments.as_str()), ("t", r#"{"n":1E+2}"#));
        let marked = String::from_utf8(call.marked_line(line.as_bytes(), Some(params)).unwrap()).unwrap();
        assert_eq!(
            marked,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"n":1E+2},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"k":123456789012345678901234567890,"lro":{"proxy":true}}}}}}"#
        );
    }

    #[test]
    fn a_prefix_never_ends_inside_an_escape() {
        let raw = r#""ab\ud83d\ude00\u00e9\n\"cd""#;
        for max in 0..raw.len() + 2 {
            let prefix = string_prefix(raw, max);
            assert!("ab\u{1F600}\u{e9}\n\"cd".starts_with(&prefix), "{max}: {prefix:?}");
        }
    }
}
