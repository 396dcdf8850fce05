//! `lro offload`: a record-level result set, or with `--tool` a tool's CallToolResult.

use std::io::Write;

use anyhow::Context;
use lro_host::{Detail, Operation, Outcome, Request, ToolCall, ToolOutcome};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::flags::{Cli, OffloadArgs, Op};
use crate::output::{print_line, read_input};

pub fn run(cli: &Cli, args: &OffloadArgs) -> anyhow::Result<()> {
    let runtime = crate::runtime(cli)?;
    let config = crate::writing_config(&runtime, args.config.config.as_deref(), &args.flags())?;
    let input = read_input(args.input.as_deref())?;
    if let Some(tool) = &args.tool {
        let call = ToolCall {
            tool: tool.clone(),
            arguments: args.arguments.clone().unwrap_or_else(|| "{}".into()),
            result: input.clone(),
            meta: args.meta.clone(),
        };
        return match runtime.intercept(&config, &call)? {
            // Unchanged means unchanged: the input's own bytes.
            ToolOutcome::Unchanged(_) => {
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(input.as_bytes()).context("writing standard output")?;
                stdout.flush().context("writing standard output")
            }
            ToolOutcome::Offloaded(offloaded) => print_line(&offloaded.result),
            ToolOutcome::Degraded(degraded) => {
                eprintln!("lro: warning: {}", degraded.warning);
                print_line(&degraded.result)
            }
        };
    }
    let operation = match args.operation {
        Op::Recall => Operation::Recall,
        Op::Search => Operation::Search,
        Op::List => Operation::List,
        Op::Inject => Operation::Inject,
    };
    let (records, text) = if let Op::Inject = args.operation {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct InjectInput {
            records: Box<RawValue>,
            text: String,
        }
        let parsed: InjectInput =
            serde_json::from_str(&input).context("inject input must be {\"records\": [...], \"text\": \"...\"}")?;
        (parsed.records.get().to_owned(), Some(parsed.text))
    } else {
        (input, None)
    };
    let request = Request {
        operation,
        query: args.query.clone(),
        detail: args.detail.map(Detail::from),
        records,
        text,
    };
    let outcome = runtime.offload(&config, &request)?;
    let text = match &outcome {
        Outcome::Inline(inline) => &inline.text,
        Outcome::Offloaded(offloaded) => &offloaded.descriptor,
        Outcome::Degraded(degraded) => {
            eprintln!("lro: warning: {}", degraded.warning);
            &degraded.payload
        }
    };
    print_line(text)
}
