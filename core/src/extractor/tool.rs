//! The `lro_extract` MCP tool: its definition for `tools/list`, and its `tools/call` arguments
//! read leniently (numbers as strings, a stringified `params` object) into an extraction.

use serde_json::Value;

use super::{ExtractRequest, Extracted, extract};
use crate::{Config, Error};

/// The `lro_extract` tool as `tools/list` lists it (MCP `Tool`): name, description and input
/// schema. The spec's arguments (`file_path`, `recipe`, `query`, `params`) plus `slurp` and
/// `limit`; the nullable types let a model pass `null` for the one of `recipe`/`query` it does
/// not use, which SDKs that validate arguments against the schema would otherwise refuse.
pub fn tool_definition() -> Value {
    serde_json::json!({
        "name": "lro_extract",
        "description": "Query a large tool result that was offloaded to a JSONL file (the descriptor's file_path), \
            without a shell: run a jq filter over its records (the descriptor's guidance prints ready calls), or, \
            for a memory result, one of its numbered recipes. Give exactly one of recipe and query. The answer is capped; when it says so, narrow the query or pass a larger limit.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "The descriptor's file_path: an offloaded JSONL file."
                },
                "recipe": {
                    "type": ["integer", "null"], "minimum": 1, "maximum": 10,
                    "description": "Only for a memory result, whose descriptor lists numbered jq_recipes: \
                        1=titles+namespaces, 2=filter namespace, 3=search titles, 4=IDs+titles, 5=filter type, \
                        6=count by namespace, 7=filter tag, 8=sort by date, 9 and 10 depend on the detail level. \
                        Other results name their recipes as queries in their guidance. Not with query."
                },
                "query": {
                    "type": ["string", "null"],
                    "description": "A jq filter, run once per record, or once over an array of all records \
                        with slurp. Not with recipe."
                },
                "params": {
                    "type": ["object", "null"],
                    "description": "Values bound as jq variables, never pasted into the program: a recipe's \
                        parameters ({\"namespace\": \"_semantic\"}, {\"keyword\": \"...\"}, {\"memory_type\": \"...\"}, \
                        {\"tag\": \"...\"}, {\"pattern\": \"...\"}), or $name variables of a query."
                },
                "slurp": {
                    "type": ["boolean", "null"],
                    "description": "For a query: run it once over an array of all records, like jq -s \
                        (counting, grouping, sorting). Default false."
                },
                "limit": {
                    "type": ["integer", "null"], "minimum": 1,
                    "description": "The output cap in estimated tokens. Default: the offload threshold."
                }
            },
            "required": ["file_path"],
            "additionalProperties": false
        }
    })
}

/// Runs `lro_extract` from a `tools/call` request's `arguments` object at time `now_ms`. Errors in
/// the arguments (which may quote them) are capped at the config's threshold, as the extraction's
/// are at its `limit`.
pub fn call_tool(config: &Config, arguments: &str, now_ms: u64) -> Result<Extracted, Error> {
    call(config, arguments, now_ms).map_err(|e| super::output::cap_other_error(e, config.threshold_tokens))?
}

/// The extraction's result, or the error in the arguments.
fn call(config: &Config, arguments: &str, now_ms: u64) -> Result<Result<Extracted, Error>, Error> {
    let bad = |m: String| Error::InvalidRequest(m);
    let args = match crate::json_text::parse::<Value>(arguments, crate::mcp::RESULT_DEPTH) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(bad(format!(
                "the arguments must be a JSON object, got {}",
                crate::TypeName(&other)
            )));
        }
        Err(e) => return Err(bad(format!("the arguments are {e}"))),
    };
    const KNOWN: [&str; 6] = ["file_path", "recipe", "query", "params", "slurp", "limit"];
    if let Some(unknown) = args.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(bad(format!(
            "unknown argument `{unknown}`; lro_extract takes {}",
            KNOWN.join(", ")
        )));
    }
    let given = |key: &str| args.get(key).filter(|v| !v.is_null());
    let path = match given("file_path") {
        Some(Value::String(p)) => p.as_str(),
        Some(other) => {
            return Err(bad(format!(
                "`file_path` must be a string, got {}",
                crate::TypeName(other)
            )));
        }
        None => return Err(bad("`file_path` is required: the descriptor's file_path".into())),
    };
    // Models sometimes send numbers as strings ("2") or as 2.0: take them when they are whole.
    // Above u32 is as good as no cap, and out of range for a recipe.
    let whole = |key: &str, v: &Value| -> Result<u32, Error> {
        let n = match v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e15)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        n.map(|n| u32::try_from(n).unwrap_or(u32::MAX))
            .ok_or_else(|| bad(format!("`{key}` must be a whole number, got {v}")))
    };
    let recipe = given("recipe").map(|v| whole("recipe", v)).transpose()?;
    let query = match given("query") {
        None => None,
        Some(Value::String(q)) => Some(q.as_str()),
        Some(other) => {
            return Err(bad(format!(
                "`query` must be a string (a jq filter), got {}",
                crate::TypeName(other)
            )));
        }
    };
    // A stringified object is what some clients send for an object argument.
    let params = match given("params") {
        None => None,
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(Value::String(text)) if text.trim_start().starts_with('{') => Some(text.clone()),
        Some(other) => {
            return Err(bad(format!(
                "`params` must be an object such as {{\"namespace\": \"_semantic\"}}, got {}",
                crate::TypeName(other)
            )));
        }
    };
    let slurp = match given("slurp") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(t)) if t == "true" || t == "false" => t == "true",
        Some(other) => {
            return Err(bad(format!(
                "`slurp` must be true or false, got {}",
                crate::TypeName(other)
            )));
        }
    };
    let limit = given("limit").map(|v| whole("limit", v)).transpose()?;
    if limit == Some(0) {
        return Err(bad("`limit` must be at least 1".into()));
    }
    let request = ExtractRequest {
        path,
        recipe,
        query,
        params: params.as_deref(),
        slurp,
        limit,
    };
    Ok(extract(config, &request, now_ms))
}
