//! The MCP-level interceptor: a tool call's `CallToolResult` in, the `CallToolResult` to forward
//! out, for any tool. Memory tools go through the record-level interceptor ([`crate::offload`]);
//! every other tool through the generic profile: its data split into sections, each section a
//! JSONL file with an inferred line schema and generated recipes, in the descriptor shape of the
//! Python offloading library the spec accompanies (sections, `inline_keys`, `lro_warning`).

use std::collections::{HashMap, HashSet};
use std::fs;

use serde_json::{Map, Value, json};
use ulid::Ulid;

use crate::estimate::Counts;
use crate::offload::{self, Request};
use crate::recipes::shell_quote;
use crate::time::format_rfc3339_ms;
use crate::{Config, Detail, Error, Event, Operation, Outcome, TypeName, json_string};

/// Settings for one tool (`[prompt.offload.tools.NAME]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSettings {
    /// The tool's name.
    pub name: String,
    /// Overrides `enabled`.
    pub enabled: Option<bool>,
    /// Overrides `threshold`.
    pub threshold: Option<u32>,
    /// Keys of the result object to offload as sections (automatic when None).
    pub sections: Option<Vec<String>>,
    /// Keys to keep in the descriptor (automatic when None).
    pub inline_keys: Option<Vec<String>>,
}

/// A tool call as middleware sees it (the WIT `tool-call` record).
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The call's arguments, JSON text.
    pub arguments: &'a str,
    /// The `CallToolResult`, JSON text.
    pub result: &'a str,
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

/// The most sections one result is split into; beyond it, small arrays join the `other` section.
const MAX_SECTIONS: usize = 4;
/// An array of at least this many estimated tokens becomes a section of its own.
const SECTION_MIN_TOKENS: u32 = 100;
/// Scalar values up to this size are kept in the descriptor, up to `INLINE_BUDGET` in all.
const INLINE_MAX_TOKENS: u32 = 40;
const INLINE_BUDGET: u32 = 150;
/// The descriptor of a generic result stays under this many estimated tokens.
pub const DESCRIPTOR_BUDGET: u32 = 800;
/// Fields listed in an inferred schema.
const SCHEMA_FIELDS: usize = 16;
/// Descriptor keys an inline key may not take.
const RESERVED: [&str; 6] = ["offloaded", "summary", "files", "schemas", "jq_recipes", "guidance"];

/// Intercepts one tool result.
pub fn intercept(config: &Config, call: &ToolCall<'_>, emit: &mut dyn FnMut(Event)) -> Result<ToolOutcome, Error> {
    config.validate()?;
    let mut result: Map<String, Value> = match serde_json::from_str(call.result) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(Error::InvalidInput(format!(
                "result must be a CallToolResult object, got {}",
                TypeName(&other)
            )));
        }
        Err(e) => return Err(Error::InvalidInput(format!("result is not valid JSON: {e}"))),
    };
    let arguments = match serde_json::from_str(call.arguments) {
        Ok(Value::Object(map)) => map,
        Ok(Value::Null) => Map::new(),
        Ok(other) => {
            return Err(Error::InvalidInput(format!(
                "arguments must be a JSON object, got {}",
                TypeName(&other)
            )));
        }
        Err(e) => return Err(Error::InvalidInput(format!("arguments are not valid JSON: {e}"))),
    };
    let meta: Option<Value> = match call.meta {
        None => None,
        Some(text) => {
            Some(serde_json::from_str(text).map_err(|e| Error::InvalidInput(format!("meta is not valid JSON: {e}")))?)
        }
    };
    let settings = config.tools.iter().find(|t| t.name == call.tool);
    let enabled = settings.and_then(|t| t.enabled).unwrap_or(config.enabled);
    let threshold = settings.and_then(|t| t.threshold).unwrap_or(config.threshold);

    let content = match result.get("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(other) => {
            return Err(Error::InvalidInput(format!(
                "result.content must be an array, got {}",
                TypeName(other)
            )));
        }
    };
    let blocks: Vec<&str> = content
        .iter()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    let text = blocks.join("\n");
    // One estimate, of what the model reads: the text content, or the structured content when
    // there is no text. The decision and the descriptor both carry it.
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    let mut tokens = match (blocks.is_empty(), structured) {
        (true, Some(value)) => estimate_value(value),
        _ => Counts::of(&text).tokens(),
    };
    let unchanged = |reason, tokens| Ok(ToolOutcome::Unchanged { reason, tokens });
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return unchanged(PassReason::ErrorResult, tokens);
    }
    if content
        .iter()
        .any(|c| c.get("type").and_then(Value::as_str) != Some("text"))
    {
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
    // For inject the records' JSON text is made once: for the decision, then for the file.
    let mut inject_records = None;
    if operation == Some(Operation::Inject) {
        // inject_context decides on the pre-budget records (spec), not on the budgeted text the
        // model would read; without records there is nothing to offload.
        let found = data_of(structured, &blocks, &text);
        match &found {
            Data::Json(value) if let Some(records) = memory_records(value) => {
                let records = serde_json::to_string(records).map_err(|e| Error::InvalidInput(e.to_string()))?;
                tokens = Counts::of(&records).tokens();
                inject_records = Some(records);
            }
            _ => return unchanged(PassReason::BudgetedText, tokens),
        }
        data = Some(found);
    }
    if tokens <= threshold {
        return unchanged(PassReason::UnderThreshold, tokens);
    }
    // This tool's settings decided; what follows offloads at its threshold.
    let config = Config {
        enabled: true,
        threshold,
        ..config.clone()
    };
    let data = data.unwrap_or_else(|| data_of(structured, &blocks, &text));
    if let (Some(operation), Data::Json(value)) = (operation, &data)
        && let Some(records) = memory_records(value)
    {
        let records = match inject_records {
            Some(text) => text,
            None => serde_json::to_string(records).map_err(|e| Error::InvalidInput(e.to_string()))?,
        };
        return memory(
            &config,
            operation,
            &arguments,
            records,
            &text,
            &mut result,
            tokens,
            emit,
        );
    }
    generic(&config, call.tool, settings, data, &mut result, tokens, emit)
}

/// The data of a result, as the SDKs send it: structured content (unwrapped when it is a
/// single-key wrapper of JSON text, as the Python SDK makes of a tool returning `str`), else the
/// text content parsed as JSON, else one JSON value per text block (the Python SDK's shape for
/// a tool returning a list), else plain text.
fn data_of(structured: Option<&Value>, blocks: &[&str], text: &str) -> Data {
    let parsed = |t: &str| serde_json::from_str::<Value>(t).ok();
    if let Some(value) = structured {
        if let Some(inner) = wrapped_text(value).and_then(parsed)
            && (inner.is_array() || inner.is_object())
        {
            return Data::Json(inner);
        }
        return Data::Json(value.clone());
    }
    if let Some(v) = parsed(text).filter(|v| v.is_array() || v.is_object()) {
        return Data::Json(v);
    }
    if blocks.len() > 1
        && let Some(values) = blocks.iter().map(|b| parsed(b)).collect::<Option<Vec<Value>>>()
    {
        return Data::Json(Value::Array(values));
    }
    Data::Text(text.to_owned())
}

/// The string of a single-key object such as `{"result": "..."}`.
fn wrapped_text(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.values().next()?.as_str(),
        _ => None,
    }
}

/// Rewrites a `tools/list` result's `tools` array (the WIT `rewrite-tools`): no `outputSchema`
/// on a tool whose results may be offloaded, and `lro_extract` appended when `config.native`.
pub fn rewrite_tools(config: &Config, tools: &str) -> Result<String, Error> {
    config.validate()?;
    let mut tools = match serde_json::from_str::<Value>(tools) {
        Ok(Value::Array(items)) => items,
        Ok(other) => {
            return Err(Error::InvalidInput(format!(
                "tools must be a JSON array of tools, got {}",
                TypeName(&other)
            )));
        }
        Err(e) => return Err(Error::InvalidInput(format!("tools is not valid JSON: {e}"))),
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
    if config.native {
        tools.push(crate::extract::tool_definition());
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

enum Data {
    Json(Value),
    Text(String),
}

fn memory_operation(tool: &str) -> Option<Operation> {
    match tool {
        "recall_memories" => Some(Operation::Recall),
        "list_memories" => Some(Operation::List),
        "inject_context" => Some(Operation::Inject),
        t if t.contains("memor") && t.contains("search") => Some(Operation::Search),
        _ => None,
    }
}

/// The records of a memory tool's result: a top-level array, or the array under `memories`,
/// `results`, `hits` or `records`, of objects that look like memories or search hits.
fn memory_records(value: &Value) -> Option<&Vec<Value>> {
    let records = match value {
        Value::Array(items) => items,
        Value::Object(map) => ["memories", "results", "hits", "records", "result"]
            .iter()
            .find_map(|k| map.get(*k)?.as_array())?,
        _ => return None,
    };
    let memory_like = |r: &Value| {
        r.get("memory").is_some_and(Value::is_object) || (r.get("id").is_some() && r.get("namespace").is_some())
    };
    (!records.is_empty() && records.iter().all(memory_like)).then_some(records)
}

#[allow(clippy::too_many_arguments, reason = "one private call site")]
fn memory(
    config: &Config,
    operation: Operation,
    arguments: &Map<String, Value>,
    records: String,
    text: &str,
    result: &mut Map<String, Value>,
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
        records: &records,
        text: inject_text,
    };
    // The decision was made on what the model would read; the descriptor carries that estimate.
    match offload::offload_estimated(config, &request, Some(tokens), emit)? {
        Outcome::Offloaded { descriptor, path, .. } => {
            let value: Value = serde_json::from_str(&descriptor).expect("the descriptor is JSON");
            Ok(ToolOutcome::Offloaded {
                result: replace(result, &descriptor, value),
                files: vec![path],
                tokens,
            })
        }
        Outcome::Degraded { payload, warning, .. } => {
            let value: Value = serde_json::from_str(&payload).expect("the payload is JSON");
            Ok(ToolOutcome::Degraded {
                result: replace(result, &payload, value),
                warning,
            })
        }
        // Not reached: the estimate given is over the threshold. Forwarding the original is
        // the safe answer should that ever change.
        Outcome::Inline { .. } => Ok(ToolOutcome::Unchanged {
            reason: PassReason::UnderThreshold,
            tokens,
        }),
    }
}

/// The result with its content replaced by `text`, and its structured content (if it had any)
/// by `value`; every other field (`_meta`, `resultType`, ...) stays as it was. Structured content
/// that was a single-key wrapper of text (`{"result": "..."}`) stays one, holding `text`, so it
/// still matches the schema such a wrapper comes with.
fn replace(result: &mut Map<String, Value>, text: &str, value: Value) -> String {
    result.insert("content".into(), json!([{"type": "text", "text": text}]));
    if let Some(structured) = result.get_mut("structuredContent").filter(|v| !v.is_null()) {
        *structured = match structured {
            Value::Object(map) if map.len() == 1 && map.values().all(Value::is_string) => {
                let key = map.keys().next().cloned().unwrap_or_default();
                json!({ key: text })
            }
            _ => value,
        };
    }
    Value::Object(std::mem::take(result)).to_string()
}

/// One file's worth of the data.
struct Section {
    key: String,
    lines: Vec<Value>,
}

/// `[a-z0-9_]`, for file names and recipe names.
pub fn sanitize(name: &str, max: usize) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(max)
        .collect();
    if out.is_empty() {
        out.push('x');
    }
    out
}

fn estimate_value(value: &Value) -> u32 {
    Counts::of(&value.to_string()).tokens()
}

/// Splits the data into inline keys and sections.
fn split(data: Data, settings: Option<&ToolSettings>) -> (Map<String, Value>, Vec<Section>) {
    let object = match data {
        Data::Text(text) => {
            let lines = text
                .lines()
                .enumerate()
                .map(|(i, l)| json!({"n": i + 1, "text": l}))
                .collect();
            return (
                Map::new(),
                vec![Section {
                    key: "lines".into(),
                    lines,
                }],
            );
        }
        Data::Json(Value::Array(items)) => {
            return (
                Map::new(),
                vec![Section {
                    key: "results".into(),
                    lines: items,
                }],
            );
        }
        Data::Json(Value::Object(map)) => map,
        Data::Json(other) => {
            return (
                Map::new(),
                vec![Section {
                    key: "results".into(),
                    lines: vec![other],
                }],
            );
        }
    };
    let chosen: Option<HashSet<&str>> = settings
        .and_then(|s| s.sections.as_ref())
        .map(|s| s.iter().map(String::as_str).collect());
    let wanted_inline: Option<HashSet<&str>> = settings
        .and_then(|s| s.inline_keys.as_ref())
        .map(|s| s.iter().map(String::as_str).collect());

    let mut arrays: Vec<(String, Vec<Value>, u32)> = Vec::new();
    let mut inline = Map::new();
    let mut other = Vec::new();
    let mut inline_used = 0;
    for (key, value) in object {
        let size = estimate_value(&value);
        let is_section = match &chosen {
            Some(keys) => keys.contains(key.as_str()) && value.is_array(),
            None => value.is_array() && size >= SECTION_MIN_TOKENS,
        };
        if is_section {
            let Value::Array(items) = value else {
                unreachable!("checked above")
            };
            arrays.push((key, items, size));
            continue;
        }
        let inline_ok = match &wanted_inline {
            Some(keys) => keys.contains(key.as_str()),
            None => {
                !value.is_array()
                    && !value.is_object()
                    && size <= INLINE_MAX_TOKENS
                    && inline_used + size <= INLINE_BUDGET
            }
        };
        if inline_ok && !RESERVED.contains(&key.as_str()) {
            inline_used += size;
            inline.insert(key, value);
        } else {
            other.push(json!({"key": key, "value": value}));
        }
    }
    // Keep the largest arrays as sections; the rest joins `other`, so nothing is left out.
    let room = if other.is_empty() {
        MAX_SECTIONS
    } else {
        MAX_SECTIONS - 1
    };
    if arrays.len() > room {
        arrays.sort_by_key(|a| std::cmp::Reverse(a.2));
        for (key, items, _) in arrays.split_off(room.saturating_sub(1).max(1)) {
            other.push(json!({"key": key, "value": items}));
        }
    }
    let mut sections: Vec<Section> = arrays
        .into_iter()
        .map(|(key, lines, _)| Section { key, lines })
        .collect();
    if !other.is_empty() {
        let key = if sections.iter().any(|s| s.key == "other") {
            "other_keys"
        } else {
            "other"
        };
        sections.push(Section {
            key: key.into(),
            lines: other,
        });
    }
    (inline, sections)
}

#[allow(clippy::too_many_arguments, reason = "one private call site")]
fn generic(
    config: &Config,
    tool: &str,
    settings: Option<&ToolSettings>,
    data: Data,
    result: &mut Map<String, Value>,
    tokens: u32,
    emit: &mut dyn FnMut(Event),
) -> Result<ToolOutcome, Error> {
    let (inline, sections) = split(data, settings);
    let ulid = Ulid::generate();
    let tool_name = sanitize(tool, 40);
    let mut used_names = HashSet::new();
    // Every file's text first: the storage caps are checked for all of them at once.
    let mut planned = Vec::new();
    for section in &sections {
        let mut section_name = sanitize(&section.key, 24);
        while !used_names.insert(section_name.clone()) {
            section_name.push('_');
        }
        let operation = format!("{tool_name}-{section_name}");
        let name = format!("{}-{operation}-{ulid}.jsonl", config.prefix);
        let lines: Vec<String> = section.lines.iter().map(Value::to_string).collect();
        let section_tokens = lines.iter().fold(Counts::default(), |c, l| c + Counts::of(l)).tokens();
        let header = json!({
            "type": "lro_header", "operation": operation, "query": null, "count": lines.len(),
            "schema_version": config.schema_version, "timestamp": format_rfc3339_ms(ulid.timestamp_ms()),
            "estimated_tokens": section_tokens, "detail": "generic", "tool": tool, "section": section.key,
        })
        .to_string();
        planned.push((name, operation, header, lines, section_tokens));
    }
    let size: u64 = planned
        .iter()
        .map(|(_, _, header, lines, _)| offload::file_size(header, lines.iter().map(String::as_str)))
        .sum();
    let mut files = Vec::new();
    let mut failure = offload::prepare_write(config, u32::try_from(planned.len()).unwrap_or(u32::MAX), size, emit)
        .err()
        .map(|e| match planned.first() {
            Some((name, ..)) => format!("writing {}/{name}: {e}", config.dir_base()),
            None => format!("writing into {}: {e}", config.dir_base()),
        });
    for (name, operation, header, lines, section_tokens) in &planned {
        if failure.is_some() {
            break;
        }
        let path = format!("{}/{name}", config.dir_base());
        match offload::write_atomically(config, name, header, lines.iter().map(String::as_str)) {
            Ok(bytes) => files.push((path, lines.len(), *section_tokens, bytes, operation.clone())),
            Err(e) => failure = Some(format!("writing {path}: {e}")),
        }
    }
    if let Some(error) = failure {
        // All sections or none: remove what was written before the failure.
        for (path, ..) in &files {
            let _ = fs::remove_file(path);
        }
        let (value, warning, total, returned) = degrade(config, &inline, &sections, &error);
        let text = value.to_string();
        emit(Event::OffloadWriteFailed {
            path: config.dir.clone(),
            operation: tool.to_owned(),
            error,
            total,
            returned,
        });
        return Ok(ToolOutcome::Degraded {
            result: replace(result, &text, value),
            warning,
        });
    }
    for (path, count, section_tokens, bytes, operation) in &files {
        emit(Event::OffloadCreated {
            path: path.clone(),
            operation: operation.clone(),
            count: u32::try_from(*count).unwrap_or(u32::MAX),
            tokens: *section_tokens,
            bytes: *bytes,
        });
    }
    let paths: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    let section_tokens: Vec<u32> = files.iter().map(|f| f.2).collect();
    let descriptor = generic_descriptor(config, &inline, &sections, &paths, &section_tokens, tokens);
    let text = descriptor.to_string();
    Ok(ToolOutcome::Offloaded {
        result: replace(result, &text, descriptor),
        files: paths.iter().map(|p| (*p).to_owned()).collect(),
        tokens,
    })
}

/// A JSON Schema of the section's lines, inferred: field names in first-seen order, their JSON
/// types, and which fields every line has.
pub fn infer_schema(lines: &[Value]) -> Value {
    fn type_name(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    fn types(set: &[&'static str]) -> Value {
        // "integer" is a "number" too: list "number" once when both occur. A fixed order keeps
        // the schema the same whatever order the lines come in.
        const ORDER: [&str; 7] = ["string", "integer", "number", "boolean", "object", "array", "null"];
        let mut set: Vec<&str> = set.to_vec();
        if set.contains(&"number") {
            set.retain(|t| *t != "integer");
        }
        set.sort_by_key(|t| ORDER.iter().position(|o| o == t));
        if set.len() == 1 { json!(set[0]) } else { json!(set) }
    }
    if !lines.iter().all(Value::is_object) {
        let mut seen: Vec<&'static str> = Vec::new();
        for l in lines {
            let t = type_name(l);
            if !seen.contains(&t) {
                seen.push(t);
            }
        }
        return json!({"type": types(&seen)});
    }
    let mut order: Vec<&str> = Vec::new();
    let mut seen: HashMap<&str, (Vec<&'static str>, usize)> = HashMap::new();
    for line in lines {
        for (key, value) in line.as_object().expect("checked above") {
            let entry = seen.entry(key.as_str()).or_insert_with(|| {
                order.push(key.as_str());
                (Vec::new(), 0)
            });
            let t = type_name(value);
            if !entry.0.contains(&t) {
                entry.0.push(t);
            }
            entry.1 += 1;
        }
    }
    let listed: Vec<&str> = order
        .iter()
        .copied()
        .filter(|k| k.len() <= 40)
        .take(SCHEMA_FIELDS)
        .collect();
    let mut properties = Map::new();
    for key in &listed {
        properties.insert((*key).to_owned(), json!({"type": types(&seen[key].0)}));
    }
    let required: Vec<&str> = listed.iter().copied().filter(|k| seen[k].1 == lines.len()).collect();
    let mut schema = json!({"type": "object", "properties": properties, "required": required});
    if order.len() > listed.len() {
        schema["$comment"] = json!(format!("{} more fields not listed", order.len() - listed.len()));
    }
    schema
}

/// A generated recipe: a name, and the jq program with its mode.
struct GenRecipe {
    name: String,
    program: String,
    slurp: bool,
}

/// Recipes for one section: list, count, first 10, counts by each low-cardinality string field
/// (up to two), and a keyword search on the main text field.
fn section_recipes(key: &str, lines: &[Value]) -> Vec<GenRecipe> {
    let s = sanitize(key, 24);
    let mut out = vec![
        GenRecipe {
            name: format!("list_all_{s}"),
            program: ".".into(),
            slurp: false,
        },
        GenRecipe {
            name: format!("count_{s}"),
            program: "length".into(),
            slurp: true,
        },
        GenRecipe {
            name: format!("first_10_{s}"),
            program: ".[:10][]".into(),
            slurp: true,
        },
    ];
    if !lines.iter().all(Value::is_object) || lines.is_empty() {
        return out;
    }
    // Per string field: how many lines have it, its distinct values (capped), its total length,
    // and how many of its values are prose (contain a space).
    let mut order: Vec<&str> = Vec::new();
    let mut stats: HashMap<&str, (usize, HashSet<&str>, usize, usize)> = HashMap::new();
    for line in lines {
        for (k, v) in line.as_object().expect("checked above") {
            if let Value::String(text) = v {
                let entry = stats.entry(k.as_str()).or_insert_with(|| {
                    order.push(k.as_str());
                    (0, HashSet::new(), 0, 0)
                });
                entry.0 += 1;
                if entry.1.len() <= 21 {
                    entry.1.insert(text.as_str());
                }
                entry.2 += text.chars().count();
                entry.3 += usize::from(text.contains(' '));
            }
        }
    }
    let n = lines.len();
    let field = |k: &str| json_string(k);
    let mut grouped = 0;
    for k in &order {
        let (present, distinct, ..) = &stats[k];
        let low = distinct.len() >= 2 && distinct.len() <= 20 && distinct.len() * 2 <= n;
        if grouped < 2 && low && present * 5 >= n * 4 && k.len() <= 40 {
            grouped += 1;
            out.push(GenRecipe {
                name: format!("count_by_{}_{s}", sanitize(k, 24)),
                program: format!(
                    "group_by(.[{f}]) | map({{({f}): .[0][{f}], count: length}})",
                    f = field(k)
                ),
                slurp: true,
            });
        }
    }
    // The main text field: prose (most values contain a space), the longest on average.
    let main_text = order
        .iter()
        .filter(|k| k.len() <= 40 && stats[*k].3 * 2 >= stats[*k].0)
        .map(|k| (*k, stats[k].2 / stats[k].0.max(1)))
        .filter(|(_, avg)| *avg >= 20)
        .max_by_key(|(_, avg)| *avg);
    if let Some((k, _)) = main_text {
        out.push(GenRecipe {
            name: format!("search_{}_{s}", sanitize(k, 24)),
            program: format!(
                "select((.[{}] // \"\") | tostring | test(\"keyword\"; \"i\"))",
                field(k)
            ),
            slurp: false,
        });
    }
    out
}

/// The shell command of a generated recipe over `path`.
pub fn recipe_command(path: &str, program: &str, slurp: bool) -> String {
    format!(
        "tail -n +2 {} | jq -c{} {}",
        shell_quote(path),
        if slurp { "s" } else { "" },
        shell_quote(program)
    )
}

fn generic_descriptor(
    config: &Config,
    inline: &Map<String, Value>,
    sections: &[Section],
    paths: &[&str],
    section_tokens: &[u32],
    tokens: u32,
) -> Value {
    // Computed once; the levels below only choose how much of it to show.
    let schemas: Vec<Value> = sections.iter().map(|s| infer_schema(&s.lines)).collect();
    let recipes: Vec<Vec<GenRecipe>> = sections.iter().map(|s| section_recipes(&s.key, &s.lines)).collect();
    let guidance = generic_guidance(config.native, sections, paths, tokens);
    // Richest first; each step drops what helps least until the descriptor fits its budget.
    for level in 0..4 {
        let mut d = Map::new();
        d.insert("offloaded".into(), json!(true));
        for (k, v) in inline {
            d.insert(k.clone(), v.clone());
        }
        let mut summary = Map::new();
        let mut files = Map::new();
        let mut schema_map = Map::new();
        let mut recipe_map = Map::new();
        for (i, (section, path)) in sections.iter().zip(paths).enumerate() {
            summary.insert(
                section.key.clone(),
                json!({"count": section.lines.len(), "estimated_tokens": section_tokens[i]}),
            );
            files.insert(section.key.clone(), json!(path));
            if level < 2 {
                let mut schema = schemas[i].clone();
                if level == 1 {
                    schema.as_object_mut().expect("an object").remove("required");
                }
                schema_map.insert(
                    section.key.clone(),
                    json!({"description": "Line 1 is header metadata. Lines 2+ are data objects.", "line_schema": schema}),
                );
            }
            let keep = if level < 3 { recipes[i].len() } else { 2 };
            for r in recipes[i].iter().take(keep) {
                recipe_map.insert(r.name.clone(), json!(recipe_command(path, &r.program, r.slurp)));
            }
        }
        d.insert("summary".into(), Value::Object(summary));
        d.insert("files".into(), Value::Object(files));
        if level < 2 {
            d.insert("schemas".into(), Value::Object(schema_map));
        }
        d.insert("jq_recipes".into(), Value::Object(recipe_map));
        d.insert("guidance".into(), json!(guidance));
        let value = Value::Object(d);
        if estimate_value(&value) <= DESCRIPTOR_BUDGET || level == 3 {
            return value;
        }
    }
    unreachable!("the loop returns at its last level")
}

fn generic_guidance(native: bool, sections: &[Section], paths: &[&str], tokens: u32) -> String {
    let keys: Vec<&str> = sections.iter().map(|s| s.key.as_str()).collect();
    let mut text = format!(
        "Results offloaded to JSONL ({} section(s): {}; ~{tokens} tokens saved).\nFiles:\n",
        keys.len(),
        keys.join(", ")
    );
    for (key, path) in keys.iter().zip(paths) {
        text.push_str(&format!("  - {key}: {path}\n"));
    }
    if native {
        text.push_str(&format!(
            "\nUse the `lro_extract` tool with a jq query, e.g. lro_extract(file_path={}, query=\".\"), \
             or with slurp=true for whole-set questions such as query=\"length\".\n",
            json_string(paths.first().copied().unwrap_or_default())
        ));
    } else {
        text.push_str("\nUse the jq_recipes above to extract specific data, or read files directly.\n");
    }
    text.push_str("Header line (line 1) contains metadata; data objects start at line 2.");
    text
}

/// The truncated fallback: the inline keys, then the leading lines of each section that fit the
/// threshold, with counts and a warning.
fn degrade(
    config: &Config,
    inline: &Map<String, Value>,
    sections: &[Section],
    error: &str,
) -> (Value, String, u32, u32) {
    let total: usize = sections.iter().map(|s| s.lines.len()).sum();
    let warning_for = |returned: usize| {
        format!(
            "LRO could not write the offload file ({error}). Showing {returned} of {total} items, truncated to fit {} tokens; \
             the rest is not available. Narrow the request to see them.",
            config.threshold
        )
    };
    let build = |kept: &[usize], returned: usize| {
        let mut d = Map::new();
        d.insert("truncated".into(), json!(true));
        d.insert("total_count".into(), json!(total));
        d.insert("returned_count".into(), json!(returned));
        d.insert("lro_warning".into(), json!(warning_for(returned)));
        for (k, v) in inline {
            d.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (section, n) in sections.iter().zip(kept) {
            d.insert(section.key.clone(), Value::Array(section.lines[..*n].to_vec()));
        }
        Value::Object(d)
    };
    let mut kept = vec![0; sections.len()];
    let mut budget = Counts::of(&build(&kept, total).to_string());
    'sections: for (i, section) in sections.iter().enumerate() {
        for (j, line) in section.lines.iter().enumerate() {
            let next = budget
                + Counts::of(&line.to_string())
                + Counts {
                    other: u64::from(j > 0),
                    cjk: 0,
                };
            if next.tokens() > config.threshold {
                break 'sections;
            }
            budget = next;
            kept[i] += 1;
        }
    }
    let returned: usize = kept.iter().sum();
    let value = build(&kept, returned);
    let total32 = u32::try_from(total).unwrap_or(u32::MAX);
    (
        value,
        warning_for(returned),
        total32,
        u32::try_from(returned).unwrap_or(u32::MAX),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_record_types_and_required_fields() {
        let lines = vec![
            json!({"a": 1, "b": "x", "c": null}),
            json!({"a": 2.5, "b": "y"}),
            json!({"a": 3, "b": null, "d": [1]}),
        ];
        let schema = infer_schema(&lines);
        assert_eq!(schema["properties"]["a"]["type"], "number");
        assert_eq!(schema["properties"]["b"]["type"], json!(["string", "null"]));
        assert_eq!(schema["properties"]["d"]["type"], "array");
        assert_eq!(schema["required"], json!(["a", "b"]));
        assert_eq!(
            infer_schema(&[json!(1), json!("x")])["type"],
            json!(["string", "integer"])
        );
    }

    #[test]
    fn objects_split_into_sections_inline_keys_and_the_rest() {
        let items: Vec<Value> = (0..50)
            .map(|i| json!({"id": i, "title": format!("issue number {i} with a title")}))
            .collect();
        let data = json!({"total_count": 500, "incomplete_results": false, "items": items, "facets": {"a": 1}});
        let (inline, sections) = split(Data::Json(data), None);
        assert_eq!(inline.keys().collect::<Vec<_>>(), ["total_count", "incomplete_results"]);
        assert_eq!(
            sections.iter().map(|s| s.key.as_str()).collect::<Vec<_>>(),
            ["items", "other"]
        );
        assert_eq!(sections[1].lines, [json!({"key": "facets", "value": {"a": 1}})]);
    }

    #[test]
    fn many_arrays_fold_into_other_so_nothing_is_lost() {
        let mut data = Map::new();
        for k in 0..10 {
            data.insert(
                format!("list{k}"),
                json!((0..40).map(|i| format!("value {i} of list {k}")).collect::<Vec<_>>()),
            );
        }
        let (_, sections) = split(Data::Json(Value::Object(data)), None);
        assert!(sections.len() <= MAX_SECTIONS);
        let lines: usize = sections
            .iter()
            .filter(|s| s.key != "other")
            .map(|s| s.lines.len())
            .sum();
        let folded = sections.iter().find(|s| s.key == "other").unwrap().lines.len();
        assert_eq!(lines / 40 + folded, 10);
    }

    #[test]
    fn recipes_group_low_cardinality_fields_and_search_the_main_text() {
        let lines: Vec<Value> = (0..40)
            .map(|i| json!({"state": if i % 3 == 0 { "open" } else { "closed" }, "id": format!("id-{i}"), "body": format!("a long body of text number {i} for search")}))
            .collect();
        let names: Vec<String> = section_recipes("items", &lines).into_iter().map(|r| r.name).collect();
        assert_eq!(
            names,
            [
                "list_all_items",
                "count_items",
                "first_10_items",
                "count_by_state_items",
                "search_body_items"
            ]
        );
    }

    #[test]
    fn inject_context_results_with_records_are_offloaded_as_inject() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            dir: dir.path().to_str().unwrap().to_owned(),
            threshold: 50,
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
            result: &result.to_string(),
            meta: None,
        };
        let ToolOutcome::Offloaded { files, .. } = intercept(&config, &call, &mut |_| {}).unwrap() else {
            panic!()
        };
        assert!(files[0].contains("/atlatl-inject-"), "{files:?}");
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
