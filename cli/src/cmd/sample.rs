//! `lro sample`: deterministic MIF records for demos, tests and the benchmark.

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
