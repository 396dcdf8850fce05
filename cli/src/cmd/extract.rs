//! `lro extract`: what the `lro_extract` tool does, from the shell.

use anyhow::Context;
use lro_host::ExtractRequest;
use serde_json::Value;

use crate::flags::{Cli, ExtractArgs};
use crate::output::print_values;

pub fn run(cli: &Cli, args: &ExtractArgs) -> anyhow::Result<()> {
    let runtime = crate::runtime(cli)?;
    let config = crate::config(&runtime, args.config.config.as_deref(), &args.config.flags())?;
    let path = std::path::absolute(&args.file).with_context(|| format!("resolving {}", args.file.display()))?;
    let path = path
        .to_str()
        .with_context(|| format!("{} is not valid UTF-8", path.display()))?;
    let params = (!args.params.is_empty()).then(|| {
        let map: serde_json::Map<String, Value> = args
            .params
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        Value::Object(map).to_string()
    });
    let request = ExtractRequest {
        path: path.to_owned(),
        recipe: args.recipe,
        query: args.query.clone(),
        params,
        slurp: args.slurp,
        limit: args.limit,
    };
    let result = runtime.extract(&config, &request)?;
    print_values(&result)?;
    if result.truncated || result.total == 0 {
        // What the model would be told about a cut or an empty result.
        let note = result.text.lines().last().unwrap_or_default();
        eprintln!(
            "lro: {}",
            note.trim_start_matches("[lro_extract: ").trim_end_matches(']')
        );
    }
    Ok(())
}
