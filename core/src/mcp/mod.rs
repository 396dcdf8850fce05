//! The MCP-level interceptor: a tool call's `CallToolResult` in, the `CallToolResult` to forward
//! out, for any tool. Memory tools go through the record-level interceptor ([`crate::offload`](mod@crate::offload));
//! every other tool through the generic profile: its records found where they are, split into
//! sections, each section a JSONL file with a line schema and recipes made from its records, in
//! the descriptor shape of the Python offloading library the spec accompanies (sections,
//! `inline_keys`, `lro_warning`). Data is kept as the text it came in, never re-serialised.
//!
//! This file decides (the tool's settings, what passes unchanged, which profile); the rest is
//! split by concern: `sdk` reads the data out of a result as the SDKs shape it and puts the
//! descriptor back in, `memory` hands memory tools' records to the record-level interceptor,
//! `sections` finds the records in JSON data and `text` in text, `generic` writes the files (or
//! the truncated fallback), `schema` profiles records and infers line schemas, `recipes`
//! generates jq recipes, and `descriptor` builds the generic descriptor within its budget of
//! estimated tokens.

mod descriptor;
mod generic;
mod memory;
mod recipes;
mod schema;
mod sdk;
mod sections;
mod text;

use serde_json::{Map, Value};

use crate::estimate::Counts;
use crate::json_text::parse;
use crate::json_text::raw::{Kind, elements, kind, members, minify};
use crate::{Config, Error, Event, Operation, TypeName};

/// The deepest JSON the MCP level reads (a result, its text content, its arguments): records
/// nested [`crate::jq::MAX_DEPTH`] levels, the most an offloaded line may nest (so that
/// `lro_extract` reads it back), inside a few levels of wrapping (the result object,
/// `structuredContent`, a member, the array holding the records). Deeper JSON is `invalid-input`,
/// as a record nested deeper than `MAX_DEPTH` is.
pub const RESULT_DEPTH: usize = crate::jq::MAX_DEPTH + 8;

pub use descriptor::DESCRIPTOR_BUDGET;
use generic::generic;
use memory::{memory, memory_operation};
pub use recipes::recipe_command;
use sdk::{Data, Owned, data_of, wraps_text};
pub use sections::sanitize;

/// Settings for one tool (`[prompt.offload.tools.NAME]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSettings {
    /// The tool's name.
    pub name: String,
    /// Overrides `enabled`.
    pub enabled: Option<bool>,
    /// Overrides `threshold_tokens`.
    pub threshold_tokens: Option<u32>,
    /// Keys of the result object to offload as sections (automatic when None).
    pub sections: Option<Vec<String>>,
    /// Keys to keep in the descriptor (automatic when None).
    pub inline_keys: Option<Vec<String>>,
}

/// A tool call as middleware sees it (the WIT `tool-call` record).
#[derive(Debug, Clone)]
pub struct ToolCall<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The call's arguments, JSON text.
    pub arguments: &'a str,
    /// The `CallToolResult`, JSON text.
    pub result: std::borrow::Cow<'a, str>,
    /// The request's `_meta`, or the legacy initialize params, JSON text.
    pub meta: Option<&'a str>,
}

/// Why a result is forwarded unchanged (the WIT `pass-reason` enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassReason {
    /// Estimated at or under the threshold.
    UnderThreshold,
    /// Offloading is disabled for this tool.
    Disabled,
    /// `isError: true`: errors are never offloaded.
    ErrorResult,
    /// Image, audio or resource content is never touched.
    NonTextContent,
    /// A downstream LRO proxy offloads.
    Proxied,
    /// An `inject_context` result of text only: budgeted already, no records to offload.
    BudgetedText,
}

/// What to forward (the WIT `tool-outcome` variant).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// Forward the original result.
    Unchanged {
        /// Why.
        reason: PassReason,
        /// Estimated tokens of the result.
        tokens: u32,
    },
    /// Forward `result`, which carries the descriptor.
    Offloaded {
        /// The new `CallToolResult`.
        result: String,
        /// Files written.
        files: Vec<String>,
        /// Estimated tokens of the original result.
        tokens: u32,
    },
    /// The write failed: forward `result`, truncated with a warning.
    Degraded {
        /// The new `CallToolResult`.
        result: String,
        /// The warning.
        warning: String,
    },
}

/// Intercepts one tool result. The result's text is taken by value (a borrowed one is copied):
/// its text content is decoded where it lies, so a large result is in memory once.
pub fn intercept(config: &Config, call: ToolCall<'_>, emit: &mut dyn FnMut(Event)) -> Result<ToolOutcome, Error> {
    config.validate()?;
    let owned = Owned::read(call.result.into_owned())?;
    let result = owned.members();
    let blocks = owned.texts();
    // Images, audio, links and resources are forwarded as sent, after the descriptor.
    let kept = owned.kept();
    let arguments = match parse(call.arguments, RESULT_DEPTH) {
        Ok(Value::Object(map)) => map,
        Ok(Value::Null) => Map::new(),
        Ok(other) => {
            return Err(Error::InvalidInput(format!(
                "arguments must be a JSON object, got {}",
                TypeName(&other)
            )));
        }
        Err(e) => return Err(Error::InvalidInput(format!("arguments are {e}"))),
    };
    let meta: Option<Value> = match call.meta {
        None => None,
        Some(text) => Some(parse(text, RESULT_DEPTH).map_err(|e| Error::InvalidInput(format!("meta is {e}")))?),
    };
    let settings = config.tools.iter().find(|t| t.name == call.tool);
    let enabled = settings.and_then(|t| t.enabled).unwrap_or(config.enabled);
    let threshold = settings
        .and_then(|t| t.threshold_tokens)
        .unwrap_or(config.threshold_tokens);

    // One block (the usual case) is not copied.
    let text: std::borrow::Cow<'_, str> = match blocks.as_slice() {
        [one] => (*one).into(),
        _ => blocks.join("\n").into(),
    };
    // One estimate, of what the model may read: the text content, or the structured content
    // when that is larger (clients show one or the other). The decision and the descriptor both
    // carry it.
    let structured = result.get("structuredContent");
    let text_tokens = owned.text_counts().tokens();
    let mut tokens = match (structured, owned.structured_tokens()) {
        // A single-key wrapper of the text (the reference servers') costs what the text does.
        (Some(raw), _) if !blocks.is_empty() && wraps_text(raw) => text_tokens,
        (Some(_), Some(structured)) => text_tokens.max(structured),
        _ => text_tokens,
    };
    let unchanged = |reason, tokens| Ok(ToolOutcome::Unchanged { reason, tokens });
    if result.get("isError").is_some_and(|v| v.trim() == "true") {
        return unchanged(PassReason::ErrorResult, tokens);
    }
    if blocks.is_empty() && structured.is_none() && !kept.is_empty() {
        return unchanged(PassReason::NonTextContent, tokens);
    }
    if meta.as_ref().is_some_and(proxied) {
        return unchanged(PassReason::Proxied, tokens);
    }
    if !enabled {
        return unchanged(PassReason::Disabled, tokens);
    }
    let operation = memory_operation(call.tool);
    let mut data = None;
    if operation == Some(Operation::Inject) {
        // inject_context decides on the pre-budget records (spec), not on the budgeted text the
        // model would read; without records there is nothing to offload.
        let found = data_of(structured, owned.wrapped(), &blocks, &text)?;
        match memory_records_of(&found) {
            Some(records) => tokens = Counts::of(&minify(records)).tokens(),
            None => return unchanged(PassReason::BudgetedText, tokens),
        }
        data = Some(found);
    }
    if tokens <= threshold {
        return unchanged(PassReason::UnderThreshold, tokens);
    }
    // This tool's settings decided; what follows offloads at its threshold.
    let config = Config {
        enabled: true,
        threshold_tokens: threshold,
        ..config.clone()
    };
    let data = match data {
        Some(data) => data,
        None => data_of(structured, owned.wrapped(), &blocks, &text)?,
    };
    if let Some(operation) = operation
        && let Some(records) = memory_records_of(&data)
    {
        return memory(
            &config, operation, &arguments, records, &text, &result, &kept, tokens, emit,
        );
    }
    generic(&config, call.tool, settings, data, &result, &kept, tokens, emit)
}

/// The JSON text of a memory tool's records as sent, when its data holds memories: the data
/// itself when it is an array, or the array under `memories`, `results`, `hits`, `records` or
/// `result`, each element a memory (a `memory` object, or an `id` and a `namespace`). Read
/// without building a value: the record-level interceptor reads the text in one pass.
fn memory_records_of<'d>(data: &'d Data<'_>) -> Option<&'d str> {
    let Data::Json(raw) = data else { return None };
    let records: &str = match kind(raw) {
        Kind::Array => raw,
        Kind::Object => {
            let members = members(raw)?;
            ["memories", "results", "hits", "records", "result"]
                .iter()
                .find_map(|key| {
                    // A repeated key means its last value, as a parser reads it.
                    members
                        .iter()
                        .rev()
                        .find(|(k, _)| k == key)
                        .map(|(_, v)| *v)
                        .filter(|v| kind(v) == Kind::Array)
                })?
        }
        _ => return None,
    };
    let items = elements(records)?;
    let memory_like = |record: &str| {
        let Some(members) = members(record) else { return false };
        let has = |key: &str| members.iter().any(|(k, _)| k == key);
        members.iter().any(|(k, v)| k == "memory" && kind(v) == Kind::Object) || (has("id") && has("namespace"))
    };
    (!items.is_empty() && items.iter().all(|r| memory_like(r))).then_some(records)
}

/// Rewrites a `tools/list` result's `tools` array (the WIT `rewrite-tools`): no `outputSchema`
/// on a tool whose results may be offloaded, and `lro_extract` appended when `config.extract_tool`.
pub fn rewrite_tools(config: &Config, tools: &str) -> Result<String, Error> {
    config.validate()?;
    let mut tools = match parse::<Value>(tools, RESULT_DEPTH) {
        Ok(Value::Array(items)) => items,
        Ok(other) => {
            return Err(Error::InvalidInput(format!(
                "tools must be a JSON array of tools, got {}",
                TypeName(&other)
            )));
        }
        Err(e) => return Err(Error::InvalidInput(format!("tools is {e}"))),
    };
    for (i, tool) in tools.iter_mut().enumerate() {
        let Some(name) = tool.get("name").and_then(Value::as_str).map(str::to_owned) else {
            return Err(Error::InvalidInput(format!(
                "tools[{i}] is not a tool: it needs a string `name`"
            )));
        };
        if name == "lro_extract" {
            return Err(Error::InvalidInput(
                "the server already has a tool named lro_extract; lro cannot add its own under that name".into(),
            ));
        }
        let settings = config.tools.iter().find(|t| t.name == name);
        if settings.and_then(|t| t.enabled).unwrap_or(config.enabled)
            && let Some(map) = tool.as_object_mut()
        {
            map.remove("outputSchema");
        }
    }
    if config.extract_tool {
        tools.push(crate::extractor::tool_definition());
    }
    Ok(Value::Array(tools).to_string())
}

/// True when the request says a downstream LRO proxy will offload: the 2026-07-28 `_meta`
/// keys or the legacy initialize params, `capabilities.experimental.lro.proxy` or `clientInfo.proxy`.
fn proxied(meta: &Value) -> bool {
    let truthy = |v: Option<&Value>| v.and_then(Value::as_bool) == Some(true);
    let capabilities = meta
        .get("io.modelcontextprotocol/clientCapabilities")
        .or_else(|| meta.get("capabilities"));
    let client = meta
        .get("io.modelcontextprotocol/clientInfo")
        .or_else(|| meta.get("clientInfo"));
    truthy(capabilities.and_then(|c| c.pointer("/experimental/lro/proxy")))
        || truthy(client.and_then(|c| c.get("proxy")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn inject_context_results_with_records_are_offloaded_as_inject() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            output_dir: dir.path().to_str().unwrap().to_owned(),
            threshold_tokens: 50,
            ..Config::default()
        };
        let memories: Vec<Value> = (0..20)
            .map(|i| json!({"id": format!("m{i}"), "namespace": "_semantic/x", "title": "t"}))
            .collect();
        let result =
            json!({"content": [{"type": "text", "text": "## Context"}], "structuredContent": {"memories": memories}});
        let call = ToolCall {
            tool: "inject_context",
            arguments: "{}",
            result: result.to_string().into(),
            meta: None,
        };
        let ToolOutcome::Offloaded { files, .. } = intercept(&config, call, &mut |_| {}).unwrap() else {
            panic!()
        };
        assert!(files[0].contains("/atlatl-inject-"), "{files:?}");
    }

    /// Every section file's header records its writer's expiry: created + ttl_seconds.
    #[test]
    fn generic_headers_record_the_writers_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            output_dir: dir.path().to_str().unwrap().to_owned(),
            threshold_tokens: 50,
            ttl_seconds: 90,
            ..Config::default()
        };
        let rows: Vec<Value> = (0..40).map(|i| json!({"n": i, "name": format!("row {i}")})).collect();
        let result = json!({"content": [{"type": "text", "text": json!({"rows": rows, "more": rows}).to_string()}]});
        let call = ToolCall {
            tool: "list_rows",
            arguments: "{}",
            result: result.to_string().into(),
            meta: None,
        };
        let ToolOutcome::Offloaded { files, .. } = intercept(&config, call, &mut |_| {}).unwrap() else {
            panic!()
        };
        assert_eq!(files.len(), 2, "{files:?}");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
            let created = crate::time::parse_rfc3339_ms(header["timestamp"].as_str().unwrap()).unwrap();
            assert_eq!(
                header["expires_at"],
                crate::time::format_rfc3339_ms(created + 90_000),
                "{file}"
            );
        }
    }

    #[test]
    fn proxy_markers_are_honoured_in_both_shapes() {
        assert!(proxied(
            &json!({"io.modelcontextprotocol/clientCapabilities": {"experimental": {"lro": {"proxy": true}}}})
        ));
        assert!(proxied(
            &json!({"capabilities": {"experimental": {"lro": {"proxy": true}}}})
        ));
        assert!(proxied(&json!({"clientInfo": {"name": "p", "proxy": true}})));
        assert!(!proxied(&json!({"io.modelcontextprotocol/clientCapabilities": {}})));
    }
}
