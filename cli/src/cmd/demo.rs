//! `lro demo`: the main job on an embedded default. It starts `lro proxy -- lro sample --serve`
//! as an MCP client would (two processes, stdio), plays the model's side of a session with
//! rmcp's client, and prints what each step returns, then the line that puts the proxy in front
//! of a real server.

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::flags::DemoArgs;
use crate::session::{self, connect, text};

pub fn run(args: &DemoArgs) -> anyhow::Result<()> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    tokio.block_on(demo(args))
}

async fn demo(args: &DemoArgs) -> anyhow::Result<()> {
    let lro = session::exe()?;
    let count = args.count.to_string();
    let mut proxy: Vec<String> = vec!["proxy".into()];
    if let Some(dir) = &args.output_dir {
        proxy.extend(["--output-dir".into(), dir.clone()]);
    }
    proxy.extend([
        "--".into(),
        lro.clone(),
        "sample".into(),
        "--serve".into(),
        "--count".into(),
        count,
    ]);
    println!("# lro demo\n");
    println!(
        "The MCP client here is rmcp's. It starts the proxy in front of a sample memory server, as \
         Claude Desktop would:\n\n    lro {}\n",
        proxy.join(" ").replace(&lro, "lro")
    );
    let session = connect(&proxy).await?;

    let tools = session.client.peer().list_all_tools().await.context("tools/list")?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    println!("## 1. tools/list\n\n    {}\n", names.join(", "));
    println!("The server's two tools, and `lro_extract`, which the proxy adds.\n");

    let all = session
        .call("recall_memories", json!({"query": "", "limit": 0}))
        .await?;
    let descriptor: Value = serde_json::from_str(text(&all))
        .context("the large result was not replaced by a descriptor (is offloading disabled by ATLATL_PROMPT__OFFLOAD__ENABLED?)")?;
    // MCP descriptors name one file for each offloaded part of the result (here, `memories`).
    let file = descriptor
        .get("files")
        .and_then(Value::as_object)
        .and_then(|files| files.values().next())
        .or_else(|| descriptor.get("file_path"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let Some(file) = file else {
        bail!("the descriptor names no file: {descriptor}");
    };
    let records = std::fs::read_to_string(&file)
        .with_context(|| format!("reading {file}"))?
        .lines()
        .count()
        .saturating_sub(1);
    let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    println!(
        "## 2. recall_memories(query=\"\", limit=0)\n\nThe server answered with {records} memories \
         ({:.0} KB). The proxy wrote them to a file and the model receives this descriptor \
         ({} bytes, shortened here) instead:\n",
        size as f64 / 1e3,
        text(&all).len()
    );
    print_descriptor(&descriptor)?;

    println!("## 3. The model asks what it needs, with lro_extract\n");
    for (query, slurp) in [
        ("length", true),
        (
            "group_by(.namespace) | map({namespace: .[0].namespace, memories: length})",
            true,
        ),
        ("select(.tags | index(\"security\")) | .title", false),
    ] {
        let mut arguments = json!({"file_path": file, "query": query});
        if slurp {
            arguments["slurp"] = Value::Bool(true);
        }
        let answer = session.call("lro_extract", arguments).await?;
        if answer.is_error == Some(true) {
            bail!("lro_extract({query}): {}", text(&answer));
        }
        let shown: Vec<&str> = text(&answer).lines().take(6).collect();
        let more = text(&answer).lines().count().saturating_sub(shown.len());
        println!(
            "    lro_extract(query={query:?}{})",
            if slurp { ", slurp=true" } else { "" }
        );
        println!("{}", indent(&shown.join("\n")));
        if more > 0 {
            println!("    ... {more} more lines");
        }
        println!();
    }
    session.client.cancel().await.ok();

    println!(
        "## 4. Your own server\n\nPut the proxy in front of any MCP server by changing one line of \
         your client's configuration, for example in Claude Desktop's claude_desktop_config.json:\n"
    );
    let config = json!({"mcpServers": {"files": {"command": lro, "args": [
        "proxy", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/projects"
    ]}}});
    println!("    {config}\n");
    println!(
        "or with Claude Code:\n\n    claude mcp add files -- {lro} proxy -- npx -y @modelcontextprotocol/server-filesystem ~/projects\n"
    );
    println!("The file above is deleted after its TTL (ttl_seconds, 3600 by default). docs/PROXY.md has the rest.");
    Ok(())
}

/// The descriptor as the model reads it, its long members shortened: the summary, the file,
/// the schema's fields, the recipes' descriptions, and the guidance whole.
fn print_descriptor(descriptor: &Value) -> anyhow::Result<()> {
    let Some(members) = descriptor.as_object() else {
        bail!("the descriptor is not an object: {descriptor}");
    };
    for (key, value) in members {
        match (key.as_str(), value) {
            ("line_schema", schema) => {
                let fields: Vec<&str> = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                println!(
                    "    line_schema: the JSON Schema of a line ({} fields: {})",
                    fields.len(),
                    fields.join(", ")
                );
            }
            ("jq_recipes", Value::Array(recipes)) => {
                println!(
                    "    jq_recipes: {} ready-made jq commands over the file:",
                    recipes.len()
                );
                for recipe in recipes {
                    let description = recipe.get("description").and_then(Value::as_str).unwrap_or("");
                    println!("      - {description}");
                }
            }
            ("guidance", Value::String(guidance)) => {
                println!("    guidance:\n{}", indent(&indent(guidance)));
            }
            (key, value) => println!("    {key}: {value}"),
        }
    }
    println!();
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}
