//! A Rust MCP server (rmcp, the Rust SDK) with LRO: a large tool result becomes a JSONL file and
//! a descriptor, and `lro_extract` answers jq over the file. The server is written as rmcp's own
//! examples write one; LRO is the one line marked in `main`.
//!
//! ```sh
//! cargo run -p lro-host --features rmcp --example rmcp_server     # MCP over stdio
//! lro proxy -- target/debug/examples/rmcp_server                    # (not needed: it has LRO)
//! ```
//!
//! Configuration comes from the `ATLATL_PROMPT__OFFLOAD__*` variables (docs/CONFIGURATION.md);
//! files go to the same directory as the `lro` command's.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{ServiceExt, schemars, tool, tool_router};
use serde::{Deserialize, Serialize};

/// The team's notes.
#[derive(Clone)]
pub struct Notes;

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Search {
    /// Text to look for, any case; empty for every note.
    #[serde(default)]
    pub query: String,
    /// How many notes the store holds (for trying sizes).
    #[serde(default = "default_count")]
    pub count: usize,
}

fn default_count() -> usize {
    300
}

#[derive(Serialize, Deserialize, PartialEq, Debug, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Note {
    pub id: String,
    pub topic: String,
    pub title: String,
    pub body: String,
}

#[derive(Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Found {
    pub notes: Vec<Note>,
}

const TOPICS: [&str; 5] = ["caching", "deploys", "auth", "search", "billing"];

/// The first `count` notes, the same every time.
pub fn notes(count: usize) -> Vec<Note> {
    (0..count)
        .map(|i| {
            let topic = TOPICS[i % TOPICS.len()];
            Note {
                id: format!("note-{i:04}"),
                topic: topic.to_owned(),
                title: format!("{topic} note {i}"),
                body: format!("Note {i} about {topic}: decided after review {}.", i % 11),
            }
        })
        .collect()
}

#[tool_router(server_handler)]
impl Notes {
    #[tool(description = "Search the team's notes: every note whose title or body contains the query.")]
    fn search_notes(&self, Parameters(search): Parameters<Search>) -> Json<Found> {
        let query = search.query.to_lowercase();
        let notes = notes(search.count)
            .into_iter()
            .filter(|n| format!("{} {}", n.title, n.body).to_lowercase().contains(&query))
            .collect();
        Json(Found { notes })
    }

    #[tool(description = "How many notes the store holds by default.")]
    fn count_notes(&self) -> String {
        default_count().to_string()
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = lro_host::rmcp::WithLro::new(Notes)?; // LRO: offloading, lro_extract, sweeping
    server
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await?
        .waiting()
        .await?;
    Ok(())
}
