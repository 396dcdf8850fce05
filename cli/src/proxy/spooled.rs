//! Routing a spooled message (`spool`): on its skeleton, as `Relay::on_upstream` routes a line.
//! What the relay forwards is copied from the file; a tool's result is intercepted by the
//! component straight from the file, and the descriptor spliced in where the result was. The
//! few answers the proxy edits whole (`initialize`, `tools/list`, resources, a batch) are read
//! back into memory and take the usual way: those are never large in practice.

use std::ops::Range;

use lro_host::{ResultFile, ToolCall, ToolOutcome};

use super::edit::{self, Object};
use super::message::{self, Kind, id_key};
use super::spool::{Out, Splice, Spooled};
use super::tools::{self, Call, Place};
use super::{Pending, Relay, bridge};

impl Relay {
    pub(super) fn on_upstream_spooled(&mut self, spooled: Spooled) {
        if let Some(problem) = &spooled.problem {
            return self.on_upstream_broken(&spooled.skeleton, problem);
        }
        let routed = match message::classify(&spooled.skeleton) {
            Err(problem) => return self.on_upstream_broken(&spooled.skeleton, &problem),
            Ok(Kind::Response { id, result }) => {
                let key = id_key(id);
                let ours = matches!(
                    self.pending.get(&key),
                    Some(
                        Pending::ToolsCall(_)
                            | Pending::TaskResult { .. }
                            | Pending::TaskGet { .. }
                            | Pending::Plain(_)
                    )
                );
                ours.then(|| (key, result.map(|r| r.get().to_owned())))
            }
            // Requests and notifications pass as they came, but for a bridged client's.
            Ok(Kind::Request { .. } | Kind::Notification { .. }) if !self.session.bridged => {
                return self.to_client(file(&spooled, Vec::new()));
            }
            _ => None,
        };
        let Some((key, result)) = routed else {
            return match spooled.file.load() {
                Ok(line) => self.on_upstream(line),
                Err(e) => eprintln!("lro proxy: a spooled message could not be read back and was dropped: {e}"),
            };
        };
        let pending = self.pending.remove(&key).expect("checked above");
        let Some(result) = result else {
            // An error answer.
            if let Pending::TaskResult { task, .. } = &pending {
                self.tasks.remove(task);
            }
            return self.to_client(file(&spooled, Vec::new()));
        };
        let additions = match (&self.session.bridged, Object::parse(&result)) {
            (true, Some(object)) => bridge::additions(&object, &pending),
            _ => Vec::new(),
        };
        match pending {
            Pending::ToolsCall(call) => match super::tasks::created(&result) {
                Some(task) => {
                    self.tasks.insert(task, call);
                    self.to_client(file(&spooled, insert(&spooled, &result, &additions)));
                }
                None => intercept(self, call, spooled, key, result, Place::Result, additions),
            },
            Pending::TaskResult { task, call } => {
                self.tasks.remove(&task);
                intercept(self, call, spooled, key, result, Place::Result, additions);
            }
            Pending::TaskGet { task, call } if edit::member(&result, "result").is_some() => {
                self.tasks.remove(&task);
                intercept(self, call, spooled, key, result, Place::Inline, additions);
            }
            Pending::TaskGet { task, .. } => {
                if edit::member(&result, "error").is_some() {
                    self.tasks.remove(&task);
                }
                self.to_client(file(&spooled, insert(&spooled, &result, &additions)));
            }
            _ => self.to_client(file(&spooled, insert(&spooled, &result, &additions))),
        }
    }
}

fn file(spooled: &Spooled, splices: Vec<Splice>) -> Out {
    Out::File {
        file: spooled.file.clone(),
        splices,
    }
}

/// The splice that adds `additions` (member texts) at the start of the spooled `result`, whose
/// skeleton is `skeleton`.
fn insert(spooled: &Spooled, skeleton: &str, additions: &[(&str, &str)]) -> Vec<Splice> {
    let Some(range) = &spooled.result else {
        return Vec::new();
    };
    if additions.is_empty() {
        return Vec::new();
    }
    let mut text: Vec<String> = additions
        .iter()
        .map(|(key, value)| format!("{}:{value}", edit::quoted(key)))
        .collect();
    let empty = Object::parse(skeleton).is_none_or(|o| o.is_empty());
    if !empty {
        text.push(String::new());
    }
    vec![(range.start + 1..range.start + 1, text.join(",").into_bytes())]
}

/// Intercepts a tool's spooled result (`place` says where it is in the answer) and sends the
/// client the answer with the descriptor, the cut result or the result as it came.
fn intercept(
    relay: &Relay,
    call: Call,
    spooled: Spooled,
    key: String,
    skeleton: String,
    place: Place,
    additions: Vec<(&'static str, &'static str)>,
) {
    let offloader = relay.offloader.clone();
    let down = relay.down.clone();
    let files = relay.files.clone();
    relay.component(move || {
        let (range, head) = match place {
            Place::Result => (spooled.result.clone(), Some(skeleton.clone())),
            Place::Inline => (
                spooled.inner_result.clone(),
                edit::member(&skeleton, "result").map(str::to_owned),
            ),
        };
        let as_came = |relay_additions: &[(&str, &str)]| file(&spooled, insert(&spooled, &skeleton, relay_additions));
        let (Some(range), Some(head)) = (range, head) else {
            let _ = down.blocking_send(as_came(&additions));
            return;
        };
        if !tools::complete(&head) {
            let _ = down.blocking_send(as_came(&additions));
            return;
        }
        let source = ResultFile {
            name: spooled.file.name().to_owned(),
            offset: range.start,
            length: range.end - range.start,
        };
        let tool_call = ToolCall {
            tool: call.tool.clone(),
            arguments: call.arguments.clone(),
            result: String::new(),
            meta: call.meta.clone(),
        };
        let length = range.end - range.start;
        let forward = match offloader.intercept_file(&tool_call, &source) {
            Ok(ToolOutcome::Unchanged(_)) => None,
            Ok(ToolOutcome::Offloaded(offloaded)) => {
                files.remember(&call.tool, &offloaded.files, offloaded.tokens);
                Some(edit::rebase(&head, &offloaded.result))
            }
            Ok(ToolOutcome::Degraded(degraded)) => {
                eprintln!("lro proxy: {}: {}", call.tool, degraded.warning);
                Some(edit::rebase(&head, &degraded.result))
            }
            // Above the threshold for certain (tokens never outnumber bytes, and it was spooled):
            // never forwarded whole.
            Err(e) => {
                eprintln!(
                    "lro proxy: {}: the result ({length} bytes) could not be offloaded and was cut: {e}",
                    call.tool
                );
                Some(cut(
                    &spooled,
                    range.clone(),
                    &head,
                    &e.to_string(),
                    offloader.config.threshold_tokens,
                ))
            }
        };
        let Some(new) = forward else {
            let _ = down.blocking_send(as_came(&additions));
            return;
        };
        // A changed answer carries the request's id in its one canonical spelling, as an answer
        // the relay writes itself does.
        let mut splices: Vec<Splice> = spooled
            .id
            .clone()
            .map(|id| (id, key.into_bytes()))
            .into_iter()
            .collect();
        splices.extend(match place {
            // The result replaced whole: what the client requires goes into the new one.
            Place::Result => {
                let stamped = Object::parse(&new).map(|mut object| {
                    for (key, value) in &additions {
                        object.set_default(key, *value);
                    }
                    object.to_string()
                });
                vec![(range, stamped.unwrap_or(new).into_bytes())]
            }
            Place::Inline => {
                let mut splices = insert(&spooled, &skeleton, &additions);
                splices.push((range, new.into_bytes()));
                splices
            }
        });
        splices.sort_by_key(|(range, _)| range.start);
        let _ = down.blocking_send(file(&spooled, splices));
    });
}

/// The cut result of a spooled result the component could not take: the start of its first
/// text block, read from the file.
fn cut(spooled: &Spooled, range: Range<u64>, head: &str, reason: &str, threshold_tokens: u32) -> String {
    const READ: u64 = 256 * 1024;
    let start = spooled
        .file
        .read(range.start..range.end.min(range.start + READ))
        .unwrap_or_default();
    let start = String::from_utf8_lossy(&start);
    // The first `"text"` key's string (not a `"type": "text"`): its start is enough for the
    // preview.
    let text = start.match_indices("\"text\"").find_map(|(at, _)| {
        let rest = start[at + 6..].trim_start().strip_prefix(':')?.trim_start();
        rest.starts_with('"').then_some(rest)
    });
    let meta = edit::member(head, "_meta");
    let total = usize::try_from(range.end - range.start).unwrap_or(usize::MAX);
    tools::cut(text, meta, total, reason, threshold_tokens)
}
