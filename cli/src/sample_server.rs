//! `lro sample --serve`: an MCP memory server over stdio, holding `lro sample`'s records. It is
//! the upstream of `lro bench`'s proxy section and something to put `lro proxy` in front of
//! without installing another server:
//!
//! ```sh
//! lro proxy -- lro sample --serve --count 2000
//! ```
//!
//! It is rmcp's server (the Rust SDK), and its results have the SDK's own shape
//! (`CallToolResult::structured`): the answer as `structuredContent` and the same JSON as one
//! text block.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

/// The tool that returns memories; `limit` 0 means all that match.
pub const RECALL: &str = "recall_memories";
/// The tool with a small answer: how many memories the store holds.
pub const COUNT: &str = "count_memories";

/// The memory store and its two tools.
#[derive(Clone)]
pub struct SampleServer {
    memories: Arc<Vec<Value>>,
    /// Each memory's JSON text in lower case, what `query` is matched against.
    haystacks: Arc<Vec<String>>,
}

impl SampleServer {
    pub fn new(memories: Vec<Value>) -> Self {
        let haystacks = memories.iter().map(|m| m.to_string().to_lowercase()).collect();
        SampleServer {
            memories: Arc::new(memories),
            haystacks: Arc::new(haystacks),
        }
    }

    fn recall(&self, arguments: &Map<String, Value>) -> Result<Value, ErrorData> {
        let query = match arguments.get("query") {
            None => String::new(),
            Some(Value::String(q)) => q.to_lowercase(),
            Some(_) => return Err(ErrorData::invalid_params("query must be a string", None)),
        };
        let limit = match arguments.get("limit") {
            None => 10,
            Some(v) => v
                .as_u64()
                .ok_or_else(|| ErrorData::invalid_params("limit must be a non-negative integer", None))?,
        };
        let limit = if limit == 0 { usize::MAX } else { limit as usize };
        let memories: Vec<&Value> = self
            .memories
            .iter()
            .zip(self.haystacks.iter())
            .filter(|(_, text)| text.contains(&query))
            .map(|(memory, _)| memory)
            .take(limit)
            .collect();
        Ok(json!({ "memories": memories }))
    }
}

fn tool(name: &'static str, description: &'static str, input: Value, output: Value) -> Tool {
    let object = |v: Value| Arc::new(v.as_object().cloned().unwrap_or_default());
    let mut tool = Tool::new(name, description, object(input));
    tool.output_schema = Some(object(output));
    tool
}

impl ServerHandler for SampleServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("lro-sample-memories", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool(
                RECALL,
                "Memories whose text contains the query (all when it is empty), in store order.",
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Text to look for, any case."},
                        "limit": {"type": "integer", "minimum": 0, "default": 10, "description": "At most this many; 0 for all."}
                    }
                }),
                json!({"type": "object", "properties": {"memories": {"type": "array"}}, "required": ["memories"]}),
            ),
            tool(
                COUNT,
                "How many memories the store holds.",
                json!({"type": "object", "properties": {}}),
                json!({"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let answer = match request.name.as_ref() {
            RECALL => self.recall(&arguments)?,
            COUNT => json!({"count": self.memories.len()}),
            other => return Err(ErrorData::invalid_params(format!("no tool named {other:?}"), None)),
        };
        Ok(CallToolResponse::Complete(CallToolResult::structured(answer)))
    }
}
