//! Faults: odd files, odd inputs, full or read-only file systems, races, damaged files.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::robustness::*;
use lro_host::{ComponentError, Error, ExtractRequest, Operation};
use serde_json::{Value, json};

/// Defect 14: a FIFO wearing an LRO name hung extraction forever (a deadline cannot interrupt
/// a blocking open).
#[test]
fn a_fifo_wearing_an_lro_name_is_refused_without_blocking() {
    let dir = private_dir();
    let fifo = dir.path().join("atlatl-recall-01JDEF7X2K0000000000000000.jsonl");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let started = Instant::now();
    let err = RUNTIME
        .extract(
            &config(dir.path(), 100),
            &ExtractRequest {
                recipe: Some(1),
                ..extract_request(fifo.to_str().unwrap())
            },
        )
        .unwrap_err();
    assert!(
        matches!(&err, Error::Component(ComponentError::NotLroFile(m)) if m.contains("not a regular file")),
        "{err}"
    );
    // Generous: the only bound that matters is "not forever".
    assert!(started.elapsed() < Duration::from_secs(20));
    // A sweep leaves it alone too.
    let report = RUNTIME.sweep(&config(dir.path(), 100), u64::MAX / 2).unwrap();
    assert!(report.deleted.is_empty());
}

/// Defect 15: inputs that crashed the component, or that it accepted but could not serve.
#[test]
fn odd_inputs_are_typed_errors_never_traps() {
    let dir = private_dir();
    let config = config(dir.path(), 1);
    for (records, says) in [
        (
            r#"[{"id":"a","namespace":"n","title":"\ud800"}]"#,
            "records[0] cannot be written as JSON",
        ),
        (r#"[{"id":"a","namespace":"n","n":1e400}]"#, "number out of range"),
        (r#"[{"memory":{"id":"a"},"score":1e400}]"#, "records[0]"),
    ] {
        let err = RUNTIME
            .offload(
                &config,
                &lro_host::Request {
                    operation: Operation::Recall,
                    query: None,
                    detail: None,
                    records: records.into(),
                    text: None,
                },
            )
            .unwrap_err();
        assert!(
            matches!(&err, Error::Component(ComponentError::InvalidInput(m)) if m.contains(says)),
            "{records}: {err}"
        );
    }
    let output = lro().args(["--timeout", "1e300", "query", "."]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--timeout must be") && !stderr.contains("panicked"),
        "{stderr}"
    );
}

/// Defect 15: records nested deeper than the extractor reads were offloaded, and could then
/// never be read back whole. The deepest record offload accepts is read by every path; one
/// level deeper is refused.
#[test]
fn every_record_offload_accepts_can_be_extracted() {
    // `depth` levels in all: the record object and `depth - 1` arrays under `x`.
    let record = |depth: usize| {
        let arrays = depth - 1;
        format!(
            r#"{{"id":"a","namespace":"n","title":"t","created":"x","x":{}{}}}"#,
            "[".repeat(arrays),
            "]".repeat(arrays)
        )
    };
    let dir = private_dir();
    let config = config(dir.path(), 10);
    let offload = |records: String| {
        RUNTIME.offload(
            &config,
            &lro_host::Request {
                operation: Operation::Recall,
                query: None,
                detail: None,
                records,
                text: None,
            },
        )
    };
    let path = offloaded_path(offload(format!("[{}]", vec![record(1000); 5].join(","))).unwrap());
    for (query, slurp) in [
        (".", false),
        (r#"select(.id == "a") | .x | length"#, false),
        ("{id}", false),
        ("map(.x) | length", true),
        ("sort_by(.id) | length", true),
    ] {
        let out = RUNTIME
            .extract(
                &config,
                &ExtractRequest {
                    query: Some(query.into()),
                    slurp,
                    limit: Some(u32::MAX),
                    ..extract_request(&path)
                },
            )
            .unwrap_or_else(|e| panic!("{query}: {e}"));
        assert!(out.total > 0, "{query}");
    }
    let err = offload(format!("[{}]", record(1001))).unwrap_err();
    assert!(
        matches!(&err, Error::Component(ComponentError::InvalidInput(m)) if m.contains("nested 1001 levels deep")),
        "{err}"
    );
}

// See: issue 34, item 13. At the MCP level, JSON nested 128 levels or more (serde_json's recursion
// limit) lost its structure: records in text content became one text line, and a result with
// such structured content was refused. Records of the documented 1,000 levels keep their
// structure through every path of the component; deeper is `invalid-input`, never a trap.
#[test]
fn records_nested_1000_levels_keep_their_structure_at_the_mcp_level() {
    // `depth` levels: a memory-like record whose `a` holds `depth - 1` nested objects, the
    // innermost `{"id": i}`; written with spaces, so it is transcoded rather than copied.
    let record = |depth: usize, i: usize| {
        let mut chain = format!(r#"{{"id": {i}}}"#);
        for _ in 2..depth {
            chain = format!(r#"{{"a": {chain}}}"#);
        }
        format!(r#"{{"id": {i}, "namespace": "n", "title": "deep {i}", "created": "x", "a": {chain}}}"#)
    };
    let records = |depth: usize| format!("[{}]", (0..5).map(|i| record(depth, i)).collect::<Vec<_>>().join(", "));
    let text_result = |records: &str| format!(r#"{{"content":[{{"type":"text","text":{}}}]}}"#, json!(records));
    let structured_result = |records: &str| format!(r#"{{"content":[],"structuredContent":{{"results":{records}}}}}"#);
    let dir = private_dir();
    let cfg = config(dir.path(), 10);
    let intercept = |config: &lro_host::Config, tool: &str, result: String| {
        RUNTIME.intercept(
            config,
            &lro_host::ToolCall {
                tool: tool.into(),
                arguments: "{}".into(),
                result,
                meta: None,
            },
        )
    };
    // The innermost id of every record, read back through the path of 999 `a`s: the structure
    // is in the file.
    let innermost = |path: &str| {
        let out = RUNTIME
            .extract(
                &cfg,
                &ExtractRequest {
                    query: Some(r#"getpath([range(999) | "a"]) | .id"#.into()),
                    limit: Some(u32::MAX),
                    ..extract_request(path)
                },
            )
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        out.values
    };
    let deep = records(1000);
    for (tool, result, section) in [
        ("search_things", text_result(&deep), "-results-"),
        ("search_things", structured_result(&deep), "-results-"),
        ("recall_memories", text_result(&deep), "-recall-"),
        ("recall_memories", structured_result(&deep), "-recall-"),
    ] {
        let outcome = intercept(&cfg, tool, result).unwrap_or_else(|e| panic!("{tool} {section}: {e}"));
        let lro_host::ToolOutcome::Offloaded(o) = outcome else {
            panic!("{tool} {section}: {outcome:?}")
        };
        assert_eq!(o.files.len(), 1, "{tool}: {:?}", o.files);
        assert!(o.files[0].contains(section), "{tool}: {:?}", o.files);
        assert_eq!(innermost(&o.files[0]), ["0", "1", "2", "3", "4"], "{tool} {section}");
    }
    // The fallback when nothing can be written holds records that deep too.
    let capped = lro_host::Config {
        max_bytes: 1,
        threshold_tokens: 5000,
        ..cfg.clone()
    };
    for tool in ["search_things", "recall_memories"] {
        let outcome = intercept(&capped, tool, text_result(&deep)).unwrap();
        let lro_host::ToolOutcome::Degraded(d) = outcome else {
            panic!("{tool}: {outcome:?}")
        };
        assert!(d.result.contains(r#"\"id\":0"#), "{tool}: {:.300}", d.result);
    }
    // And the record level, given records that must be transcoded.
    let path = offloaded_path(
        RUNTIME
            .offload(
                &cfg,
                &lro_host::Request {
                    operation: Operation::Recall,
                    query: None,
                    detail: None,
                    records: deep.clone(),
                    text: None,
                },
            )
            .unwrap(),
    );
    assert_eq!(innermost(&path), ["0", "1", "2", "3", "4"]);

    // One level deeper than a line may nest: refused, naming the record, as at the record level.
    for (tool, result, says) in [
        (
            "search_things",
            text_result(&records(1001)),
            "results[0] is nested more than 1000 levels deep",
        ),
        (
            "search_things",
            structured_result(&records(1001)),
            "results[0] is nested more than 1000 levels deep",
        ),
        (
            "recall_memories",
            text_result(&records(1001)),
            "records[0] is nested 1001 levels deep",
        ),
        // Deeper than any result the MCP level reads: refused before parsing.
        (
            "search_things",
            structured_result(&records(1006)),
            "result is nested more than 1008 levels deep",
        ),
        (
            "search_things",
            text_result(&records(100_000)),
            "the result's text is JSON nested more than 1008 levels deep",
        ),
    ] {
        let err = intercept(&cfg, tool, result).unwrap_err();
        assert!(
            matches!(&err, Error::Component(ComponentError::InvalidInput(m)) if m.contains(says)),
            "{tool}: {err}"
        );
    }
    // Text that is not JSON, however many brackets it opens, is offloaded as text.
    let brackets = format!(r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#, "[".repeat(5000));
    let outcome = intercept(&cfg, "search_things", brackets).unwrap();
    let lro_host::ToolOutcome::Offloaded(o) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(o.files[0].contains("-lines-"), "{:?}", o.files);
}

/// Defect 15: a header timestamp in the future kept a file from ever being swept.
#[test]
fn a_header_dated_in_the_future_does_not_keep_a_file_forever() {
    let dir = private_dir();
    let config = config(dir.path(), 100);
    let path = offloaded_path(
        RUNTIME
            .offload(&config, &request(Operation::Recall, None, &light(20)))
            .unwrap(),
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    header["timestamp"] = json!("2100-01-01T00:00:00.000Z");
    std::fs::write(&path, format!("{header}\n{body}")).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert_eq!(RUNTIME.sweep(&config, now).unwrap().kept, 1, "within its time to live");
    let report = RUNTIME.sweep(&config, now + 3_600_000 + 120_000).unwrap();
    assert_eq!(report.deleted, [path]);
}

/// 50 full records as a JSON file in `dir`, for the `lro` command.
fn full_records_file(dir: &Path) -> PathBuf {
    let input = dir.join("records.json");
    let records = serde_json::to_string(&sample(lro_core::Detail::Full, 50, false)).unwrap();
    std::fs::write(&input, records).unwrap();
    input
}

/// Defect 17: write failures named the wrong OS error ("I/O error (os error 29)"), and a file
/// size limit trapped the component. `RLIMIT_FSIZE` (set by the shell, with SIGXFSZ ignored so
/// the write fails with EFBIG instead of killing the process) needs no privileges.
#[test]
fn a_file_size_limit_degrades_naming_the_cause_and_leaves_nothing() {
    let dir = private_dir();
    let input = full_records_file(dir.path());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o700)).unwrap();
    // The limit applies to the whole process: with a cold cache wasmtime's own memory image
    // (a memfd) would hit it first, so the compiled component is cached before the limit is set.
    let cache = dir.path().join("cache");
    let warm = lro()
        .args(["query", "."])
        .env("LRO_CACHE_DIR", &cache)
        .arg(&input)
        .output()
        .unwrap();
    assert!(warm.status.success());
    let script = format!(
        "trap '' XFSZ; ulimit -f 8; exec '{}' --events offload --threshold 100 --output-dir '{}' '{}'",
        env!("CARGO_BIN_EXE_lro"),
        out.display(),
        input.display()
    );
    let output = Command::new("sh")
        .args(["-c", &script])
        .env("LRO_CACHE_DIR", &cache)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let payload: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(payload["truncated"], true);
    assert!(
        payload["lro_warning"].as_str().unwrap().contains("file too large"),
        "{payload}"
    );
    assert!(stderr.contains("OffloadWriteFailed"), "{stderr}");
    assert!(
        names(&out).is_empty(),
        "no partial or temporary file: {:?}",
        names(&out)
    );
}

/// Defect 17 and the disk-full fault: a tiny file system (tmpfs in a private mount namespace,
/// made with `unshare`, as root or with a user namespace) fills up, or is read-only.
#[test]
fn a_full_or_read_only_file_system_degrades_naming_the_cause() {
    let dir = private_dir();
    let input = full_records_file(dir.path());
    let mount = dir.path().join("mnt");
    std::fs::create_dir(&mount).unwrap();
    let lro = env!("CARGO_BIN_EXE_lro");
    let run = |options: &str| {
        let script = format!(
            "mount -t tmpfs -o {options},mode=0700 tmpfs '{m}' && '{lro}' --events offload --threshold 100 --output-dir '{m}' '{i}'; ls -A '{m}'",
            m = mount.display(),
            i = input.display()
        );
        let user = if rustix::process::geteuid().is_root() {
            "-m"
        } else {
            "-rm"
        };
        let output = Command::new("unshare")
            .args([user, "sh", "-c", &script])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success() && !stderr.contains("mount:"),
            "unshare/mount failed: {stderr}"
        );
        (stdout, stderr)
    };
    let (stdout, stderr) = run("size=16k");
    assert!(stderr.contains("no space left on device"), "{stderr}");
    let payload: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(payload["truncated"], true);
    assert_eq!(stdout.lines().count(), 1, "the directory is empty afterwards: {stdout}");
    let (_, stderr) = run("size=1m,ro");
    assert!(stderr.contains("on a read-only file system"), "{stderr}");
}

// ---- faults --------------------------------------------------------------------------------

/// The file deleted between offload and extract; a corrupted or truncated header; a last line
/// cut mid-record: each a typed error naming the problem.
#[test]
fn damaged_or_vanished_files_are_typed_errors() {
    let dir = private_dir();
    let config = config(dir.path(), 100);
    let offload = || {
        offloaded_path(
            RUNTIME
                .offload(&config, &request(Operation::Recall, None, &light(20)))
                .unwrap(),
        )
    };
    let recipe = |path: &str| {
        RUNTIME.extract(
            &config,
            &ExtractRequest {
                recipe: Some(4),
                ..extract_request(path)
            },
        )
    };
    let gone = offload();
    std::fs::remove_file(&gone).unwrap();
    assert!(matches!(recipe(&gone), Err(Error::Component(ComponentError::NotFound(m))) if m.contains(&gone)));

    let cut_header = offload();
    let text = std::fs::read_to_string(&cut_header).unwrap();
    std::fs::write(&cut_header, &text[..40]).unwrap();
    assert!(
        matches!(recipe(&cut_header), Err(Error::Component(ComponentError::NotLroFile(m))) if m.contains("header"))
    );

    let no_header = offload();
    let text = std::fs::read_to_string(&no_header).unwrap();
    std::fs::write(&no_header, text.replacen("lro_header", "something", 1)).unwrap();
    assert!(matches!(
        recipe(&no_header),
        Err(Error::Component(ComponentError::NotLroFile(_)))
    ));

    let cut_line = offload();
    let text = std::fs::read_to_string(&cut_line).unwrap();
    std::fs::write(&cut_line, &text[..text.len() - 20]).unwrap();
    // Read to the end: a cap reached before line 21 leaves it unread (issue 34, item 14).
    let err = RUNTIME
        .extract(
            &config,
            &ExtractRequest {
                recipe: Some(4),
                limit: Some(u32::MAX),
                ..extract_request(&cut_line)
            },
        )
        .unwrap_err();
    assert!(
        matches!(&err, Error::Component(ComponentError::Corrupt(m)) if m.contains("line 21")),
        "{err}"
    );

    // The directory itself removed: extraction names it; offload creates it again.
    let config = config.clone();
    std::fs::remove_dir_all(dir.path()).unwrap();
    let err = RUNTIME
        .extract(
            &config,
            &ExtractRequest {
                recipe: Some(1),
                ..extract_request(&gone)
            },
        )
        .unwrap_err();
    assert!(matches!(&err, Error::Directory { .. }), "{err}");
    offloaded_path(
        RUNTIME
            .offload(&config, &request(Operation::Recall, None, &light(20)))
            .unwrap(),
    );
}

/// A sweep racing offloads and extractions: no reader sees a half file, no file within its
/// time to live is deleted, and nothing is left half-written.
#[test]
fn a_sweep_racing_offload_and_extract_deletes_nothing_live_and_shows_no_half_file() {
    let dir = private_dir();
    let config = config(dir.path(), 100);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let written = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..60 {
                let path = offloaded_path(
                    RUNTIME
                        .offload(&config, &request(Operation::Recall, None, &light(40)))
                        .unwrap(),
                );
                written.lock().unwrap().push(path);
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis() as u64;
                let report = RUNTIME.sweep(&config, now).unwrap();
                assert!(report.deleted.is_empty() && report.failed.is_empty(), "{report:?}");
            }
        });
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let latest = written.lock().unwrap().last().cloned();
                if let Some(path) = latest {
                    let out = RUNTIME
                        .extract(
                            &config,
                            &ExtractRequest {
                                query: Some("length".into()),
                                slurp: true,
                                ..extract_request(&path)
                            },
                        )
                        .unwrap();
                    assert_eq!(out.values, ["40"]);
                }
            }
        });
    });
    let written = written.into_inner().unwrap();
    assert_eq!(names_ending(dir.path(), ".jsonl").len(), 60);
    assert!(names_ending(dir.path(), ".tmp").is_empty());
    assert!(written.iter().all(|p| Path::new(p).exists()));
}
