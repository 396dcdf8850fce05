//! The `lro` command as a user runs it: stdout, stderr and exit codes.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

mod extract;

fn lro(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lro"));
    command.args(args).env("LRO_CACHE_DIR", crate::common::cache_dir());
    for (k, v) in env {
        command.env(k, v);
    }
    for (k, _) in std::env::vars() {
        if k.starts_with("ATLATL_") && !env.iter().any(|(e, _)| *e == k) {
            command.env_remove(k);
        }
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that fails before reading its input closes the pipe: not the test's concern.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn sample(args: &[&str]) -> String {
    let out = lro(&[&["sample"], args].concat(), "", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

fn dir_arg(dir: &Path) -> String {
    dir.to_str().unwrap().to_owned()
}

#[test]
fn offload_of_a_sample_prints_the_descriptor() {
    let dir = crate::common::tempdir().unwrap();
    let input = sample(&["--detail", "full", "--count", "500"]);
    let out = lro(
        &[
            "offload",
            "--operation",
            "recall",
            "--detail",
            "full",
            "--output-dir",
            &dir_arg(dir.path()),
        ],
        &input,
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let d: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(d["offloaded"], true);
    assert_eq!(d["summary"]["count"], 500);
    assert_eq!(d["jq_recipes"].as_array().unwrap().len(), 10);
    assert!(Path::new(d["file_path"].as_str().unwrap()).is_file());
}

#[test]
fn small_results_pass_through_compact() {
    let dir = crate::common::tempdir().unwrap();
    let out = lro(
        &["offload", "--output-dir", &dir_arg(dir.path())],
        "[ {\"id\": \"a\"} ]",
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[{\"id\":\"a\"}]\n");
}

#[test]
fn invalid_json_and_wrong_shapes_exit_2_saying_what_is_wrong() {
    let dir = crate::common::tempdir().unwrap();
    let d = dir_arg(dir.path());
    let cases: [(&[&str], &str, &str); 5] = [
        (
            &["offload", "--output-dir", &d],
            "[{\"id\": 1},",
            "records are not valid JSON",
        ),
        (
            &["offload", "--output-dir", &d],
            "{\"id\": 1}",
            "records must be a JSON array of memory objects or search hits, got an object",
        ),
        (&["offload", "--output-dir", &d], "[1]", "records[0] is a number"),
        (
            &["offload", "--operation", "inject", "--output-dir", &d],
            "[]",
            "inject input must be {\"records\": [...], \"text\": \"...\"}",
        ),
        (
            &["offload", "--operation", "inject", "--output-dir", &d],
            "{\"records\": []}",
            "missing field `text`",
        ),
    ];
    for (args, input, message) in cases {
        let out = lro(args, input, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?} {input}");
        assert!(stderr(&out).contains(message), "{input}: {}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }
    let out = lro(&["offload", "/no/such/file.json"], "", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("reading /no/such/file.json"), "{}", stderr(&out));
}

#[test]
fn inject_input_stays_text_below_threshold() {
    let dir = crate::common::tempdir().unwrap();
    let input = sample(&["--detail", "medium", "--count", "3", "--inject"]);
    let text = serde_json::from_str::<Value>(&input).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = lro(
        &["offload", "--operation", "inject", "--output-dir", &dir_arg(dir.path())],
        &input,
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{text}\n"));
}

#[test]
fn config_precedence_is_flags_then_environment_then_file() {
    let dir = crate::common::tempdir().unwrap();
    let d = dir_arg(dir.path());
    let file = dir.path().join("lro.toml");
    std::fs::write(&file, "[prompt.offload]\nthreshold_tokens = 1000000\n").unwrap();
    let f = file.to_str().unwrap();
    let input = sample(&["--detail", "light", "--count", "100"]);
    let offloaded = |o: &Output| {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
        serde_json::from_str::<Value>(&stdout(o))
            .unwrap()
            .get("offloaded")
            .is_some()
    };
    let env = [("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS", "10")];
    assert!(
        !offloaded(&lro(&["offload", "--config", f, "--output-dir", &d], &input, &[])),
        "file: inline"
    );
    assert!(
        offloaded(&lro(&["offload", "--config", f, "--output-dir", &d], &input, &env)),
        "env beats file"
    );
    assert!(
        !offloaded(&lro(
            &["offload", "--config", f, "--output-dir", &d, "--threshold", "1000000"],
            &input,
            &env
        )),
        "flag beats env"
    );
    let out_dir = dir.path().join("from-env");
    let env_dir = [
        ("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", out_dir.to_str().unwrap()),
        env[0],
    ];
    assert!(offloaded(&lro(&["offload"], &input, &env_dir)));
    assert_eq!(
        crate::common::names(&out_dir).len(),
        1,
        "output_dir from the environment"
    );
}

#[test]
fn a_bad_config_value_names_the_key_and_exits_2() {
    let out = lro(&["offload"], "[]", &[("ATLATL_PROMPT__OFFLOAD__ENABLED", "maybe")]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "lro: prompt.offload.enabled (from ATLATL_PROMPT__OFFLOAD__ENABLED): expected true or false, got \"maybe\"\n"
    );
    // A misspelt variable is refused as a misspelt key in the file is, not ignored.
    let out = lro(
        &["offload"],
        "[]",
        &[("ATLATL_PROMPT__OFFLOAD__THRESHHOLD_TOKENS", "5")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(
            "lro: unknown key prompt.offload.threshhold_tokens in ATLATL_PROMPT__OFFLOAD__THRESHHOLD_TOKENS; known keys: enabled, threshold_tokens,"
        ),
        "{}",
        stderr(&out)
    );
    let out = lro(&["offload", "--threshold", "many"], "[]", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "lro: prompt.offload.threshold_tokens (from --threshold-tokens): expected a whole number from 0 to 4294967295, got \"many\"\n"
    );
}

#[test]
fn events_flag_prints_json_lines_on_stderr() {
    let dir = crate::common::tempdir().unwrap();
    let input = sample(&["--detail", "light", "--count", "100"]);
    let out = lro(
        &[
            "offload",
            "--events",
            "--threshold",
            "10",
            "--output-dir",
            &dir_arg(dir.path()),
        ],
        &input,
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let event: Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(event["event"], "OffloadCreated");
    assert_eq!(event["count"], 100);
}

#[test]
fn sweep_with_now_deletes_expired_files_and_reports_them() {
    let dir = crate::common::tempdir().unwrap();
    let d = dir_arg(dir.path());
    let input = sample(&["--detail", "light", "--count", "100"]);
    let out = lro(&["offload", "--threshold", "10", "--output-dir", &d], &input, &[]);
    let path = serde_json::from_str::<Value>(&stdout(&out)).unwrap()["file_path"]
        .as_str()
        .unwrap()
        .to_owned();
    let kept = lro(&["sweep", "--output-dir", &d, "--ttl", "3600"], "", &[]);
    assert_eq!(
        stdout(&kept),
        "{\"deleted\":[],\"kept\":1,\"failed\":[]}\n",
        "{}",
        stderr(&kept)
    );
    let later = lro(
        &[
            "sweep",
            "--output-dir",
            &d,
            "--ttl",
            "3600",
            "--now",
            "2999-01-01T00:00:00Z",
            "--events",
        ],
        "",
        &[],
    );
    assert_eq!(later.status.code(), Some(0), "{}", stderr(&later));
    let report: Value = serde_json::from_str(&stdout(&later)).unwrap();
    assert_eq!(report["deleted"], serde_json::json!([path]));
    assert!(stderr(&later).contains("\"event\":\"OffloadFileExpired\""));
    let bad = lro(&["sweep", "--output-dir", &d, "--now", "tomorrow"], "", &[]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("--now: expected an RFC 3339 timestamp"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn recipes_lists_ten_per_level() {
    for level in ["light", "medium", "full"] {
        let out = lro(&["recipes", "--detail", level, "--json"], "", &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let list: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(list.as_array().unwrap().len(), 10);
        assert!(
            list[0]["command"]
                .as_str()
                .unwrap()
                .starts_with("tail -n +2 {file} | jq -r")
        );
    }
    let text = stdout(&lro(&["recipes"], "", &[]));
    assert!(
        text.starts_with(
            " 1  List titles with namespaces\n    tail -n +2 {file} | jq -r '[.title, .namespace] | @tsv'\n"
        ),
        "{text}"
    );
}

#[test]
fn component_writes_the_embedded_wasm() {
    let dir = crate::common::tempdir().unwrap();
    let file = dir.path().join("lro.wasm");
    let out = lro(&["component", "-o", file.to_str().unwrap()], "", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(bytes, lro_host::COMPONENT);
    assert_eq!(&bytes[..4], b"\0asm");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(
        lro(&["offload", "--operation", "delete"], "", &[]).status.code(),
        Some(2)
    );
    assert_eq!(lro(&["frobnicate"], "", &[]).status.code(), Some(2));
}

/// One version across the crates, the WIT package and the Python and npm packages
/// (CHANGELOG.md, "Versions").
#[test]
fn every_artifact_carries_the_one_version() {
    let version = env!("CARGO_PKG_VERSION");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(
        read("wit/world.wit").contains(&format!("package lro:component@{version};")),
        "wit/world.wit"
    );
    let pyproject: toml::Table = toml::from_str(&read("bindings/python/pyproject.toml")).unwrap();
    assert_eq!(
        pyproject["project"]["version"].as_str(),
        Some(version),
        "pyproject.toml"
    );
    let package: serde_json::Value = serde_json::from_str(&read("bindings/node/package.json")).unwrap();
    assert_eq!(package["version"].as_str(), Some(version), "package.json");
    // lro-cli on npm, and the platform packages it names (packaging/build writes theirs with the
    // workspace's version); the wheel's version is Cargo's own (maturin).
    let cli: serde_json::Value = serde_json::from_str(&read("packaging/npm/lro-cli/package.json")).unwrap();
    assert_eq!(
        cli["version"].as_str(),
        Some(version),
        "packaging/npm/lro-cli/package.json"
    );
    for (name, wanted) in cli["optionalDependencies"].as_object().unwrap() {
        assert_eq!(wanted.as_str(), Some(version), "lro-cli's optional dependency {name}");
    }
    assert!(
        read("CHANGELOG.md").contains(&format!("## {version}")),
        "CHANGELOG.md has an entry for {version}"
    );
}

/// `lro bench --only hosts` runs the Python and Node packages' scripts (tests/bench/) over the
/// embedded component: a smoke run checks that every host reported a figure for every call, so
/// the one command that measures all three hosts keeps working. No time is asserted.
#[test]
fn bench_measures_the_three_hosts_side_by_side() {
    let dir = crate::common::tempdir().unwrap();
    let args = ["bench", "--quick", "--only", "hosts", "--dir", &dir_arg(dir.path())];
    let out = lro(&args, "", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    let rows = [
        ("| a tiny call (inline result) |", 3),
        ("| offload 500 records (0.4 MB) as JSON text |", 3),
        ("| offload 500 records (0.4 MB) as objects |", 4),
    ];
    for (row, times) in rows {
        let line = report
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row `{row}` in\n{report}"));
        let given = line.matches(" ms |").count() + line.matches(" µs |").count();
        assert_eq!(given, times, "a host gave no time: {line}");
    }
}
