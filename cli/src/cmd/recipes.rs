//! `lro recipes`: the ten recipes of the configured library for a detail level.

use serde_json::{Value, json};

use crate::flags::{Cli, RecipesArgs};
use crate::output::print_line;

pub fn run(cli: &Cli, args: &RecipesArgs) -> anyhow::Result<()> {
    let runtime = crate::runtime(cli)?;
    let config = crate::config(&runtime, args.config.config.as_deref(), &args.config.flags())?;
    let list = runtime.recipes(&config, args.detail.into(), args.file.as_deref())?;
    if args.json {
        let values: Vec<Value> = list
            .iter()
            .map(|r| {
                let params: Vec<Value> = r
                    .params
                    .iter()
                    .map(|p| json!({"name": p.name, "default": p.default}))
                    .collect();
                json!({"number": r.number, "description": r.description, "program": r.program, "slurp": r.slurp,
                       "raw": r.raw, "params": params, "command": r.command})
            })
            .collect();
        return print_line(&Value::Array(values).to_string());
    }
    let mut text = String::new();
    for r in &list {
        text.push_str(&format!("{:>2}  {}\n    {}\n", r.number, r.description, r.command));
    }
    print_line(text.trim_end())
}
