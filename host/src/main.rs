//! `lro`: offload large MCP results to JSONL through the LRO component, and look after the files.
//!
//! stdout carries the result (what the tool would return), stderr diagnostics. Exit codes:
//! 0 success, 1 a domain error (the component could not do its work on valid input),
//! 2 a usage error, bad input, a bad config value, or a stopped/trapped component.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Deserialize;
use serde_json::{Value, json, value::RawValue};

mod bench;

use lro_host::{
    DescriptorStyle, Detail, Event, ExtractRequest, ExtractResult, LroError, Operation, Options, Outcome, Overrides,
    RecipeLibrary, Request, Runtime, Settings, ToolCall, ToolOutcome,
};

#[derive(Parser)]
#[command(
    name = "lro",
    version,
    about = "Large Result Offloading for MCP, through the LRO WebAssembly component"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Wall-clock limit for one component call [default: 10 for offload and sweep, 1 for
    /// extract and query].
    #[arg(long, global = true, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// Memory limit of the component [default: 2048 for offload and sweep, 512 for extract
    /// and query].
    #[arg(long, global = true, value_name = "MIB")]
    memory_limit: Option<usize>,
    /// Print the component's events as JSON lines on stderr.
    #[arg(long, global = true)]
    events: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Offload a result set (record level): print the text to forward (inline records, a
    /// descriptor, or a truncated fallback).
    Offload(OffloadArgs),
    /// Run a recipe or a jq filter over an offloaded file (what `lro_extract` does); print one
    /// value per line.
    Extract(ExtractArgs),
    /// Run a jq filter, sandboxed in the component, over JSON values; print one compact value
    /// per line, like `jq -c`.
    Query(QueryArgs),
    /// Delete expired offload files; print a JSON report.
    Sweep(SweepArgs),
    /// Print the ten jq recipes for a detail level.
    Recipes(RecipesArgs),
    /// Write the embedded component (`.wasm`) for other hosts.
    Component {
        /// Output file; standard output when absent.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Print deterministic sample MIF records (a JSON array) for demos and tests.
    Sample(SampleArgs),
    /// Measure offload, extraction, instantiation and descriptor sizes against native code and
    /// the system jq; print a Markdown report (build with --release for real figures).
    Bench(BenchArgs),
}

#[derive(Args)]
struct BenchArgs {
    /// Also write the report to this file (e.g. BENCHMARKS.md).
    #[arg(long, value_name = "FILE")]
    write: Option<PathBuf>,
    /// Scratch directory for offloaded files and the artifact cache [default: a new one under
    /// the system temporary directory].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Fewer repetitions and no 50,000-record runs: a smoke test of the benchmark itself.
    #[arg(long)]
    quick: bool,
    /// Run one section only.
    #[arg(long, value_parser = ["offload", "extract", "calls", "descriptors"])]
    only: Option<String>,
}

#[derive(Args)]
struct ConfigArgs {
    /// TOML file with a [prompt.offload] section.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Offload above this many estimated tokens (prompt.offload.threshold_tokens).
    #[arg(long, value_name = "N")]
    threshold: Option<u32>,
    /// Seconds files live (prompt.offload.ttl_seconds).
    #[arg(long, value_name = "S")]
    ttl: Option<u64>,
    /// Offload directory (prompt.offload.output_dir).
    #[arg(long, value_name = "DIR")]
    output_dir: Option<String>,
    /// File name prefix (prompt.offload.prefix).
    #[arg(long)]
    prefix: Option<String>,
    /// Recipe library (prompt.offload.recipes).
    #[arg(long, value_enum)]
    recipes: Option<Library>,
    /// MIF version written in headers (prompt.offload.schema_version).
    #[arg(long, value_name = "VERSION")]
    schema_version: Option<String>,
    /// Cap on the bytes of all offload files, 0 for none (prompt.offload.max_bytes).
    #[arg(long, value_name = "BYTES")]
    max_bytes: Option<u64>,
    /// Cap on the number of offload files, 0 for none (prompt.offload.max_files).
    #[arg(long, value_name = "N")]
    max_files: Option<u32>,
}

impl ConfigArgs {
    fn settings(&self, extra: Overrides) -> anyhow::Result<Settings> {
        let flags = Overrides {
            threshold_tokens: self.threshold,
            ttl_seconds: self.ttl,
            output_dir: self.output_dir.clone(),
            prefix: self.prefix.clone(),
            recipes: self.recipes.map(|l| match l {
                Library::V2 => RecipeLibrary::V2,
                Library::V1 => RecipeLibrary::V1,
            }),
            schema_version: self.schema_version.clone(),
            max_bytes: self.max_bytes,
            max_files: self.max_files,
            ..extra
        };
        Ok(Settings::from_environment(self.config.as_deref(), &flags)?)
    }
}

#[derive(Args)]
struct OffloadArgs {
    /// The operation that produced the records.
    #[arg(long, value_enum, default_value_t = Op::Recall, conflicts_with = "tool")]
    operation: Op,
    /// MCP level: the input is the named tool's CallToolResult; print the CallToolResult to forward.
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// With --tool: the call's arguments (a JSON object).
    #[arg(long, value_name = "JSON", requires = "tool")]
    arguments: Option<String>,
    /// With --tool: the request's _meta (or initialize params), to detect a downstream LRO proxy.
    #[arg(long, value_name = "JSON", requires = "tool")]
    meta: Option<String>,
    /// The operation's query, written to the file header.
    #[arg(long)]
    query: Option<String>,
    /// Detail level the call asked for (informative: the file's level is what the records show).
    #[arg(long, value_enum)]
    detail: Option<Level>,
    /// Descriptor style (prompt.offload.descriptor).
    #[arg(long, value_enum)]
    descriptor: Option<Style>,
    /// The host offers `lro_extract`: guidance points to it (prompt.offload.native).
    #[arg(long)]
    native: bool,
    /// Never offload (prompt.offload.enabled = false).
    #[arg(long)]
    disabled: bool,
    #[command(flatten)]
    config: ConfigArgs,
    /// JSON array of records or search hits; for inject {"records": [...], "text": "..."};
    /// with --tool a CallToolResult. Standard input when absent or `-`.
    input: Option<PathBuf>,
}

#[derive(Args)]
struct ExtractArgs {
    /// The offloaded file (a descriptor's file_path), inside the offload directory.
    file: PathBuf,
    /// Recipe number, 1 to 10.
    #[arg(long, value_name = "N", required_unless_present = "query", conflicts_with = "query")]
    recipe: Option<u32>,
    /// Recipe parameter, bound as $KEY; repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_param)]
    params: Vec<(String, String)>,
    /// A custom jq filter, run once per record.
    #[arg(long, value_name = "FILTER")]
    query: Option<String>,
    /// Run the query once over an array of all records.
    #[arg(long, requires = "query")]
    slurp: bool,
    /// Output cap in estimated tokens [default: the threshold].
    #[arg(long, value_name = "TOKENS")]
    limit: Option<u32>,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(Args)]
struct QueryArgs {
    /// The jq filter.
    #[arg(allow_hyphen_values = true)]
    filter: String,
    /// Read all input values into one array and run the filter once on it.
    #[arg(short, long)]
    slurp: bool,
    /// Print strings without quotes.
    #[arg(short, long)]
    raw_output: bool,
    /// JSON values, separated by whitespace; standard input when absent or `-`.
    input: Option<PathBuf>,
}

fn parse_param(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("expected KEY=VALUE, got {text:?}"))
}

#[derive(Clone, Copy, ValueEnum)]
enum Library {
    V2,
    V1,
}

#[derive(Args)]
struct SweepArgs {
    /// The current time (RFC 3339); default: now.
    #[arg(long, value_name = "RFC3339")]
    now: Option<String>,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(Args)]
struct RecipesArgs {
    /// Detail level.
    #[arg(long, value_enum, default_value_t = Level::Light)]
    detail: Level,
    /// Path to put in the commands (default: the placeholder {file}).
    #[arg(long, value_name = "PATH")]
    file: Option<String>,
    /// Print the recipes as a JSON array with programs and parameters.
    #[arg(long)]
    json: bool,
    /// Recipe library (prompt.offload.recipes) [default: from --config or the environment, else v2].
    #[arg(long, value_enum)]
    recipes: Option<Library>,
    /// TOML file with a [prompt.offload] section.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Args)]
struct SampleArgs {
    /// Detail level of the records.
    #[arg(long, value_enum, default_value_t = Level::Full)]
    detail: Level,
    /// Number of records.
    #[arg(long, default_value_t = 500)]
    count: usize,
    /// Seed; the same seed gives the same records.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Wrap records as search hits {"memory": ..., "score": ...}.
    #[arg(long)]
    hits: bool,
    /// Print inject input: {"records": [...], "text": "..."} with a budgeted text of the first records.
    #[arg(long, conflicts_with = "hits")]
    inject: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Op {
    Recall,
    Search,
    List,
    Inject,
}

#[derive(Clone, Copy, ValueEnum)]
enum Level {
    Light,
    Medium,
    Full,
}

#[derive(Clone, Copy, ValueEnum)]
enum Style {
    Full,
    Bare,
}

impl From<Level> for Detail {
    fn from(level: Level) -> Detail {
        match level {
            Level::Light => Detail::Light,
            Level::Medium => Detail::Medium,
            Level::Full => Detail::Full,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
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

/// 1 for domain errors (a bad filter, a missing or refused file, an I/O failure), 2 for
/// everything else (usage, bad input, config, limits, traps).
fn exit_code(err: &anyhow::Error) -> u8 {
    match err.chain().find_map(|c| c.downcast_ref::<lro_host::Error>()) {
        Some(lro_host::Error::Lro(
            LroError::InvalidConfig(_) | LroError::InvalidInput(_) | LroError::InvalidRequest(_),
        )) => 2,
        Some(lro_host::Error::Lro(_)) => 1,
        _ => 2,
    }
}

fn runtime(cli: &Cli) -> anyhow::Result<Runtime> {
    let events: Option<lro_host::EventSink> = cli
        .events
        .then(|| Arc::new(|event: &Event| eprintln!("{}", event_json(event))) as lro_host::EventSink);
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
        options.memory = mib.saturating_mul(1 << 20);
        options.filter_memory = options.memory;
    }
    Ok(Runtime::new(options)?)
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match &cli.command {
        Command::Offload(args) => offload(&cli, args),
        Command::Extract(args) => extract(&cli, args),
        Command::Query(args) => query(&cli, args),
        Command::Sweep(args) => sweep(&cli, args),
        Command::Recipes(args) => recipes(&cli, args),
        Command::Component { output } => component(output.as_deref()),
        Command::Sample(args) => sample(args),
        Command::Bench(args) => bench(args),
    }
}

fn offload(cli: &Cli, args: &OffloadArgs) -> anyhow::Result<()> {
    let extra = Overrides {
        descriptor: args.descriptor.map(|s| match s {
            Style::Full => DescriptorStyle::Full,
            Style::Bare => DescriptorStyle::Bare,
        }),
        native: args.native.then_some(true),
        enabled: args.disabled.then_some(false),
        ..Overrides::default()
    };
    let config = args.config.settings(extra)?.config()?;
    let input = read_input(args.input.as_deref())?;
    if let Some(tool) = &args.tool {
        let call = ToolCall {
            tool: tool.clone(),
            arguments: args.arguments.clone().unwrap_or_else(|| "{}".into()),
            result: input.clone(),
            meta: args.meta.clone(),
        };
        return match runtime(cli)?.intercept(&config, &call)? {
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
    let outcome = runtime(cli)?.offload(&config, &request)?;
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

fn extract(cli: &Cli, args: &ExtractArgs) -> anyhow::Result<()> {
    let config = args.config.settings(Overrides::default())?.config()?;
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
    let result = runtime(cli)?.extract(&config, &request)?;
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

fn query(cli: &Cli, args: &QueryArgs) -> anyhow::Result<()> {
    let input = read_input(args.input.as_deref())?;
    let result = runtime(cli)?.query(&args.filter, &input, args.slurp, args.raw_output, None)?;
    print_values(&result)
}

/// Values on stdout, one per line.
fn print_values(result: &ExtractResult) -> anyhow::Result<()> {
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    for value in &result.values {
        stdout.write_all(value.as_bytes()).context("writing standard output")?;
        stdout.write_all(b"\n").context("writing standard output")?;
    }
    stdout.flush().context("writing standard output")
}

fn sweep(cli: &Cli, args: &SweepArgs) -> anyhow::Result<()> {
    let config = args.config.settings(Overrides::default())?.config()?;
    let now = match &args.now {
        Some(text) => lro_core::time::parse_rfc3339_ms(text).with_context(|| {
            format!("--now: expected an RFC 3339 timestamp such as 2026-11-21T10:00:00Z, got {text:?}")
        })?,
        None => u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis())?,
    };
    let report = runtime(cli)?.sweep(&config, now)?;
    let failed: Vec<Value> = report
        .failed
        .iter()
        .map(|f| json!({"path": f.path, "reason": f.reason}))
        .collect();
    print_line(&json!({"deleted": report.deleted, "kept": report.kept, "failed": failed}).to_string())
}

fn recipes(cli: &Cli, args: &RecipesArgs) -> anyhow::Result<()> {
    let flags = Overrides {
        recipes: args.recipes.map(|l| match l {
            Library::V2 => RecipeLibrary::V2,
            Library::V1 => RecipeLibrary::V1,
        }),
        ..Overrides::default()
    };
    let config = Settings::from_environment(args.config.as_deref(), &flags)?.config()?;
    let list = runtime(cli)?.recipes(&config, args.detail.into(), args.file.as_deref())?;
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

fn component(output: Option<&Path>) -> anyhow::Result<()> {
    match output {
        Some(path) => {
            let tmp = path.with_extension("wasm.tmp");
            std::fs::write(&tmp, lro_host::COMPONENT)
                .and_then(|()| std::fs::rename(&tmp, path))
                .with_context(|| format!("writing {}", path.display()))
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            if stdout.is_terminal() {
                bail!("refusing to write binary WebAssembly to a terminal; use -o FILE or a redirect");
            }
            stdout
                .write_all(lro_host::COMPONENT)
                .context("writing standard output")?;
            stdout.flush().context("writing standard output")
        }
    }
}

fn sample(args: &SampleArgs) -> anyhow::Result<()> {
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

fn read_input(path: Option<&Path>) -> anyhow::Result<String> {
    match path {
        Some(p) if p != Path::new("-") => {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
        }
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading standard input")?;
            Ok(text)
        }
    }
}

fn print_line(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes()).context("writing standard output")?;
    stdout.write_all(b"\n").context("writing standard output")?;
    stdout.flush().context("writing standard output")
}

/// Events as JSON lines, named as in the spec (`OffloadCreated`, ...).
fn event_json(event: &Event) -> Value {
    match event {
        Event::OffloadCreated(e) => json!({"event": "OffloadCreated", "path": e.path, "operation": e.operation,
            "count": e.count, "tokens": e.tokens, "bytes": e.bytes}),
        Event::OffloadWriteFailed(e) => json!({"event": "OffloadWriteFailed", "path": e.path, "operation": e.operation,
            "error": e.error, "total": e.total, "returned": e.returned}),
        Event::OffloadFileExpired(e) => json!({"event": "OffloadFileExpired", "path": e.path,
            "created": lro_core::time::format_rfc3339_ms(e.created), "expired": lro_core::time::format_rfc3339_ms(e.expired)}),
        Event::OffloadFileEvicted(e) => json!({"event": "OffloadFileEvicted", "path": e.path,
            "bytes": e.bytes, "cap": e.cap}),
    }
}

fn bench(args: &BenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!("lro bench: this is a debug build; run `cargo run --release -p lro-host -- bench` for real figures");
    }
    let dir = args.dir.clone().unwrap_or_else(bench::default_dir);
    let started = Instant::now();
    let result = bench::run(&dir, args.quick, args.only.as_deref());
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let figures = result?;
    let command = if args.quick {
        "cargo run --release -p lro-host -- bench --quick"
    } else {
        "cargo run --release -p lro-host -- bench --write BENCHMARKS.md"
    };
    let report = format!(
        "# Benchmarks\n\nProduced by `{command}` in {:.0} s on {}. Medians; ratios come from one run, \
         so they hold on a noisy machine where absolute times drift. Regenerate rather than edit; \
         the notes at the end come from `docs/BENCH-NOTES.md`.\n\n{}\n{}",
        started.elapsed().as_secs_f64(),
        bench::environment(),
        figures.markdown,
        include_str!("../../docs/BENCH-NOTES.md")
    );
    print!("{report}");
    if let Some(path) = &args.write {
        write_atomically(path, report.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    if figures.misses > 0 {
        eprintln!("lro bench: {} target(s) missed (see the Targets table)", figures.misses);
    }
    Ok(())
}

/// Writes `path` through a temporary file in the same directory, so a reader never sees half.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
