//! `lro`: offload large MCP results to JSONL through the LRO component, and look after the files.
//!
//! stdout carries the result (what the tool would return), stderr diagnostics. The flags are in
//! `flags`, each command in its own module under `cmd/`, and the one table from error to exit
//! code is [`exit_code`]: 0 success, 1 a domain error (the component could not do its work on
//! valid input), 2 a usage error, bad input, a bad config value, or a stopped/trapped component.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use lro_host::{ComponentError, Event, Options, Runtime};

mod bench;
mod cmd;
mod flags;
mod output;
mod session;

use flags::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // `lro ... | head` closing the pipe early is a normal way to stop.
            let broken_pipe = err.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("lro: {err:#}");
            ExitCode::from(exit_code(&err))
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    match &cli.command {
        Command::Offload(args) => cmd::offload::run(cli, args),
        Command::Extract(args) => cmd::extract::run(cli, args),
        Command::Query(args) => cmd::query::run(cli, args),
        Command::Sweep(args) => cmd::sweep::run(cli, args),
        Command::Recipes(args) => cmd::recipes::run(cli, args),
        Command::Component { output } => cmd::component::run(output.as_deref()),
        Command::Sample(args) => cmd::sample::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Proxy(args) => cmd::proxy::run(cli, args),
        Command::Demo(args) => cmd::demo::run(args),
    }
}

/// 1 for domain errors (a bad filter, a missing or refused file, an I/O failure), 2 for
/// everything else (usage, bad input, config, limits, traps).
fn exit_code(err: &anyhow::Error) -> u8 {
    match err.chain().find_map(|c| c.downcast_ref::<lro_host::Error>()) {
        Some(lro_host::Error::Component(
            ComponentError::InvalidConfig(_) | ComponentError::InvalidInput(_) | ComponentError::InvalidRequest(_),
        )) => 2,
        Some(lro_host::Error::Component(_)) => 1,
        _ => 2,
    }
}

/// The runtime with the global flags' limits and event printing.
pub(crate) fn runtime(cli: &Cli) -> anyhow::Result<Runtime> {
    let events: Option<lro_host::EventSink> = cli
        .events
        .then(|| Arc::new(|event: &Event| eprintln!("{}", output::event_json(event))) as lro_host::EventSink);
    let mut options = Options {
        cache_dir: Options::default_cache_dir(),
        events,
        ..Options::default()
    };
    if let Some(seconds) = cli.timeout {
        // A day is far past any call's need, and keeps the deadline's tick count in range.
        if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
            bail!("--timeout must be a number of seconds above 0 and at most 86400, got {seconds:?}");
        }
        options.deadline = Duration::from_secs_f64(seconds);
        options.filter_deadline = options.deadline;
    }
    if let Some(mib) = cli.memory_limit {
        // Below this the component cannot even be instantiated: every call would trap.
        if mib < MIN_MEMORY_MIB {
            bail!("--memory-limit must be at least {MIN_MEMORY_MIB} MiB (the component's own memory), got {mib}");
        }
        options.memory = mib.saturating_mul(1 << 20);
        options.filter_memory = options.memory;
    }
    Ok(Runtime::new(options)?)
}

/// The smallest `--memory-limit` a call can run under, in MiB.
const MIN_MEMORY_MIB: usize = 8;

/// [`config`] for a command that writes files: a time to live of 0 would make every descriptor
/// name a file that is already expired, so it is refused, from whichever layer it came.
pub(crate) fn writing_config(
    runtime: &Runtime,
    file: Option<&std::path::Path>,
    flags: &[lro_host::config::Flag],
) -> anyhow::Result<lro_host::Config> {
    writing_config_of(runtime, config_file(file)?.0, flags)
}

/// [`writing_config`] with the file already read by [`config_file`].
pub(crate) fn writing_config_of(
    runtime: &Runtime,
    file: Option<lro_host::ConfigDocument>,
    flags: &[lro_host::config::Flag],
) -> anyhow::Result<lro_host::Config> {
    let config = lro_host::config::from_environment_document(runtime, file, flags)?;
    if config.ttl_seconds == 0 {
        bail!(
            "ttl_seconds is 0 (from --ttl, ATLATL_PROMPT__OFFLOAD__TTL_SECONDS or the config file): every file would be expired as it is written; give at least 1"
        );
    }
    Ok(config)
}

/// The component's defaults under the `--config` file, the environment and `flags`.
pub(crate) fn config(
    runtime: &Runtime,
    file: Option<&std::path::Path>,
    flags: &[lro_host::config::Flag],
) -> anyhow::Result<lro_host::Config> {
    Ok(lro_host::config::from_environment_document(
        runtime,
        config_file(file)?.0,
        flags,
    )?)
}

/// The `--config` file as the component is given it, and its `[prompt.offload]` `store` key
/// (`lro proxy --listen`'s store, docs/CONFIGURATION.md), which is taken out of the text: the
/// component's configuration has no such key. A file that is not TOML goes as it is, for the
/// component to say what is wrong with it.
pub(crate) fn config_file(
    file: Option<&std::path::Path>,
) -> anyhow::Result<(Option<lro_host::ConfigDocument>, Option<String>)> {
    let Some(path) = file else {
        return Ok((None, None));
    };
    let mut document = lro_host::config::document(path)?;
    let Ok(mut table) = toml::from_str::<toml::Table>(&document.text) else {
        return Ok((Some(document), None));
    };
    let store = table
        .get_mut("prompt")
        .and_then(toml::Value::as_table_mut)
        .and_then(|prompt| prompt.get_mut("offload"))
        .and_then(toml::Value::as_table_mut)
        .and_then(|offload| offload.remove("store"));
    let store = match store {
        None => return Ok((Some(document), None)),
        Some(toml::Value::String(store)) => store,
        Some(other) => bail!(
            "prompt.offload.store (from {}): expected a string (s3://BUCKET[/PREFIX] or a directory), got {other}",
            document.name
        ),
    };
    document.text =
        toml::to_string(&table).with_context(|| format!("rewriting {} without its store key", document.name))?;
    Ok((Some(document), Some(store)))
}
