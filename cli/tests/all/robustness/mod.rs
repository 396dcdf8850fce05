//! Correct in every case: the defects real use found (each test failed before its fix), the
//! spec's outcome under faults (degrade with the event and nothing half-written, or a typed
//! error naming the problem), the storage caps, and load from several processes.

#![allow(dead_code, reason = "each part uses a different subset of the helpers")]

mod defects;
mod descriptors;
mod docs;
mod faults;
mod storage;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use lro_host::{Event, ExtractRequest, Outcome, ToolCall, ToolOutcome};
use serde_json::{Value, json};

pub fn cases() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases")
}

pub fn lro() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lro"))
}

pub fn private_dir() -> tempfile::TempDir {
    let dir = crate::common::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

pub fn light(count: usize) -> Vec<Value> {
    sample(lro_core::Detail::Light, count, false)
}

/// A `CallToolResult` carrying `records` as JSON text, as most servers send them.
pub fn text_result(records: &[Value]) -> String {
    json!({"content": [{"type": "text", "text": serde_json::to_string(records).unwrap()}]}).to_string()
}

pub fn tool_call(tool: &str, result: String) -> ToolCall {
    ToolCall {
        tool: tool.into(),
        arguments: "{}".into(),
        result,
        meta: None,
    }
}

pub fn extract_request(path: &str) -> ExtractRequest {
    ExtractRequest {
        path: path.into(),
        recipe: None,
        query: None,
        params: None,
        slurp: false,
        limit: None,
    }
}

pub fn offloaded_path(outcome: Outcome) -> String {
    match outcome {
        Outcome::Offloaded(o) => o.path,
        other => panic!("expected an offload, got {other:?}"),
    }
}

/// The JSON text the degraded `CallToolResult` carries as its text content.
pub fn degraded_payload(outcome: &ToolOutcome) -> Value {
    let ToolOutcome::Degraded(d) = outcome else {
        panic!("expected a degraded result, got {outcome:?}")
    };
    let result: Value = serde_json::from_str(&d.result).unwrap();
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

pub fn write_failures(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::OffloadWriteFailed(f) => Some(f.error.clone()),
            _ => None,
        })
        .collect()
}

pub fn names_ending(dir: &Path, suffix: &str) -> Vec<String> {
    names(dir).into_iter().filter(|n| n.ends_with(suffix)).collect()
}

// ---- defects -------------------------------------------------------------------------------
