//! Tools run as tasks. A `tools/call` may answer with a task instead of its result, and the
//! client fetches the result later: with `tasks/result` (MCP 2025-11-25, whose
//! `CreateTaskResult` is `{"task": {"taskId": ...}}`), or inline in a `tasks/get` whose task is
//! `completed` (the 2026-07-28 tasks extension, SEP-2663, whose `CreateTaskResult` has
//! `resultType: "task"` and a `taskId` of its own). The proxy remembers which call created each
//! task, so that result is intercepted like the call's own would have been: the same tool's
//! settings, the same threshold, its files listed for `lro_extract`.

use std::collections::{HashMap, VecDeque};

use serde::Deserialize;

use super::tools::Call;

/// How many tasks the proxy remembers at once; past that the oldest is forgotten, and its
/// result, if it ever comes, is forwarded as it comes.
const REMEMBERED: usize = 1024;

/// A `CreateTaskResult` is a handle, not data: longer answers are not read for one.
const HANDLE_MAX: usize = 64 * 1024;

/// The calls behind the tasks the upstream created, by task id, until each result is delivered.
#[derive(Default)]
pub struct Tasks {
    calls: HashMap<String, Call>,
    /// Task ids, oldest first.
    order: VecDeque<String>,
}

impl Tasks {
    /// Remembers that `call` created the task `id`.
    pub fn insert(&mut self, id: String, call: Call) {
        if self.calls.insert(id.clone(), call).is_some() {
            self.order.retain(|t| *t != id);
        }
        self.order.push_back(id);
        while self.order.len() > REMEMBERED {
            if let Some(oldest) = self.order.pop_front() {
                self.calls.remove(&oldest);
            }
        }
    }

    /// The call that created the task `id`.
    pub fn get(&self, id: &str) -> Option<&Call> {
        self.calls.get(id)
    }

    /// Forgets the task `id`: its result was delivered.
    pub fn remove(&mut self, id: &str) {
        if self.calls.remove(id).is_some() {
            self.order.retain(|t| t != id);
        }
    }
}

#[derive(Deserialize)]
struct Handle {
    #[serde(rename = "resultType", default)]
    result_type: Option<String>,
    #[serde(rename = "taskId", default)]
    task_id: Option<String>,
    #[serde(default)]
    task: Option<Seed>,
}

#[derive(Deserialize)]
struct Seed {
    #[serde(rename = "taskId")]
    task_id: String,
}

/// The id of the task a `tools/call` result (JSON text) creates: `task.taskId` (2025-11-25) or
/// `taskId` beside `resultType: "task"` (2026-07-28); `None` for any other result.
pub fn created(result: &str) -> Option<String> {
    if result.len() > HANDLE_MAX {
        return None;
    }
    let handle: Handle = serde_json::from_str(result).ok()?;
    match (handle.result_type.as_deref(), handle.task_id, handle.task) {
        (Some("task"), Some(id), _) => Some(id),
        (None | Some(super::message::COMPLETE), _, Some(seed)) => Some(seed.task_id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str) -> Call {
        Call {
            tool: tool.into(),
            arguments: "{}".into(),
            meta: None,
            modern: false,
        }
    }

    #[test]
    fn both_kinds_of_handle_name_their_task() {
        let older = r#"{"task":{"taskId":"t-1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttl":null}}"#;
        assert_eq!(created(older).as_deref(), Some("t-1"));
        let extension =
            r#"{"resultType":"task","taskId":"t-2","status":"working","createdAt":"x","lastUpdatedAt":"x"}"#;
        assert_eq!(created(extension).as_deref(), Some("t-2"));
        assert_eq!(created(r#"{"content":[{"type":"text","text":"task"}]}"#), None);
        assert_eq!(
            created(r#"{"resultType":"input_required","task":{"taskId":"t"}}"#),
            None
        );
    }

    #[test]
    fn the_oldest_task_is_forgotten_and_a_delivered_one_at_once() {
        let mut tasks = Tasks::default();
        for i in 0..=REMEMBERED {
            tasks.insert(format!("t-{i}"), call("rows"));
        }
        assert!(tasks.get("t-0").is_none(), "the oldest is forgotten");
        assert_eq!(tasks.get("t-1").map(|c| c.tool.as_str()), Some("rows"));
        tasks.remove("t-1");
        assert!(tasks.get("t-1").is_none());
        assert_eq!(tasks.order.len(), REMEMBERED - 1);
    }
}
