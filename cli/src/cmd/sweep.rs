//! `lro sweep`: delete expired offload files and print the report.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde_json::{Value, json};

use crate::flags::{Cli, SweepArgs};
use crate::output::print_line;

pub fn run(cli: &Cli, args: &SweepArgs) -> anyhow::Result<()> {
    let runtime = crate::runtime(cli)?;
    let config = crate::config(&runtime, args.config.config.as_deref(), &args.config.flags())?;
    let now = match &args.now {
        Some(text) => lro_core::time::parse_rfc3339_ms(text).with_context(|| {
            format!("--now: expected an RFC 3339 timestamp such as 2026-11-21T10:00:00Z, got {text:?}")
        })?,
        None => u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis())?,
    };
    let report = runtime.sweep(&config, now)?;
    let failed: Vec<Value> = report
        .failed
        .iter()
        .map(|f| json!({"path": f.path, "reason": f.reason}))
        .collect();
    print_line(&json!({"deleted": report.deleted, "kept": report.kept, "failed": failed}).to_string())
}
