//! `lro bench`: the figures of BENCHMARKS.md, measured in one run so their ratios mean something on
//! a shared, noisy machine. Medians throughout; every comparison runs the same input the same
//! number of times, interleaved, so a slow patch hits both sides of a ratio alike.

mod hosts;
mod proxy;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Runs the whole benchmark. `quick` cuts repetitions and the largest size, for a smoke run.
pub fn run(dir: &Path, quick: bool, only: Option<&str>) -> anyhow::Result<Figures> {
    let wants = |section: &str| only.is_none_or(|o| o == section);
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

    // ---- offload -----------------------------------------------------------------------
    if wants("offload") {
        writeln!(
            out,
            "## Offload\n\nFull-detail records (`lro sample`), operation `recall`, threshold 1,600 tokens, full \
         descriptor. *Component*: `Runtime::offload` in the Rust host: calls of at most 1 MiB of \
         records (500) run in the instance it keeps, larger ones in a fresh Store and instance each. \
         *Machine code*: the same code (`lro-core`) compiled for this machine and called directly. \
         Each call writes a new file; files are deleted between calls, outside the timing.\n"
        )?;
        writeln!(
            out,
            "| records | input | component | MB/s | machine code | MB/s | component / machine code |\n|---:|---:|---:|---:|---:|---:|---:|"
        )?;
        for &n in &sizes {
            let input = records(Detail::Full, n);
            let req = request(Detail::Full, &input);
            let machine_req = lro_core::offload::Request {
                operation: lro_core::Operation::Recall,
                query: Some("caching"),
                detail: Some(lro_core::Detail::Full),
                records: &input,
                text: None,
            };
            let reps = if quick { 3 } else { reps_for(n) };
            let (mut wasm, mut nat) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                let start = Instant::now();
                let outcome = runtime.offload(&config, &req)?;
                wasm.push(start.elapsed());
                if !matches!(outcome, Outcome::Offloaded(_)) {
                    bail!("{n} records were not offloaded");
                }
                remove_all_in(&work)?;
                let start = Instant::now();
                let outcome = lro_core::offload::offload(&machine, &machine_req, &mut |_| {})?;
                nat.push(start.elapsed());
                if !matches!(outcome, lro_core::Outcome::Offloaded { .. }) {
                    bail!("{n} records were not offloaded by the machine code");
                }
                remove_all_in(&work)?;
            }
            let (w, v) = (median(wasm), median(nat));
            let ratio = w.as_secs_f64() / v.as_secs_f64();
            writeln!(
                out,
                "| {n} | {:.1} KB | {} | {:.0} | {} | {:.0} | {ratio:.2}× |",
                input.len() as f64 / 1e3,
                ms(w),
                mb_per_s(input.len(), w),
                ms(v),
                mb_per_s(input.len(), v)
            )?;
            if n == 500 {
                targets.push(Target {
                    what: "offload of 500 full-detail records, median, Rust host".into(),
                    figure: format!("{} (target ≤ 1.5 ms; the paper: 23.9 ms)", ms(w)),
                    met: w <= Duration::from_micros(1500),
                });
            }
            if n == 50_000 {
                let (component, machine) = (mb_per_s(input.len(), w), mb_per_s(input.len(), v));
                targets.push(Target {
                    what: "offload at 50,000 records: throughput of the component".into(),
                    figure: format!("{component:.0} MB/s (target ≥ 600 MB/s)"),
                    met: component >= 600.0,
                });
                targets.push(Target {
                    what: "offload at 50,000 records: throughput of the machine code".into(),
                    figure: format!("{machine:.0} MB/s (target ≥ 1000 MB/s)"),
                    met: machine >= 1000.0,
                });
                targets.push(Target {
                    what: "offload at 50,000 records: component / machine code".into(),
                    figure: format!("{ratio:.2}× (target ≤ 1.5×)"),
                    met: ratio <= 1.5,
                });
            }
        }
    }

    // ---- extraction --------------------------------------------------------------------
    if wants("extract") {
        let jaq = jaq_version();
        writeln!(
            out,
            "\n## Extraction\n\nEvery recipe of the full-detail library over a file of full-detail records, \
         every value printed (no output cap). *Component*: `Runtime::extract` (Store, instantiation, \
         reading the file through WASI, jaq). *Machine code*: the same extraction code (`lro-core`, jaq) \
         compiled for this machine. *jq process*: the recipe's shell command from the descriptor, \
         `tail -n +2 FILE | jq ...`, run by `sh` as an agent would, output read from a pipe. \
         *jaq process*: the same command with `jaq` (the command-line tool of the jq engine lro \
         embeds) in place of `jq`, the other tool an agent could run; {} It prints some numbers \
         otherwise than jq (`1.0` where jq prints `1`): its output is checked to have as many \
         lines as jq's.\n",
            match &jaq {
                Some(version) => format!("here {version} (`cargo install jaq`)."),
                None => "not measured in this run: no `jaq` on PATH (`cargo install jaq`).".to_owned(),
            }
        )?;
        writeln!(
            out,
            "| records | recipe | values | component | machine-code jaq | jq process | jaq process | component / machine code | jq / component | jaq / component |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        )?;
        let extract_sizes: Vec<usize> = EXTRACT_SIZES.iter().copied().filter(|&n| !quick || n <= 500).collect();
        let (mut worst_machine, mut worst_jq) = (0.0f64, f64::INFINITY);
        let (mut worst_machine_at, mut worst_jq_at) = (String::new(), String::new());
        for &n in &extract_sizes {
            let input = records(Detail::Full, n);
            let path = match runtime.offload(&config, &request(Detail::Full, &input))? {
                Outcome::Offloaded(o) => o.path,
                _ => bail!("{n} records were not offloaded"),
            };
            let recipes = runtime.recipes(&config, Detail::Full, Some(&path))?;
            let reps = if quick {
                3
            } else if n <= 500 {
                30
            } else {
                3
            };
            for recipe in &recipes {
                let number = u32::from(recipe.number);
                let wasm_req = ExtractRequest {
                    path: path.clone(),
                    recipe: Some(number),
                    query: None,
                    params: None,
                    slurp: false,
                    limit: Some(u32::MAX),
                };
                let machine_req = MachineRequest {
                    path: &path,
                    recipe: Some(number),
                    query: None,
                    params: None,
                    slurp: false,
                    limit: Some(u32::MAX),
                };
                let (mut wasm, mut nat, mut jq, mut jaq_times) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                let jaq_command = recipe.command.replacen("| jq ", "| jaq ", 1);
                // Why jaq's figure is missing for this recipe, when it is.
                let mut jaq_failed = if jaq.is_none() {
                    Some("–".to_owned())
                } else if jaq_command == recipe.command {
                    Some("(no `jq` in the command)".to_owned())
                } else {
                    None
                };
                let mut values = 0;
                for _ in 0..reps {
                    let start = Instant::now();
                    let result = runtime.extract(&config, &wasm_req)?;
                    wasm.push(start.elapsed());
                    values = result.total;
                    let start = Instant::now();
                    let result = lro_core::extractor::extract(&machine, &machine_req, now_ms())?;
                    nat.push(start.elapsed());
                    if result.total != values {
                        bail!(
                            "recipe {number}: the machine code gave {} values, the component {values}",
                            result.total
                        );
                    }
                    let start = Instant::now();
                    let output = Command::new("sh")
                        .args(["-c", &recipe.command])
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .output()?;
                    jq.push(start.elapsed());
                    if !output.status.success() {
                        bail!("{}: {}", recipe.command, String::from_utf8_lossy(&output.stderr));
                    }
                    if jaq_failed.is_none() {
                        let start = Instant::now();
                        let by_jaq = Command::new("sh")
                            .args(["-c", &jaq_command])
                            .stdout(Stdio::piped())
                            .stderr(Stdio::piped())
                            .output()?;
                        jaq_times.push(start.elapsed());
                        let lines = |text: &[u8]| text.iter().filter(|&&c| c == b'\n').count();
                        if !by_jaq.status.success() {
                            let said = String::from_utf8_lossy(&by_jaq.stderr);
                            jaq_failed = Some(format!("fails: {}", said.lines().next().unwrap_or("").trim()));
                        } else if lines(&by_jaq.stdout) != lines(&output.stdout) {
                            jaq_failed = Some(format!(
                                "differs: {} lines, jq {}",
                                lines(&by_jaq.stdout),
                                lines(&output.stdout)
                            ));
                        }
                    }
                }
                let (w, v, j) = (median(wasm), median(nat), median(jq));
                let (to_machine, jq_over) = (w.as_secs_f64() / v.as_secs_f64(), j.as_secs_f64() / w.as_secs_f64());
                let (jaq_time, jaq_over) = match jaq_failed {
                    Some(why) => (why, "–".to_owned()),
                    None => {
                        let t = median(jaq_times);
                        (ms(t), format!("{:.1}×", t.as_secs_f64() / w.as_secs_f64()))
                    }
                };
                writeln!(
                    out,
                    "| {n} | {number}. {} | {values} | {} | {} | {} | {jaq_time} | {to_machine:.2}× | {jq_over:.1}× | {jaq_over} |",
                    recipe.description,
                    ms(w),
                    ms(v),
                    ms(j)
                )?;
                if to_machine > worst_machine {
                    (worst_machine, worst_machine_at) = (to_machine, format!("recipe {number} at {n}"));
                }
                if n == 50_000 && jq_over < worst_jq {
                    (worst_jq, worst_jq_at) = (jq_over, format!("recipe {number}"));
                }
            }
            remove_all_in(&work)?;
        }
        large_file(&mut out, &mut targets, &config, &cache, quick)?;
        remove_all_in(&work)?;
        targets.push(Target {
            what: "extraction: component / machine-code jaq, worst recipe".into(),
            figure: format!("{worst_machine:.2}× ({worst_machine_at}; target ≤ 1.5× for every recipe)"),
            met: worst_machine <= 1.5,
        });
        if !quick {
            targets.push(Target {
                what: "extraction at 50,000 records: jq process / component, worst recipe".into(),
                figure: format!("{worst_jq:.1}× ({worst_jq_at}; target ≥ 2× for every recipe)"),
                met: worst_jq >= 2.0,
            });
        }
    }

    // ---- per call and loading ------------------------------------------------------------
    if wants("calls") {
        writeln!(out, "\n## Per call and loading\n")?;
        writeln!(out, "| what | median |\n|---|---:|")?;
        let reps = if quick { 200 } else { 2_000 };
        let fresh = runtime.with_options(Options {
            kept_instances: 0,
            ..options.clone()
        });
        let time_calls = |runtime: &Runtime| -> anyhow::Result<Duration> {
            let mut calls = Vec::with_capacity(reps);
            for _ in 0..reps {
                let start = Instant::now();
                runtime.estimate("")?;
                calls.push(start.elapsed());
            }
            Ok(median(calls))
        };
        let per_call = time_calls(&fresh)?;
        let kept = time_calls(&runtime)?;
        writeln!(
            out,
            "| a call: fresh Store + instantiation + `estimate(\"\")` | {} |",
            ms(per_call)
        )?;
        writeln!(
            out,
            "| a call in a kept instance (`Options::kept_instances`): `estimate(\"\")` | {} |",
            ms(kept)
        )?;
        targets.push(Target {
            what: "per-call Store + instantiation (with an empty call)".into(),
            figure: format!("{} (target ≤ 50 µs)", ms(per_call)),
            met: per_call <= Duration::from_micros(50),
        });
        let mut compile = Vec::new();
        let mut cached = Vec::new();
        let fresh_cache = dir.join("cache-bench");
        for i in 0..if quick { 2 } else { 5 } {
            let start = Instant::now();
            Runtime::new(Options {
                cache_dir: None,
                ..options.clone()
            })?;
            compile.push(start.elapsed());
            if i == 0 {
                // Fills the cache the loads below read.
                Runtime::new(Options {
                    cache_dir: Some(fresh_cache.clone()),
                    ..options.clone()
                })?;
            }
            for _ in 0..10 {
                let start = Instant::now();
                Runtime::new(Options {
                    cache_dir: Some(fresh_cache.clone()),
                    ..options.clone()
                })?;
                cached.push(start.elapsed());
            }
        }
        let (compile, cached) = (median(compile), median(cached));
        writeln!(out, "| load: compile the component (no cache) | {} |", ms(compile))?;
        writeln!(
            out,
            "| load: precompiled artifact from the disk cache | {} |",
            ms(cached)
        )?;
        let _ = std::fs::remove_dir_all(&fresh_cache);
        targets.push(Target {
            what: "loading a cached precompiled component".into(),
            figure: format!("{} (target ≤ 5 ms; compiling: {})", ms(cached), ms(compile)),
            met: cached <= Duration::from_millis(5),
        });
    }

    // ---- descriptor sizes and token savings ------------------------------------------------
    if wants("descriptors") {
        writeln!(
            out,
            "\n## Descriptor size and token savings\n\nEstimated tokens (the component's own estimate) of the \
         text forwarded instead of the records, at each detail level (records of that level) and \
         descriptor style, beside the inline result it replaced. *LRO / inline* is the ratio the \
         paper reports in Table 5 (0.38× to 1.28× at n = 50 to 500, measured over whole agent \
         sessions, so only the direction compares); *saved* is 1 minus it. The paper's Table 1 \
         assumes a descriptor of about 800 tokens (D).\n"
        )?;
        writeln!(
            out,
            "| detail | records | inline | full descriptor | LRO / inline | saved | bare descriptor | LRO / inline |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|"
        )?;
        // Descriptors carry the file path 12 times (file_path, guidance, ten commands), so their size
        // depends on it: measure them where files go by default. Only the files made here are removed.
        let default_dir = lro_host::default_output_dir();
        let desc_config = Config {
            output_dir: default_dir
                .to_str()
                .context("the default output directory must be UTF-8")?
                .to_owned(),
            ..runtime.defaults()?
        };
        let bare_config = Config {
            descriptor: DescriptorStyle::Bare,
            ..desc_config.clone()
        };
        let mut path_len = 0;
        let (mut worst_full, mut worst_bare) = (0u32, 0u32);
        // The largest full descriptor of each level, with its path, for the breakdown below.
        let mut largest: Vec<(&str, String, String)> = Vec::new();
        for detail in [Detail::Light, Detail::Medium, Detail::Full] {
            for &n in &sizes {
                let input = records(detail, n);
                let req = request(detail, &input);
                let (full, bare) = (
                    runtime.offload(&desc_config, &req)?,
                    runtime.offload(&bare_config, &req)?,
                );
                let (Outcome::Offloaded(full), Outcome::Offloaded(bare)) = (full, bare) else {
                    bail!("{n} {detail:?} records were not offloaded");
                };
                std::fs::remove_file(&full.path)?;
                std::fs::remove_file(&bare.path)?;
                path_len = full.path.len();
                let full_tokens = runtime.estimate(&full.descriptor)?;
                if n == *sizes.last().expect("sizes") {
                    largest.push((detail_name(detail), full.descriptor.clone(), full.path.clone()));
                }
                let bare_tokens = runtime.estimate(&bare.descriptor)?;
                worst_full = worst_full.max(full_tokens);
                worst_bare = worst_bare.max(bare_tokens);
                let inline = full.tokens;
                let ratio = f64::from(full_tokens) / f64::from(inline);
                writeln!(
                    out,
                    "| {} | {n} | {inline} | {full_tokens} | {ratio:.3}× | {:.1}% | {bare_tokens} | {:.4}× |",
                    detail_name(detail),
                    (1.0 - ratio) * 100.0,
                    f64::from(bare_tokens) / f64::from(inline)
                )?;
            }
        }
        writeln!(
            out,
            "\nFiles in the default output directory, `{}`: paths of {path_len} characters. Each further \
         character of the path adds 3 tokens to a full descriptor (12 copies, 4 characters a token).",
            default_dir.display()
        )?;
        writeln!(
            out,
            "\nWhere the tokens of a full descriptor go (the largest of each level): each member of the \
             descriptor object as `\"name\":value`, and, across all of them, what the copies of the file \
             path cost (the descriptor against the same text with the path left out of it).\n\n\
             | detail | summary | file_path | line_schema | jq_recipes | guidance | whole | of which path copies |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|"
        )?;
        for (detail, descriptor, path) in &largest {
            let value: serde_json::Value = serde_json::from_str(descriptor).context("a descriptor is JSON")?;
            let mut row = format!("| {detail} |");
            for key in ["summary", "file_path", "line_schema", "jq_recipes", "guidance"] {
                let member = format!("\"{key}\":{}", value.get(key).context("a descriptor member")?);
                write!(row, " {} |", runtime.estimate(&member)?)?;
            }
            let whole = runtime.estimate(descriptor)?;
            let without_path = runtime.estimate(&descriptor.replace(path.as_str(), ""))?;
            writeln!(out, "{row} {whole} | {} |", whole - without_path)?;
        }
        targets.push(Target {
            what: "full descriptor, largest at any level and size".into(),
            figure: format!("{worst_full} tokens (target ≤ 800; file paths of {path_len} characters)"),
            met: worst_full <= 800,
        });
        targets.push(Target {
            what: "bare descriptor, largest".into(),
            figure: format!("{worst_bare} tokens (target ≤ 100)"),
            met: worst_bare <= 100,
        });
    }

    // ---- the three hosts --------------------------------------------------------------------
    if wants("hosts") {
        hosts::section(&mut out, &mut targets, &dir, &runtime, &config, quick)?;
    }

    // ---- proxy -----------------------------------------------------------------------------
    if wants("proxy") {
        proxy::section(&mut out, &mut targets, &work, quick)?;
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
