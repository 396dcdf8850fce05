//! `lro bench`: the figures of BENCHMARKS.md, measured in one run so their ratios mean something on
//! a shared, noisy machine. Medians throughout; every comparison runs the same input the same
//! number of times, interleaved, so a slow patch hits both sides of a ratio alike.

mod calls;
mod descriptors;
mod extract;
mod hosts;
mod offload;
mod proxy;
mod store;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use lro_core::extractor::ExtractRequest as MachineRequest;
use lro_host::{
    Config, DescriptorStyle, Detail, ExtractRequest, Operation, Options, Outcome, RecipeLibrary, Request, Runtime,
};

/// Sizes the issue and the paper use: the paper's three scales, then two an order of magnitude up.
const SIZES: [usize; 5] = [50, 200, 500, 5_000, 50_000];
const EXTRACT_SIZES: [usize; 2] = [500, 50_000];
/// The large file of issue 34: 400,000 records, a 47 MB file.
const LARGE_FILE: usize = 400_000;
const SEED: u64 = 42;

pub struct Figures {
    pub markdown: String,
    pub misses: usize,
}

/// What every section measures with.
#[derive(Clone, Copy)]
struct Setup<'a> {
    runtime: &'a Runtime,
    config: &'a Config,
    /// `config` for lro-core called directly.
    machine: &'a lro_core::Config,
    sizes: &'a [usize],
    /// The offload directory.
    work: &'a Path,
    cache: &'a Path,
    dir: &'a Path,
    options: &'a Options,
    quick: bool,
}

struct Target {
    what: String,
    figure: String,
    met: bool,
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{:.1} µs", ms * 1e3)
    }
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn reps_for(n: usize) -> usize {
    match n {
        0..=500 => 60,
        501..=5_000 => 15,
        _ => 5,
    }
}

fn core_detail(detail: Detail) -> lro_core::Detail {
    match detail {
        Detail::Light => lro_core::Detail::Light,
        Detail::Medium => lro_core::Detail::Medium,
        Detail::Full => lro_core::Detail::Full,
    }
}

/// The config for the same code compiled to machine code (`lro-core` called directly). Field by
/// field, with no `..Default`: a field added to the config fails to compile here until mapped.
fn machine_config(config: &Config) -> lro_core::Config {
    lro_core::Config {
        enabled: config.enabled,
        threshold_tokens: config.threshold_tokens,
        ttl_seconds: config.ttl_seconds,
        output_dir: config.output_dir.clone(),
        prefix: config.prefix.clone(),
        descriptor: match config.descriptor {
            DescriptorStyle::Full => lro_core::DescriptorStyle::Full,
            DescriptorStyle::Bare => lro_core::DescriptorStyle::Bare,
        },
        extract_tool: config.extract_tool,
        schema_version: config.schema_version.clone(),
        recipes: match config.recipes {
            RecipeLibrary::V2 => lro_core::RecipeLibrary::V2,
            RecipeLibrary::V1 => lro_core::RecipeLibrary::V1,
        },
        tools: config
            .tools
            .iter()
            .map(|t| lro_core::mcp::ToolSettings {
                name: t.name.clone(),
                enabled: t.enabled,
                threshold_tokens: t.threshold_tokens,
                sections: t.sections.clone(),
                inline_keys: t.inline_keys.clone(),
            })
            .collect(),
        max_bytes: config.max_bytes,
        max_files: config.max_files,
        dir_problem: config.dir_problem.clone(),
    }
}

fn records(detail: Detail, n: usize) -> String {
    serde_json::to_string(&lro_core::sample::records(core_detail(detail), n, SEED, false))
        .expect("sample records serialise")
}

fn request(detail: Detail, records: &str) -> Request {
    Request {
        operation: Operation::Recall,
        query: Some("caching".into()),
        detail: Some(detail),
        records: records.to_owned(),
        text: None,
    }
}

fn remove_all_in(dir: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Runs the whole benchmark. `quick` cuts repetitions and the largest size, for a smoke run.
pub fn run(dir: &Path, quick: bool, only: Option<&str>, store: Option<&str>) -> anyhow::Result<Figures> {
    let wants = |section: &str| only.is_none_or(|o| o == section);
    if only == Some("store") && store.is_none() {
        bail!("--only store needs --store s3://BUCKET[/PREFIX] (and the AWS_* variables that reach it)");
    }
    which_jq()?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    let cache = dir.join("cache");
    let work = dir.join("files");
    std::fs::create_dir_all(&work)?;
    // An offload directory others can enter is refused (docs/SECURITY.md).
    std::fs::set_permissions(&work, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    let work_str = work.to_str().context("the bench directory must be UTF-8")?.to_owned();

    let options = Options {
        // Big extractions are measured, not stopped.
        deadline: Duration::from_secs(120),
        filter_deadline: Duration::from_secs(120),
        filter_memory: 2 << 30,
        cache_dir: Some(cache.clone()),
        ..Options::default()
    };
    let runtime = Runtime::new(options.clone())?;
    let mut config = runtime.defaults()?;
    config.output_dir = work_str.clone();
    config.threshold_tokens = 1600;
    let machine = machine_config(&config);
    let sizes: Vec<usize> = SIZES.iter().copied().filter(|&n| !quick || n <= 5_000).collect();
    let mut out = String::new();
    let mut targets = Vec::new();
    let setup = Setup {
        runtime: &runtime,
        config: &config,
        machine: &machine,
        sizes: &sizes,
        work: &work,
        cache: &cache,
        dir: &dir,
        options: &options,
        quick,
    };

    // ---- offload -----------------------------------------------------------------------
    if wants("offload") {
        offload::section(&setup, &mut out, &mut targets)?;
    }

    // ---- extraction --------------------------------------------------------------------
    if wants("extract") {
        extract::section(&setup, &mut out, &mut targets)?;
    }

    // ---- per call and loading ------------------------------------------------------------
    if wants("calls") {
        calls::section(&setup, &mut out, &mut targets)?;
    }

    // ---- descriptor sizes and token savings ------------------------------------------------
    if wants("descriptors") {
        descriptors::section(&setup, &mut out, &mut targets)?;
    }

    // ---- the three hosts --------------------------------------------------------------------
    if wants("hosts") {
        hosts::section(&mut out, &mut targets, &dir, &runtime, &config, quick)?;
    }

    // ---- proxy -----------------------------------------------------------------------------
    if wants("proxy") {
        proxy::section(&mut out, &mut targets, &work, quick)?;
    }

    // ---- store -----------------------------------------------------------------------------
    if wants("store") {
        match store {
            Some(url) => store::section(&setup, &mut out, url)?,
            None => writeln!(
                out,
                "## Store

Not measured in this run: `lro bench --store s3://BUCKET` measures it.
"
            )?,
        }
    }

    // ---- summary ---------------------------------------------------------------------------
    let mut head = String::new();
    writeln!(head, "## Targets\n\n| target | measured | met |\n|---|---|---|")?;
    let mut misses = 0;
    for t in &targets {
        misses += usize::from(!t.met);
        writeln!(
            head,
            "| {} | {} | {} |",
            t.what,
            t.figure,
            if t.met { "yes" } else { "**no**" }
        )?;
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(Figures {
        markdown: format!("{head}\n{out}"),
        misses,
    })
}

/// Extraction from a large file under the default limits (the 1 s filter deadline), as
/// `lro_extract` meets it: a filter that needs one record, and a single pass over every record.
fn large_file(
    out: &mut String,
    targets: &mut Vec<Target>,
    config: &Config,
    cache: &Path,
    quick: bool,
) -> anyhow::Result<()> {
    let n: usize = if quick { 40_000 } else { LARGE_FILE };
    let records: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"id":{i},"title":"Record number {i} of the set","namespace":"_semantic/ns{}","tags":["a","b"],"score2":{}}}"#,
                i % 17,
                i as f64 * 0.5
            )
        })
        .collect();
    let request = Request {
        operation: Operation::List,
        query: None,
        detail: None,
        records: format!("[{}]", records.join(",")),
        text: None,
    };
    drop(records);
    // The default limits: what a host gives `lro_extract` unless told otherwise.
    let limited = Runtime::new(Options {
        deadline: Duration::from_secs(120),
        cache_dir: Some(cache.to_owned()),
        ..Options::default()
    })?;
    let path = match limited.offload(config, &request)? {
        Outcome::Offloaded(o) => o.path,
        _ => bail!("{n} records were not offloaded"),
    };
    let bytes = std::fs::metadata(&path)?.len();
    let deadline = Options::default().filter_deadline;
    writeln!(
        out,
        "\nA large file under the default limits ({deadline:?} filter deadline): {n} records, {:.1} MB, offloaded at \
         record level. `Runtime::extract` with the default output cap (the threshold), medians of {} runs.\n\n\
         | query | values | median | of the deadline |\n|---|---:|---:|---:|",
        bytes as f64 / 1e6,
        if quick { 3 } else { 7 }
    )?;
    let last = format!("select(.id == {})", n - 1);
    let mut single_pass = Duration::ZERO;
    for (query, limit) in [
        (last.as_str(), None),
        ("first(.id)", None),
        (".", Some(1)),
        ("limit(3; .title)", None),
    ] {
        let request = ExtractRequest {
            path: path.clone(),
            recipe: None,
            query: Some(query.to_owned()),
            params: None,
            slurp: false,
            limit,
        };
        let mut times = Vec::new();
        let mut values = String::new();
        for _ in 0..if quick { 3 } else { 7 } {
            let start = Instant::now();
            let result = limited.extract(config, &request);
            times.push(start.elapsed());
            values = match result {
                Ok(r) => r.values.len().to_string(),
                Err(e) => e.kind().to_string(),
            };
        }
        let t = median(times);
        if query == last {
            single_pass = t;
        }
        let shown = match limit {
            Some(l) => format!("`{query}`, `limit: {l}`"),
            None => format!("`{query}`"),
        };
        writeln!(
            out,
            "| {shown} | {values} | {} | {:.0}% |",
            ms(t),
            100.0 * t.as_secs_f64() / deadline.as_secs_f64()
        )?;
    }
    targets.push(Target {
        what: format!(
            "extraction: a single pass over {n} records ({:.0} MB) under the default deadline",
            bytes as f64 / 1e6
        ),
        figure: format!(
            "{} ({:.0}% of {deadline:?}; target ≤ 50%)",
            ms(single_pass),
            100.0 * single_pass.as_secs_f64() / deadline.as_secs_f64()
        ),
        met: single_pass * 2 <= deadline,
    });
    Ok(())
}

fn detail_name(detail: Detail) -> &'static str {
    match detail {
        Detail::Light => "light",
        Detail::Medium => "medium",
        Detail::Full => "full",
    }
}

fn which_jq() -> anyhow::Result<()> {
    let out = Command::new("jq").arg("--version").output();
    match out {
        Ok(o) if o.status.success() => Ok(()),
        _ => bail!("the benchmark compares with the system jq; install it (e.g. apt-get install jq)"),
    }
}

/// The version `jaq --version` prints, when `jaq` is on PATH.
fn jaq_version() -> Option<String> {
    let out = Command::new("jaq").arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// What the machine and tools were, for the report's header.
pub fn environment() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let jq = Command::new("jq")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    format!("{cores} cores ({cpu}); {jq}; lro {}", env!("CARGO_PKG_VERSION"))
}

/// The default scratch directory: under the system temporary directory, private to this run.
pub fn default_dir() -> PathBuf {
    std::env::temp_dir().join(format!("lro-bench-{}", std::process::id()))
}
