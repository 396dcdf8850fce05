//! The hosts section of `lro bench`: the same offload calls in the Rust, Python and Node hosts,
//! on the same sample files, beside the offloader a Python or Node author would otherwise write
//! by hand. The Python and Node figures come from `tests/bench/hosts.py` and
//! `tests/bench/hosts.mjs`, run here as child processes over the component under test (the one
//! this `lro` embeds); each prints its medians as JSON.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use lro_host::{Config, Detail, Outcome, Runtime};
use serde::Deserialize;

use super::{Target, median, ms, records, remove_all_in, request};

/// Records in the tiny call: a result well under the threshold, answered inline.
const TINY: usize = 3;

/// What one binding's script prints.
#[derive(Deserialize)]
struct HostFigures {
    /// seconds: the tiny, inline call
    tiny: f64,
    /// by record count: seconds for records given as JSON text, as the language's own objects,
    /// and for the hand-written offloader
    offload: std::collections::BTreeMap<String, Offload>,
}

#[derive(Deserialize)]
struct Offload {
    text: f64,
    objects: f64,
    handwritten: f64,
}

/// The repository the benchmark runs from (`cargo run` builds `lro` inside it): the bindings,
/// their installed packages and the scripts live there.
fn repository() -> anyhow::Result<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let needs = [
        (".venv/bin/python", "the Python virtualenv"),
        ("bindings/node/node_modules", "the Node binding's packages"),
        ("tests/bench/hosts.py", "the Python host's script"),
    ];
    for (path, what) in needs {
        if !root.join(path).exists() {
            bail!(
                "the hosts section needs {what} ({path} in the repository at {}): `bash tests/run` \
                 installs it; or pass --only with another section",
                root.display()
            );
        }
    }
    Ok(root)
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Runs one binding's script (`command`, set up by the caller), and parses the JSON it prints.
fn figures(mut command: Command, what: &str) -> anyhow::Result<HostFigures> {
    let output = command
        .output()
        .with_context(|| format!("running the {what} host's benchmark"))?;
    if !output.status.success() {
        bail!(
            "the {what} host's benchmark failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    serde_json::from_slice(&output.stdout).with_context(|| format!("reading the {what} host's figures"))
}

/// Runs the section. `dir` receives the sample files and the component; `runtime` and `config`
/// are the Rust host's, and every host offloads into `config.output_dir`.
pub fn section(
    out: &mut String,
    targets: &mut Vec<Target>,
    dir: &Path,
    runtime: &Runtime,
    config: &Config,
    quick: bool,
) -> anyhow::Result<()> {
    let root = repository()?;
    let work = PathBuf::from(&config.output_dir);
    let samples = dir.join("host-samples");
    std::fs::create_dir_all(&samples)?;
    let sizes: &[usize] = if quick { &[500] } else { &[500, 50_000] };
    let (reps_small, reps_large) = if quick { (5, 2) } else { (100, 5) };

    // The Rust host, on the same files the scripts read.
    let tiny = records(Detail::Full, TINY);
    std::fs::write(samples.join("tiny.json"), &tiny)?;
    let tiny_req = request(Detail::Full, &tiny);
    if !matches!(runtime.offload(config, &tiny_req)?, Outcome::Inline(_)) {
        bail!("the tiny call was not answered inline");
    }
    let mut tiny_samples = Vec::new();
    for _ in 0..reps_small * 10 {
        let start = Instant::now();
        runtime.offload(config, &tiny_req)?;
        tiny_samples.push(start.elapsed());
    }
    let rust_tiny = median(tiny_samples);
    let mut rust = Vec::new();
    for &n in sizes {
        let input = records(Detail::Full, n);
        std::fs::write(samples.join(format!("records-{n}.json")), &input)?;
        let req = request(Detail::Full, &input);
        let mut samples = Vec::new();
        for _ in 0..if n <= 500 { reps_small } else { reps_large } {
            let start = Instant::now();
            let outcome = runtime.offload(config, &req)?;
            samples.push(start.elapsed());
            if !matches!(outcome, Outcome::Offloaded(_)) {
                bail!("{n} records were not offloaded");
            }
            remove_all_in(&work)?;
        }
        rust.push((n, median(samples), input.len()));
    }

    // The bindings, over the component this `lro` embeds.
    let wasm = dir.join("lro.wasm");
    std::fs::write(&wasm, lro_host::COMPONENT)?;
    let reps = [reps_small.to_string(), reps_large.to_string()];
    let mut python = Command::new(root.join(".venv/bin/python"));
    python
        .arg(root.join("tests/bench/hosts.py"))
        .arg(&wasm)
        .args([&samples, &work])
        .args(&reps)
        .env("PYTHONPATH", root.join("bindings/python"));
    let python = figures(python, "Python")?;
    let build = Command::new("npm")
        .args(["run", "--silent", "build"])
        .current_dir(root.join("bindings/node"))
        .env("LRO_WASM", &wasm)
        .output()
        .context("running npm in bindings/node")?;
    if !build.status.success() {
        bail!(
            "`npm run build` in bindings/node failed: {}",
            String::from_utf8_lossy(&build.stderr).trim()
        );
    }
    let mut node = Command::new("node");
    node.arg(root.join("tests/bench/hosts.mjs"))
        .args([&samples, &work])
        .args(&reps);
    let node = figures(node, "Node")?;

    writeln!(
        out,
        "\n## Hosts\n\nThe same `offload` calls in the three hosts, on the same files of full-detail \
         records (threshold 1,600 tokens): the Rust host (`Runtime::offload`), the Python package \
         (`Lro.offload`, wasmtime-py; `tests/bench/hosts.py`) and the Node package (`lro.offload`, \
         jco; `tests/bench/hosts.mjs`); each keeps an instance for calls of at most 1 MiB of \
         arguments (docs/HOSTS.md, step 2) and makes a fresh one for larger calls. Records are given as \
         JSON text, or as the language's own objects (dicts, JS objects), which the binding \
         serialises. *Hand-written*: what an author would otherwise write in that language, one \
         `json.dumps` / `JSON.stringify` per record, a token estimate and one file write. The \
         tiny call offloads {TINY} records, which come back inline.\n"
    )?;
    writeln!(
        out,
        "| call | Rust host | Python host | Node host | hand-written Python | hand-written Node |\n\
         |---|---:|---:|---:|---:|---:|"
    )?;
    writeln!(
        out,
        "| a tiny call (inline result) | {} | {} | {} | – | – |",
        ms(rust_tiny),
        ms(secs(python.tiny)),
        ms(secs(node.tiny))
    )?;
    for &(n, rust_time, bytes) in &rust {
        let key = n.to_string();
        let (Some(py), Some(js)) = (python.offload.get(&key), node.offload.get(&key)) else {
            bail!("a host's script gave no figures for {n} records");
        };
        let size = format!("{:.1} MB", bytes as f64 / 1e6);
        writeln!(
            out,
            "| offload {n} records ({size}) as JSON text | {} | {} | {} | – | – |",
            ms(rust_time),
            ms(secs(py.text)),
            ms(secs(js.text))
        )?;
        writeln!(
            out,
            "| offload {n} records ({size}) as objects | – | {} | {} | {} | {} |",
            ms(secs(py.objects)),
            ms(secs(js.objects)),
            ms(secs(py.handwritten)),
            ms(secs(js.handwritten))
        )?;
        let rust_s = rust_time.as_secs_f64();
        if n == 500 {
            let ratio = js.objects.min(js.text) / rust_s;
            targets.push(Target {
                what: "Node host: offload of 500 records / Rust host".into(),
                figure: format!("{ratio:.2}× (target ≤ 2×)"),
                met: ratio <= 2.0,
            });
        }
        let ratio = py.text / rust_s;
        targets.push(Target {
            what: format!("Python host: offload of {n} records given as JSON text / Rust host"),
            figure: format!("{ratio:.2}× (target ≤ 1.5×)"),
            met: ratio <= 1.5,
        });
        if n == 50_000 {
            let ratio = py.handwritten / py.objects;
            targets.push(Target {
                what: "Python host: hand-written offloader / lro, 50,000 records given as objects".into(),
                figure: format!("{ratio:.2}× faster (target ≥ 3×)"),
                met: ratio >= 3.0,
            });
        }
    }
    targets.push(Target {
        what: "Python host: a tiny call".into(),
        figure: format!("{} (target ≤ 0.2 ms)", ms(secs(python.tiny))),
        met: python.tiny <= 0.2e-3,
    });
    targets.push(Target {
        what: "Node host: a tiny call".into(),
        figure: format!("{} (target ≤ 0.3 ms)", ms(secs(node.tiny))),
        met: node.tiny <= 0.3e-3,
    });
    std::fs::remove_dir_all(&samples)?;
    remove_all_in(&work)?;
    Ok(())
}
