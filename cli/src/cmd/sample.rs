//! `lro sample`: deterministic MIF records for demos, tests and the benchmark, printed or served
//! over MCP (`lro_cli::sample_server`).

use serde_json::{Value, json};

use crate::flags::{Level, SampleArgs};
use crate::output::print_line;

pub fn run(args: &SampleArgs) -> anyhow::Result<()> {
    let detail = match args.detail {
        Level::Light => lro_core::Detail::Light,
        Level::Medium => lro_core::Detail::Medium,
        Level::Full => lro_core::Detail::Full,
    };
    let records = lro_core::sample::records(detail, args.count, args.seed, args.hits);
    if args.serve {
        return serve(records);
    }
    if args.inject {
        // What a budgeting step would keep: a few titles, as inject_context formats them.
        let mut text = String::from("## Relevant memories\n");
        for r in records.iter().take(5) {
            text.push_str(&format!(
                "- {} ({})\n",
                r["title"].as_str().unwrap_or(""),
                r["namespace"].as_str().unwrap_or("")
            ));
        }
        return print_line(&json!({"records": records, "text": text}).to_string());
    }
    print_line(&Value::Array(records).to_string())
}

fn serve(records: Vec<Value>) -> anyhow::Result<()> {
    use anyhow::Context;
    use rmcp::ServiceExt;
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    tokio.block_on(async {
        let server = lro_cli::sample_server::SampleServer::new(records)
            .serve((tokio::io::stdin(), tokio::io::stdout()))
            .await
            .context("starting the MCP session")?;
        server.waiting().await.context("serving MCP")?;
        anyhow::Ok(())
    })?;
    // Reading stdin blocks a thread that cannot be cancelled: leave without waiting for it.
    std::process::exit(0)
}
