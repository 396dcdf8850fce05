//! The hosts section of `lro bench`: the same offload calls in the Rust, Python and Node hosts,
//! on the same sample files, beside the offloader a Python or Node author would otherwise write
//! by hand. The Python and Node figures come from `tests/bench/hosts.py` and
//! `tests/bench/hosts.mjs`, run here as child processes over the component under test (the one
//! this `lro` embeds). The three hosts take turns, a round each: this machine's speed drifts by
//! up to 1.8× within a minute (docs/BENCH-NOTES.md), so hosts measured one after the other
//! would compare the drift, not the hosts. Each script answers a line of JSON (the round's medians) for each line it
//! reads.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use lro_host::{Config, Detail, Outcome, Request, Runtime};
use serde::Deserialize;

use super::{Target, median, ms, records, remove_all_in, request};

/// Records in the tiny call: a result well under the threshold, answered inline.
const TINY: usize = 3;

/// What one binding's script prints for a round.
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

/// The Rust host's round: the tiny call, and records given as JSON text by record count.
struct RustFigures {
    tiny: f64,
    offload: Vec<(usize, f64)>,
}

/// The three hosts' medians in one round.
struct Round {
    rust: RustFigures,
    python: HostFigures,
    node: HostFigures,
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

/// The median of `values`.
fn mid(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One binding's script, running: it measures a round each time it is asked.
struct Script {
    what: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: PathBuf,
}

impl Script {
    /// Starts `command` (set up by the caller); its standard error goes to the file `stderr`,
    /// read back when it fails.
    fn start(mut command: Command, what: &'static str, stderr: PathBuf) -> anyhow::Result<Self> {
        let log = File::create(&stderr).with_context(|| format!("creating {}", stderr.display()))?;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting the {what} host's benchmark"))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().context("the script's standard output")?);
        Ok(Self {
            what,
            child,
            stdin,
            stdout,
            stderr,
        })
    }

    /// Runs one round and reads its medians.
    fn round(&mut self, reps_small: usize, reps_large: usize) -> anyhow::Result<HostFigures> {
        let what = self.what;
        let mut line = String::new();
        let answered = match self.stdin.as_mut() {
            Some(stdin) => writeln!(stdin, "{{\"reps_small\": {reps_small}, \"reps_large\": {reps_large}}}")
                .and_then(|()| stdin.flush())
                .and_then(|()| self.stdout.read_line(&mut line))
                .is_ok_and(|n| n > 0),
            None => false,
        };
        if !answered {
            drop(self.stdin.take());
            let status = self
                .child
                .wait()
                .with_context(|| format!("waiting for the {what} host's benchmark"))?;
            let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
            bail!("the {what} host's benchmark failed ({status}): {}", stderr.trim());
        }
        serde_json::from_str(&line).with_context(|| format!("reading the {what} host's figures: {line}"))
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        // The end of its input ends the script.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The Rust host's round, on the same calls the scripts make.
fn rust_round(
    runtime: &Runtime,
    config: &Config,
    tiny: &Request,
    calls: &[(usize, Request)],
    work: &Path,
    (reps_small, reps_large): (usize, usize),
) -> anyhow::Result<RustFigures> {
    let mut samples = Vec::new();
    for _ in 0..reps_small * 10 {
        let start = Instant::now();
        runtime.offload(config, tiny)?;
        samples.push(start.elapsed());
    }
    let tiny = median(samples).as_secs_f64();
    let mut offload = Vec::new();
    for (n, req) in calls {
        let mut samples = Vec::new();
        for _ in 0..if *n <= 500 { reps_small } else { reps_large } {
            let start = Instant::now();
            let outcome = runtime.offload(config, req)?;
            samples.push(start.elapsed());
            if !matches!(outcome, Outcome::Offloaded(_)) {
                bail!("{n} records were not offloaded");
            }
            remove_all_in(work)?;
        }
        offload.push((*n, median(samples).as_secs_f64()));
    }
    Ok(RustFigures { tiny, offload })
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
    let (rounds, reps) = if quick { (2, (3, 1)) } else { (7, (15, 1)) };

    // The same files for every host.
    let tiny = records(Detail::Full, TINY);
    std::fs::write(samples.join("tiny.json"), &tiny)?;
    let tiny_req = request(Detail::Full, &tiny);
    if !matches!(runtime.offload(config, &tiny_req)?, Outcome::Inline(_)) {
        bail!("the tiny call was not answered inline");
    }
    let mut calls = Vec::new();
    let mut sizes_bytes = Vec::new();
    for &n in sizes {
        let input = records(Detail::Full, n);
        std::fs::write(samples.join(format!("records-{n}.json")), &input)?;
        sizes_bytes.push((n, input.len()));
        calls.push((n, request(Detail::Full, &input)));
    }

    // The bindings, over the component this `lro` embeds.
    let wasm = dir.join("lro.wasm");
    std::fs::write(&wasm, lro_host::COMPONENT)?;
    // A directory of its own for each script: their start-up checks run at the same time, and
    // each empties its directory after every call (one deleting the other's file while it was
    // being written made that offload fall back, and the bench fail).
    let own_dir = |name: &str| -> anyhow::Result<PathBuf> {
        let path = work.join(name);
        std::fs::create_dir_all(&path)?;
        #[cfg(unix)]
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        Ok(path)
    };
    let (python_dir, node_dir, rust_dir) = (own_dir("python")?, own_dir("node")?, own_dir("rust")?);
    // The Rust host too: emptying the shared parent after each call deleted the scripts' own
    // directories under them while they were offloading.
    let rust_config = Config {
        output_dir: rust_dir
            .to_str()
            .context("the bench directory must be UTF-8")?
            .to_owned(),
        ..config.clone()
    };
    let mut python = Command::new(root.join(".venv/bin/python"));
    python
        .arg(root.join("tests/bench/hosts.py"))
        .arg(&wasm)
        .args([&samples, &python_dir])
        .env("PYTHONPATH", root.join("bindings/python"));
    let mut python = Script::start(python, "Python", dir.join("python.stderr"))?;
    // A gen/ of its own: rebuilding bindings/node/gen would pull it from under a running
    // `npm test` (tests/run runs the bench's test beside the Node suite).
    let node_gen = dir.join("node-gen");
    let build = Command::new("node")
        .arg("scripts/build.js")
        .arg(&node_gen)
        .current_dir(root.join("bindings/node"))
        .env("LRO_WASM", &wasm)
        .output()
        .context("running node scripts/build.js in bindings/node")?;
    if !build.status.success() {
        bail!(
            "`node scripts/build.js` in bindings/node failed: {}",
            String::from_utf8_lossy(&build.stderr).trim()
        );
    }
    let mut node = Command::new("node");
    node.arg(root.join("tests/bench/hosts.mjs"))
        .args([&samples, &node_dir])
        .arg(&node_gen);
    let mut node = Script::start(node, "Node", dir.join("node.stderr"))?;

    // A first round warms every host up and is not counted: V8 compiles the component's hot
    // functions optimised only after some calls, and each host's kept instance grows its memory.
    let mut measured = Vec::new();
    for round in 0..=rounds {
        let rust = rust_round(runtime, &rust_config, &tiny_req, &calls, &rust_dir, reps)?;
        let (python, node) = (python.round(reps.0, reps.1)?, node.round(reps.0, reps.1)?);
        if round > 0 {
            measured.push(Round { rust, python, node });
        }
    }
    drop((python, node));

    let larger = match (sizes.iter().any(|&n| n > 500), reps.1) {
        (false, _) => String::new(),
        (true, 1) => ", each larger call once".to_owned(),
        (true, n) => format!(", each larger call {n} times"),
    };
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
         tiny call offloads {TINY} records, which come back inline.\n\n\
         The hosts take turns: {rounds} rounds, after a warm-up round that is not counted; in each \
         round the Rust host, then Python, then Node make each call of at most 500 records {} \
         times{larger}, and the tiny call {} times. Times are the median of the rounds' medians; \
         each ratio in the targets is taken within a round, and the median of those is reported, \
         so a drift of the machine's speed between rounds does not enter it.\n",
        reps.0,
        reps.0 * 10
    )?;
    writeln!(
        out,
        "| call | Rust host | Python host | Node host | hand-written Python | hand-written Node |\n\
         |---|---:|---:|---:|---:|---:|"
    )?;
    let each = |f: &dyn Fn(&Round) -> f64| mid(measured.iter().map(f));
    writeln!(
        out,
        "| a tiny call (inline result) | {} | {} | {} | – | – |",
        ms(secs(each(&|r| r.rust.tiny))),
        ms(secs(each(&|r| r.python.tiny))),
        ms(secs(each(&|r| r.node.tiny)))
    )?;
    for (i, &(n, bytes)) in sizes_bytes.iter().enumerate() {
        let key = n.to_string();
        for r in &measured {
            if !r.python.offload.contains_key(&key) || !r.node.offload.contains_key(&key) {
                bail!("a host's script gave no figures for {n} records");
            }
        }
        let rust = |r: &Round| r.rust.offload[i].1;
        let size = format!("{:.1} MB", bytes as f64 / 1e6);
        writeln!(
            out,
            "| offload {n} records ({size}) as JSON text | {} | {} | {} | – | – |",
            ms(secs(each(&rust))),
            ms(secs(each(&|r| r.python.offload[&key].text))),
            ms(secs(each(&|r| r.node.offload[&key].text)))
        )?;
        writeln!(
            out,
            "| offload {n} records ({size}) as objects | – | {} | {} | {} | {} |",
            ms(secs(each(&|r| r.python.offload[&key].objects))),
            ms(secs(each(&|r| r.node.offload[&key].objects))),
            ms(secs(each(&|r| r.python.offload[&key].handwritten))),
            ms(secs(each(&|r| r.node.offload[&key].handwritten)))
        )?;
        if n == 500 {
            let ratio = each(&|r| r.node.offload[&key].objects.min(r.node.offload[&key].text) / rust(r));
            targets.push(Target {
                what: "Node host: offload of 500 records / Rust host".into(),
                figure: format!("{ratio:.2}× (target ≤ 2×)"),
                met: ratio <= 2.0,
            });
        }
        let ratio = each(&|r| r.python.offload[&key].text / rust(r));
        targets.push(Target {
            what: format!("Python host: offload of {n} records given as JSON text / Rust host"),
            figure: format!("{ratio:.2}× (target ≤ 1.5×)"),
            met: ratio <= 1.5,
        });
        if n == 50_000 {
            let ratio = each(&|r| r.python.offload[&key].handwritten / r.python.offload[&key].objects);
            targets.push(Target {
                what: "Python host: hand-written offloader / lro, 50,000 records given as objects".into(),
                figure: format!("{ratio:.2}× faster (target ≥ 3×)"),
                met: ratio >= 3.0,
            });
        }
    }
    let (python_tiny, node_tiny) = (each(&|r| r.python.tiny), each(&|r| r.node.tiny));
    targets.push(Target {
        what: "Python host: a tiny call".into(),
        figure: format!("{} (target ≤ 0.2 ms)", ms(secs(python_tiny))),
        met: python_tiny <= 0.2e-3,
    });
    targets.push(Target {
        what: "Node host: a tiny call".into(),
        figure: format!("{} (target ≤ 0.3 ms)", ms(secs(node_tiny))),
        met: node_tiny <= 0.3e-3,
    });
    std::fs::remove_dir_all(&samples)?;
    remove_all_in(&work)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_answers_a_line_for_each_round() {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new("sh");
        command.args([
            "-c",
            r#"while read line; do echo '{"tiny": 0.5, "offload": {"500": {"text": 1, "objects": 2, "handwritten": 3}}}'; done"#,
        ]);
        let mut script = Script::start(command, "Python", dir.path().join("stderr")).unwrap();
        for _ in 0..2 {
            let figures = script.round(3, 1).unwrap();
            assert_eq!(figures.tiny, 0.5);
            assert_eq!(figures.offload["500"].objects, 2.0);
        }
    }

    #[test]
    fn a_script_that_fails_is_reported_with_its_error_output() {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new("sh");
        command.args(["-c", "read line; echo 'No module named lro_wasm' >&2; exit 3"]);
        let mut script = Script::start(command, "Python", dir.path().join("stderr")).unwrap();
        let Err(error) = script.round(3, 1) else {
            panic!("a failed script gave figures");
        };
        assert_eq!(
            error.to_string(),
            "the Python host's benchmark failed (exit status: 3): No module named lro_wasm"
        );
    }
}
