//! Memory tools (`recall_memories`, `list_memories`, `inject_context`, memory search): their
//! records go through the record-level interceptor, so their files, descriptors and recipes are
//! the spec's, not the generic profile's.

use serde_json::{Map, Value};

use super::sdk::{Members, replace};
use super::{PassReason, ToolOutcome};
use crate::offload::{self, Request};
use crate::{Config, Detail, Error, Event, Operation, Outcome};

/// The operation a memory tool's name stands for; None for any other tool.
pub(super) fn memory_operation(tool: &str) -> Option<Operation> {
    match tool {
        "recall_memories" => Some(Operation::Recall),
        "list_memories" => Some(Operation::List),
        "inject_context" => Some(Operation::Inject),
        t if t.contains("memor") && t.contains("search") => Some(Operation::Search),
        _ => None,
    }
}

/// Offloads a memory tool's records at the estimate already made of what the model reads.
#[allow(clippy::too_many_arguments, reason = "one private call site")]
pub(super) fn memory(
    config: &Config,
    operation: Operation,
    arguments: &Map<String, Value>,
    records: &str,
    text: &str,
    result: &Members<'_>,
    kept: &[&str],
    tokens: u32,
    emit: &mut dyn FnMut(Event),
) -> Result<ToolOutcome, Error> {
    // For inject the text content stands for the budgeted text; it is only returned inline, and
    // this result is over the threshold already.
    let inject_text = (operation == Operation::Inject).then_some(text);
    let detail = arguments.get("detail").and_then(Value::as_str).and_then(Detail::parse);
    let request = Request {
        operation,
        query: arguments.get("query").and_then(Value::as_str),
        detail,
        records,
        text: inject_text,
    };
    // The decision was made on what the model would read; the descriptor carries that estimate.
    match offload::offload_estimated(config, &request, Some(tokens), emit)? {
        Outcome::Offloaded { descriptor, path, .. } => Ok(ToolOutcome::Offloaded {
            result: replace(result, kept, &descriptor, &descriptor),
            files: vec![path],
            tokens,
        }),
        Outcome::Degraded { payload, warning, .. } => Ok(ToolOutcome::Degraded {
            result: replace(result, kept, &payload, &payload),
            warning,
        }),
        // Not reached: the estimate given is over the threshold. Forwarding the original is
        // the safe answer should that ever change.
        Outcome::Inline { .. } => Ok(ToolOutcome::Unchanged {
            reason: PassReason::UnderThreshold,
            tokens,
        }),
    }
}
