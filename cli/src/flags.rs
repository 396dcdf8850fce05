//! Every flag of the `lro` command, in one place; each command's module reads its own `Args`.
//! Configuration flags become [`Flag`]s, parsed by `lro_host::config` exactly as the file and
//! the environment are, so a key means the same wherever it is given.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use lro_host::Detail;
use lro_host::config::Flag;

#[derive(Parser)]
#[command(
    name = "lro",
    version,
    about = "Large Result Offloading for MCP, through the LRO WebAssembly component"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Wall-clock limit for one component call [default: 10 for offload and sweep, 1 for
    /// extract and query].
    #[arg(long, global = true, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Memory limit of the component [default: 2048 for offload and sweep, 512 for extract
    /// and query].
    #[arg(long, global = true, value_name = "MIB")]
    pub memory_limit: Option<usize>,
    /// Print the component's events as JSON lines on stderr.
    #[arg(long, global = true)]
    pub events: bool,
}

#[derive(Subcommand)]
pub enum Command {
    /// Offload a result set (record level) or a tool's CallToolResult (MCP level): print what
    /// to forward (inline, a descriptor, or a truncated fallback).
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
    /// Put LRO in front of an MCP server: speak MCP over stdio to the client, forward to the
    /// server (a command, or a streamable HTTP URL), offload large tool results, and serve
    /// `lro_extract` and the offloaded files as resources (docs/PROXY.md).
    Proxy(ProxyArgs),
    /// Show the proxy at work: `lro proxy` in front of a sample memory server, a scripted
    /// client session (the descriptor, `lro_extract` answers), and the configuration line for
    /// a real client.
    Demo(DemoArgs),
    /// Measure offload, extraction, instantiation and descriptor sizes against the same code
    /// compiled to machine code and the system jq; print a Markdown report (build with
    /// --release for real figures).
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct BenchArgs {
    /// Also write the report to this file (e.g. BENCHMARKS.md).
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Scratch directory for offloaded files and the artifact cache [default: a new one under
    /// the system temporary directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Fewer repetitions and no 50,000-record runs: a smoke test of the benchmark itself.
    #[arg(long)]
    pub quick: bool,
    /// Run one section only.
    #[arg(long, value_parser = ["offload", "extract", "calls", "descriptors", "hosts", "proxy", "store"])]
    pub only: Option<String>,
    /// The store section: offload to this `s3://BUCKET[/PREFIX]` store (reached with the
    /// AWS_* variables) against the offload directory alone, and extract on a cold replica.
    /// Without it the section is not run.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
}

/// The `[prompt.offload]` keys as flags (docs/CONFIGURATION.md). Values are taken as text and
/// checked by `lro_host::config`, so a bad one is reported like a bad environment variable.
#[derive(Args)]
pub struct ConfigArgs {
    /// TOML file with a [prompt.offload] section.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Offload above this many estimated tokens (threshold_tokens).
    #[arg(long, visible_alias = "threshold", value_name = "N")]
    pub threshold_tokens: Option<String>,
    /// Seconds files live (ttl_seconds).
    #[arg(long, visible_alias = "ttl", value_name = "S")]
    pub ttl_seconds: Option<String>,
    /// Offload directory (output_dir).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<String>,
    /// File name prefix (prefix).
    #[arg(long)]
    pub prefix: Option<String>,
    /// Recipe library, v2 or v1 (recipes).
    #[arg(long, value_name = "LIBRARY")]
    pub recipes: Option<String>,
    /// MIF version written in headers (schema_version).
    #[arg(long, value_name = "VERSION")]
    pub schema_version: Option<String>,
    /// Cap on the bytes of all offload files, 0 for none (max_bytes).
    #[arg(long, value_name = "BYTES")]
    pub max_bytes: Option<String>,
    /// Cap on the number of offload files, 0 for none (max_files).
    #[arg(long, value_name = "N")]
    pub max_files: Option<String>,
}

impl ConfigArgs {
    /// The flags given, as configuration layers.
    pub fn flags(&self) -> Vec<Flag> {
        let given: &[(&'static str, &'static str, &Option<String>)] = &[
            ("threshold_tokens", "--threshold-tokens", &self.threshold_tokens),
            ("ttl_seconds", "--ttl-seconds", &self.ttl_seconds),
            ("output_dir", "--output-dir", &self.output_dir),
            ("prefix", "--prefix", &self.prefix),
            ("recipes", "--recipes", &self.recipes),
            ("schema_version", "--schema-version", &self.schema_version),
            ("max_bytes", "--max-bytes", &self.max_bytes),
            ("max_files", "--max-files", &self.max_files),
        ];
        given
            .iter()
            .filter_map(|&(key, name, value)| {
                value.as_ref().map(|value| Flag {
                    key,
                    name,
                    value: value.clone(),
                })
            })
            .collect()
    }
}

#[derive(Args)]
#[command(group = clap::ArgGroup::new("upstream").required(true).args(["url", "command"]))]
pub struct ProxyArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Descriptor style, full or bare (descriptor).
    #[arg(long, value_name = "STYLE")]
    pub descriptor: Option<String>,
    /// The upstream server's streamable HTTP endpoint (http or https).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// A header for every HTTP request to --url, "NAME: VALUE" (repeatable), e.g.
    /// "Authorization: Bearer TOKEN".
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
    pub headers: Vec<String>,
    /// Seconds the proxy keeps relaying after the client closes its input, so the answers to
    /// requests already made still arrive [default: 30].
    #[arg(long, value_name = "SECONDS")]
    pub grace: Option<f64>,
    /// Serve MCP over streamable HTTP at http://HOST:PORT/mcp to many clients at once, instead
    /// of one client on stdin and stdout (docs/PROXY.md, "Serving remote clients").
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// With --listen: the principals, a file of `NAME TOKEN` lines; every request must send
    /// `Authorization: Bearer TOKEN`. Without it, --listen serves loopback addresses only.
    #[arg(long, value_name = "FILE", requires = "listen")]
    pub tokens: Option<PathBuf>,
    /// With --listen: the most client sessions open at once, each with its own upstream
    /// [default: 32].
    #[arg(long, value_name = "N", requires = "listen")]
    pub max_sessions: Option<usize>,
    /// With --listen: seconds after which a session with no request and no open stream is
    /// closed, and its upstream with it [default: 600].
    #[arg(long, value_name = "SECONDS", requires = "listen")]
    pub idle: Option<u64>,
    /// With --listen: where offloads are kept for every replica, `s3://BUCKET[/PREFIX]` (S3 or
    /// an S3-compatible store, reached with the AWS_* variables), or a local directory, which
    /// is --output-dir [default: ATLATL_PROMPT__OFFLOAD__STORE, else `store` in the --config
    /// file, else the offload directory alone].
    #[arg(long, value_name = "URL", requires = "listen")]
    pub store: Option<String>,
    /// With --listen and an s3:// --store: the most megabytes of stored offloads kept on this
    /// replica's disk [default: 512].
    #[arg(long, value_name = "MB", requires = "listen")]
    pub cache_mb: Option<u64>,
    /// The upstream server's command and arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `--descriptor`, which `offload` and `proxy` both take, as a configuration layer.
fn descriptor_flag(style: &Option<String>) -> Option<Flag> {
    style.as_ref().map(|style| Flag {
        key: "descriptor",
        name: "--descriptor",
        value: style.clone(),
    })
}

impl ProxyArgs {
    /// The configuration flags given.
    pub fn flags(&self) -> Vec<Flag> {
        let mut flags = self.config.flags();
        flags.extend(descriptor_flag(&self.descriptor));
        // A local directory as the store is the offload directory.
        if let Some(dir) = self.store.as_ref().filter(|s| !lro_host::store::is_store_url(s)) {
            flags.push(Flag {
                key: "output_dir",
                name: "--store",
                value: dir.clone(),
            });
        }
        flags
    }
}

#[derive(Args)]
pub struct OffloadArgs {
    /// The operation that produced the records.
    #[arg(long, value_enum, default_value_t = Op::Recall, conflicts_with = "tool")]
    pub operation: Op,
    /// MCP level: the input is the named tool's CallToolResult; print the CallToolResult to forward.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// With --tool: the call's arguments (a JSON object).
    #[arg(long, value_name = "JSON", requires = "tool")]
    pub arguments: Option<String>,
    /// With --tool: the request's _meta (or initialize params), to detect a downstream LRO proxy.
    #[arg(long, value_name = "JSON", requires = "tool")]
    pub meta: Option<String>,
    /// The operation's query, written to the file header.
    #[arg(long)]
    pub query: Option<String>,
    /// Detail level the call asked for (informative: the file's level is what the records show).
    #[arg(long, value_enum)]
    pub detail: Option<Level>,
    /// Descriptor style, full or bare (descriptor).
    #[arg(long, value_name = "STYLE")]
    pub descriptor: Option<String>,
    /// The host offers `lro_extract`: guidance points to it (extract_tool).
    #[arg(long, visible_alias = "native")]
    pub extract_tool: bool,
    /// Never offload (enabled = false).
    #[arg(long)]
    pub disabled: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// JSON array of records or search hits; for inject {"records": [...], "text": "..."};
    /// with --tool a CallToolResult. Standard input when absent or `-`.
    pub input: Option<PathBuf>,
}

impl OffloadArgs {
    /// The configuration flags, with those only `offload` has.
    pub fn flags(&self) -> Vec<Flag> {
        let mut flags = self.config.flags();
        flags.extend(descriptor_flag(&self.descriptor));
        if self.extract_tool {
            flags.push(Flag {
                key: "extract_tool",
                name: "--extract-tool",
                value: "true".into(),
            });
        }
        if self.disabled {
            flags.push(Flag {
                key: "enabled",
                name: "--disabled",
                value: "false".into(),
            });
        }
        flags
    }
}

#[derive(Args)]
pub struct ExtractArgs {
    /// The offloaded file (a descriptor's file_path), inside the offload directory.
    pub file: PathBuf,
    /// Recipe number, 1 to 10.
    #[arg(long, value_name = "N", required_unless_present = "query", conflicts_with = "query")]
    pub recipe: Option<u32>,
    /// Recipe parameter, bound as $KEY; repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    /// A custom jq filter, run once per record.
    #[arg(long, value_name = "FILTER")]
    pub query: Option<String>,
    /// Run the query once over an array of all records.
    #[arg(long, requires = "query")]
    pub slurp: bool,
    /// Output cap in estimated tokens [default: the threshold].
    #[arg(long, value_name = "TOKENS")]
    pub limit: Option<u32>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Args)]
pub struct QueryArgs {
    /// The jq filter.
    #[arg(allow_hyphen_values = true)]
    pub filter: String,
    /// Read all input values into one array and run the filter once on it.
    #[arg(short, long)]
    pub slurp: bool,
    /// Print strings without quotes.
    #[arg(short, long)]
    pub raw_output: bool,
    /// JSON values, separated by whitespace; standard input when absent or `-`.
    pub input: Option<PathBuf>,
}

fn parse_param(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("expected KEY=VALUE, got {text:?}"))
}

#[derive(Args)]
pub struct SweepArgs {
    /// The current time (RFC 3339); default: now.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Args)]
pub struct RecipesArgs {
    /// Detail level.
    #[arg(long, value_enum, default_value_t = Level::Light)]
    pub detail: Level,
    /// Path to put in the commands (default: the placeholder {file}).
    #[arg(long, value_name = "PATH")]
    pub file: Option<String>,
    /// Print the recipes as a JSON array with programs and parameters.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Args)]
pub struct DemoArgs {
    /// Memories in the sample server.
    #[arg(long, default_value_t = 500)]
    pub count: usize,
    /// Offload directory [default: the proxy's, `lro-<uid>` in the system temporary directory].
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<String>,
}

#[derive(Args)]
pub struct SampleArgs {
    /// Detail level of the records.
    #[arg(long, value_enum, default_value_t = Level::Full)]
    pub detail: Level,
    /// Number of records.
    #[arg(long, default_value_t = 500)]
    pub count: usize,
    /// Seed; the same seed gives the same records.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Wrap records as search hits {"memory": ..., "score": ...}.
    #[arg(long)]
    pub hits: bool,
    /// Print inject input: {"records": [...], "text": "..."} with a budgeted text of the first records.
    #[arg(long, conflicts_with = "hits")]
    pub inject: bool,
    /// Serve the records as an MCP memory server over stdio (tools recall_memories and
    /// count_memories) instead of printing them: an upstream for `lro proxy` to try.
    #[arg(long, conflicts_with = "inject")]
    pub serve: bool,
}

/// The WIT `operation` enum, as clap parses it.
#[derive(Clone, Copy, ValueEnum)]
pub enum Op {
    Recall,
    Search,
    List,
    Inject,
}

/// The WIT `detail` enum, as clap parses it.
#[derive(Clone, Copy, ValueEnum)]
pub enum Level {
    Light,
    Medium,
    Full,
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
