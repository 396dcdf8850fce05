//! Correct in every case: the defects real use found (each test failed before its fix), the
//! spec's outcome under faults (degrade with the event and nothing half-written, or a typed
//! error naming the problem), the storage caps, and load from several processes.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use lro_host::{
    Config, Error, Event, ExtractRequest, LroError, Operation, Outcome, PassReason, ToolCall, ToolOutcome, ToolSettings,
};
use serde_json::{Value, json};

fn cases() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases")
}

fn lro() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lro"))
}

fn private_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn light(count: usize) -> Vec<Value> {
    sample(lro_core::Detail::Light, count, false)
}

/// A `CallToolResult` carrying `records` as JSON text, as most servers send them.
fn text_result(records: &[Value]) -> String {
    json!({"content": [{"type": "text", "text": serde_json::to_string(records).unwrap()}]}).to_string()
}

fn tool_call(tool: &str, result: String) -> ToolCall {
    ToolCall {
        tool: tool.into(),
        arguments: "{}".into(),
        result,
        meta: None,
    }
}

fn extract_request(path: &str) -> ExtractRequest {
    ExtractRequest {
        path: path.into(),
        recipe: None,
        query: None,
        params: None,
        slurp: false,
        limit: None,
    }
}

fn offloaded_path(outcome: Outcome) -> String {
    match outcome {
        Outcome::Offloaded(o) => o.path,
        other => panic!("expected an offload, got {other:?}"),
    }
}

/// The JSON text the degraded `CallToolResult` carries as its text content.
fn degraded_payload(outcome: &ToolOutcome) -> Value {
    let ToolOutcome::Degraded(d) = outcome else {
        panic!("expected a degraded result, got {outcome:?}")
    };
    let result: Value = serde_json::from_str(&d.result).unwrap();
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

fn write_failures(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::OffloadWriteFailed(f) => Some(f.error.clone()),
            _ => None,
        })
        .collect()
}

fn names_ending(dir: &Path, suffix: &str) -> Vec<String> {
    names(dir).into_iter().filter(|n| n.ends_with(suffix)).collect()
}

// ---- defects -------------------------------------------------------------------------------

/// Defect 1: the MCP-level fallback passed threshold 0 and returned nothing.
#[test]
fn the_mcp_level_fallback_keeps_what_fits_the_tools_threshold_like_the_record_level() {
    let dir = private_dir();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o500)).unwrap();
    let records = light(30);
    let config = config(dir.path(), 500);
    let Outcome::Degraded(record_level) = RUNTIME
        .offload(&config, &request(Operation::Recall, None, &records))
        .unwrap()
    else {
        panic!("a read-only directory degrades")
    };
    let outcome = RUNTIME
        .intercept(&config, &tool_call("recall_memories", text_result(&records)))
        .unwrap();
    let payload = degraded_payload(&outcome);
    assert!(record_level.returned > 0);
    assert_eq!(payload["returned_count"], json!(record_level.returned));
    assert_eq!(
        payload["records"].as_array().unwrap().len() as u32,
        record_level.returned
    );
    assert_eq!(payload["total_count"], 30);
}

/// Defect 2: a tool enabled under a disabled global setting trapped the component.
#[test]
fn a_tool_enabled_under_a_disabled_global_setting_is_offloaded() {
    let dir = private_dir();
    let config = Config {
        enabled: false,
        tools: vec![ToolSettings {
            name: "recall_memories".into(),
            enabled: Some(true),
            threshold: None,
            sections: None,
            inline_keys: None,
        }],
        ..config(dir.path(), 100)
    };
    let records = light(30);
    let outcome = RUNTIME
        .intercept(&config, &tool_call("recall_memories", text_result(&records)))
        .unwrap();
    assert!(matches!(outcome, ToolOutcome::Offloaded(_)), "{outcome:?}");
    // Any other tool follows the global setting.
    let other = RUNTIME
        .intercept(&config, &tool_call("list_files", text_result(&records)))
        .unwrap();
    assert!(
        matches!(other, ToolOutcome::Unchanged(ref u) if u.reason == PassReason::Disabled),
        "{other:?}"
    );
}

/// Defect 3: the filter memory cap was never applied (every call got the 2 GiB cap).
#[test]
fn a_filter_needing_a_gibibyte_stops_at_the_filter_memory_cap() {
    const BOMB: &str = r#"("x" * 1000000000) | length"#;
    let err = RUNTIME.query(BOMB, "null", false, false, None).unwrap_err();
    assert!(matches!(err, Error::MemoryLimit(limit) if limit == 512 << 20), "{err}");
    assert!(err.to_string().contains("512 MiB"), "{err}");
    let dir = private_dir();
    let path = offloaded_path(
        RUNTIME
            .offload(&config(dir.path(), 100), &request(Operation::Recall, None, &light(20)))
            .unwrap(),
    );
    let err = RUNTIME
        .extract(
            &config(dir.path(), 100),
            &ExtractRequest {
                query: Some(BOMB.into()),
                ..extract_request(&path)
            },
        )
        .unwrap_err();
    assert!(matches!(err, Error::MemoryLimit(limit) if limit == 512 << 20), "{err}");
}

/// Defect 4: `recipes` was rejected in the file and ignored in the environment, so offload could
/// never use the v1 library; every documented key now works from file, environment and flag.
#[test]
fn the_recipes_key_reaches_offload_from_file_environment_and_flag() {
    let dir = private_dir();
    let input = dir.path().join("records.json");
    std::fs::write(&input, serde_json::to_string(&light(30)).unwrap()).unwrap();
    let out = dir.path().join("out");
    let toml = dir.path().join("lro.toml");
    std::fs::write(&toml, "[prompt.offload]\nrecipes = \"v1\"\n").unwrap();
    let run = |extra: &[&str], env: Option<&str>| {
        let mut command = lro();
        command
            .args(["offload", "--threshold", "100", "--output-dir"])
            .arg(&out)
            .args(extra)
            .arg(&input);
        if let Some(value) = env {
            command.env("ATLATL_PROMPT__OFFLOAD__RECIPES", value);
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let descriptor: Value = serde_json::from_slice(&output.stdout).unwrap();
        descriptor["jq_recipes"][0]["description"].as_str().unwrap().to_owned()
    };
    let v1 = "List all titles with scores";
    assert_eq!(run(&["--config", toml.to_str().unwrap()], None), v1);
    assert_eq!(run(&[], Some("v1")), v1);
    assert_eq!(run(&["--recipes", "v1"], None), v1);
    assert_eq!(run(&[], None), "List titles with namespaces");
}

/// Defect 5: an unusable directory failed the call with exit 2; the spec says degrade.
#[test]
fn an_unusable_directory_degrades_offload_and_intercept_with_the_reason() {
    let root = private_dir();
    let file = root.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let open = root.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let cases: [(PathBuf, &str); 3] = [
        (file.clone(), "not a directory"),
        (file.join("below"), "cannot create it"),
        (open.clone(), "writable by everyone (mode 777)"),
    ];
    let records = light(30);
    for (dir, reason) in cases {
        let (runtime, events) = with_events();
        let config = config(&dir, 500);
        let outcome = runtime
            .offload(&config, &request(Operation::Recall, None, &records))
            .unwrap();
        let Outcome::Degraded(degraded) = outcome else {
            panic!("{}: {outcome:?}", dir.display())
        };
        assert!(degraded.warning.contains(reason), "{}", degraded.warning);
        assert!(degraded.returned > 0, "what fits the threshold is still returned");
        let outcome = runtime
            .intercept(&config, &tool_call("search_code", text_result(&records)))
            .unwrap();
        assert!(
            degraded_payload(&outcome)["lro_warning"]
                .as_str()
                .unwrap()
                .contains(reason)
        );
        let failures = write_failures(&events.lock().unwrap());
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures.iter().all(|f| f.contains(reason)), "{failures:?}");
    }
    assert!(names(&open).is_empty(), "nothing is written into a refused directory");
}

/// Defect 13: a directory another user owns is never used (a local user could pre-create the
/// default `lro-<uid>` and receive what is offloaded there).
#[test]
fn a_directory_owned_by_another_user_is_refused() {
    let root = private_dir();
    let theirs = root.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
    // As root, give it away; as anyone else, "/" already belongs to someone else.
    let dir = if rustix::process::geteuid().is_root() {
        rustix::fs::chown(&theirs, Some(rustix::process::Uid::from_raw(65534)), None).unwrap();
        theirs.clone()
    } else {
        PathBuf::from("/")
    };
    let config = config(&dir, 100);
    let outcome = RUNTIME
        .offload(&config, &request(Operation::Recall, None, &light(30)))
        .unwrap();
    let Outcome::Degraded(degraded) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(degraded.warning.contains("not by this user"), "{}", degraded.warning);
    let err = RUNTIME.sweep(&config, 0).unwrap_err();
    assert!(
        matches!(&err, Error::Directory { message, .. } if message.contains("owned by uid")),
        "{err}"
    );
    assert!(names(&theirs).is_empty());
}

/// Defect 6: the tool's definition is the component's, and the guidance's own example calls,
/// made exactly as printed, work.
#[test]
fn the_guidances_example_calls_work_as_printed() {
    let definition: Value = serde_json::from_str(&RUNTIME.tool_definition().unwrap()).unwrap();
    assert_eq!(definition["name"], "lro_extract");
    let properties = definition["inputSchema"]["properties"].as_object().unwrap();
    for argument in ["file_path", "recipe", "query", "params", "slurp", "limit"] {
        assert!(properties.contains_key(argument), "{argument}");
    }
    assert_eq!(definition["inputSchema"]["required"], json!(["file_path"]));
    for detail in DETAILS {
        let dir = private_dir();
        let config = Config {
            native: true,
            ..config(dir.path(), 500)
        };
        let records = sample(core_detail(detail), 60, false);
        let Outcome::Offloaded(out) = RUNTIME
            .offload(&config, &request(Operation::Recall, Some(detail), &records))
            .unwrap()
        else {
            panic!("offloaded")
        };
        let guidance: Value = serde_json::from_str(&out.descriptor).unwrap();
        let calls = guidance_calls(guidance["guidance"].as_str().unwrap());
        assert_eq!(calls.len(), 4, "{calls:?}");
        for arguments in calls {
            let result = RUNTIME.call_tool(&config, &arguments.to_string());
            let result = result.unwrap_or_else(|e| panic!("{detail:?} {arguments}: {e}"));
            assert!(!result.text.is_empty());
        }
        // The argument name the Node example used to take is refused by name.
        let err = RUNTIME
            .call_tool(&config, &json!({"path": out.path, "recipe": 1}).to_string())
            .unwrap_err();
        assert!(err.to_string().contains("unknown argument `path`"), "{err}");
    }
}

/// The `lro_extract(name=VALUE, ...)` calls of a guidance text, as argument objects: each value
/// is JSON, as the guidance prints it.
fn guidance_calls(guidance: &str) -> Vec<Value> {
    let mut calls = Vec::new();
    for (start, _) in guidance.match_indices("lro_extract(") {
        let mut rest = &guidance[start + "lro_extract(".len()..];
        let mut arguments = serde_json::Map::new();
        loop {
            let (name, after) = rest.split_once('=').expect("name=value");
            let end = json_value_end(after);
            let value: Value = serde_json::from_str(&after[..end]).expect("a JSON value");
            arguments.insert(name.trim().to_owned(), value);
            rest = after[end..].trim_start();
            match rest.as_bytes().first() {
                Some(b',') => rest = &rest[1..],
                Some(b')') => break,
                other => panic!("unexpected {other:?} in {guidance}"),
            }
        }
        calls.push(Value::Object(arguments));
    }
    calls
}

/// Where the JSON value at the start of `text` ends: at the first `,` or `)` outside strings
/// and brackets.
fn json_value_end(text: &str) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0i32, false, false);
    for (i, c) in text.char_indices() {
        match (in_string, c) {
            (true, '\\') if !escaped => escaped = true,
            (true, '"') if !escaped => in_string = false,
            (true, _) => escaped = false,
            (false, '"') => in_string = true,
            (false, '[' | '{') => depth += 1,
            (false, ']' | '}') => depth -= 1,
            (false, ',' | ')') if depth == 0 => return i,
            _ => {}
        }
    }
    text.len()
}

/// Defect 7: recipes 8 and 9 answer with one array of the whole file, always over the cap:
/// the model got "showing 0 of 1 values".
#[test]
fn a_single_value_over_the_cap_shows_its_leading_elements() {
    let dir = private_dir();
    let config = config(dir.path(), 500);
    let path = offloaded_path(
        RUNTIME
            .offload(&config, &request(Operation::Recall, None, &light(200)))
            .unwrap(),
    );
    // Recipe 8 sorts all 200 records; recipe 9 (light) lists the unique namespaces, cut here
    // with a small limit.
    for (recipe, limit, all) in [(8, None, 200), (9, Some(10), unique_namespaces(&path))] {
        let out = RUNTIME
            .call_tool(
                &config,
                &json!({"file_path": path, "recipe": recipe, "limit": limit}).to_string(),
            )
            .unwrap();
        assert!(out.truncated);
        assert_eq!(out.values.len(), 1);
        let shown: Vec<Value> = serde_json::from_str(&out.values[0]).unwrap();
        assert!(!shown.is_empty() && shown.len() < all, "recipe {recipe}");
        assert!(
            out.text.contains(&format!("the value is an array of {all} elements"))
                && out.text.contains(&format!("showing its first {}", shown.len())),
            "{}",
            out.text
        );
    }
}

fn unique_namespaces(path: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let mut seen: Vec<String> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["namespace"].to_string())
        .collect();
    seen.sort();
    seen.dedup();
    seen.len()
}

/// Defect 8: the Python SDK's own shapes (`tests/cases/sdk/python/`, written by the SDK)
/// were offloaded as junk: one `{"result": ...}` line, or one `{n, text}` line per text line.
#[test]
fn results_in_the_python_sdks_shapes_are_offloaded_as_their_records() {
    let sdk = cases().join("sdk/python");
    for (file, tool, count) in [
        ("recall-str.json", "recall_memories", 40),
        ("recall-list.json", "list_memories", 40),
        ("search-str.json", "search_issues", 60),
    ] {
        let dir = private_dir();
        let result = std::fs::read_to_string(sdk.join(file)).unwrap();
        let outcome = RUNTIME
            .intercept(&config(dir.path(), 200), &tool_call(tool, result.clone()))
            .unwrap();
        let ToolOutcome::Offloaded(out) = outcome else {
            panic!("{file}: {outcome:?}")
        };
        assert_eq!(out.files.len(), 1, "{file}: one section of records");
        let text = std::fs::read_to_string(&out.files[0]).unwrap();
        let lines: Vec<Value> = text.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), count, "{file}");
        assert!(lines[0].get("title").is_some(), "{file}: {}", lines[0]);
        // A `-> str` tool's schema is `{"result": string}`: the offloaded result still matches it.
        let original: Value = serde_json::from_str(&result).unwrap();
        let forwarded: Value = serde_json::from_str(&out.result).unwrap();
        if original.get("structuredContent").is_some() {
            let structured = forwarded["structuredContent"].as_object().unwrap();
            assert_eq!(structured.len(), 1);
            assert_eq!(structured["result"], forwarded["content"][0]["text"]);
        }
    }
    // The SDK's tools/list carries outputSchemas; rewriting it drops them and adds lro_extract.
    let tools = std::fs::read_to_string(sdk.join("tools.json")).unwrap();
    let dir = private_dir();
    let config = Config {
        native: true,
        ..config(dir.path(), 200)
    };
    let rewritten: Vec<Value> = serde_json::from_str(&RUNTIME.rewrite_tools(&config, &tools).unwrap()).unwrap();
    assert!(rewritten.iter().all(|t| t.get("outputSchema").is_none()));
    assert_eq!(rewritten.last().unwrap()["name"], "lro_extract");
    let err = RUNTIME
        .rewrite_tools(&config, &serde_json::to_string(&rewritten).unwrap())
        .unwrap_err();
    assert!(
        err.to_string().contains("already has a tool named lro_extract"),
        "{err}"
    );
}

/// Defect 9: the decision used the escaped CallToolResult and the descriptor another estimate.
#[test]
fn the_decision_and_the_descriptor_carry_one_estimate_of_what_the_model_reads() {
    let records = light(30);
    let result = text_result(&records);
    let read = RUNTIME.estimate(&serde_json::to_string(&records).unwrap()).unwrap();
    let dir = private_dir();
    let at = RUNTIME
        .intercept(&config(dir.path(), read), &tool_call("recall_memories", result.clone()))
        .unwrap();
    assert!(
        matches!(at, ToolOutcome::Unchanged(ref u) if u.tokens == read && u.reason == PassReason::UnderThreshold),
        "{at:?}"
    );
    let ToolOutcome::Offloaded(out) = RUNTIME
        .intercept(&config(dir.path(), read - 1), &tool_call("recall_memories", result))
        .unwrap()
    else {
        panic!("one token over offloads")
    };
    assert_eq!(out.tokens, read);
    let forwarded: Value = serde_json::from_str(&out.result).unwrap();
    let descriptor: Value = serde_json::from_str(forwarded["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(descriptor["summary"]["estimated_tokens"], json!(read));
    // A text-only inject_context result was budgeted by the server: no records to offload.
    let budgeted = json!({"content": [{"type": "text", "text": "## Context\n".repeat(2000)}]}).to_string();
    let outcome = RUNTIME
        .intercept(&config(dir.path(), 100), &tool_call("inject_context", budgeted))
        .unwrap();
    assert!(
        matches!(outcome, ToolOutcome::Unchanged(ref u) if u.reason == PassReason::BudgetedText),
        "{outcome:?}"
    );
}

/// Defect 10: `--detail light` with full records wrote them under a light header and recipes.
#[test]
fn the_header_schema_and_recipes_describe_what_is_in_the_file() {
    let dir = private_dir();
    let records = sample(lro_core::Detail::Full, 30, false);
    let Outcome::Offloaded(out) = RUNTIME
        .offload(
            &config(dir.path(), 100),
            &request(Operation::Recall, Some(lro_host::Detail::Light), &records),
        )
        .unwrap()
    else {
        panic!("offloaded")
    };
    let header: Value =
        serde_json::from_str(std::fs::read_to_string(&out.path).unwrap().lines().next().unwrap()).unwrap();
    let descriptor: Value = serde_json::from_str(&out.descriptor).unwrap();
    assert_eq!(header["detail"], "full");
    assert_eq!(descriptor["summary"]["detail"], "full");
    assert!(descriptor["line_schema"]["properties"].get("provenance").is_some());
    assert!(
        descriptor["jq_recipes"][8]["command"]
            .as_str()
            .unwrap()
            .contains(".provenance.confidence")
    );
}

/// Defect 11: a null title failed recipe 3 although the recipes were documented as guarded;
/// every recipe answers the same natively and as the shell command, with missing fields.
#[test]
fn recipes_are_guarded_against_missing_fields_natively_and_in_the_shell() {
    let mut records = sample(lro_core::Detail::Full, 12, false);
    for (i, record) in records.iter_mut().enumerate() {
        let map = record.as_object_mut().unwrap();
        match i % 4 {
            0 => drop(map.insert("title".into(), Value::Null)),
            1 => drop(map.remove("namespace")),
            2 => drop(map.insert("content".into(), Value::Null)),
            _ => drop(map.remove("provenance")),
        }
    }
    for detail in DETAILS {
        let dir = private_dir();
        let config = config(dir.path(), 100);
        let records: Vec<Value> = match detail {
            lro_host::Detail::Full => records.clone(),
            _ => records
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    let keep = |k: &str| {
                        ![
                            "provenance",
                            "entities",
                            "relationships",
                            "wiki_links",
                            "embedding",
                            "temporal",
                            "citations",
                            "blocks",
                            "extensions",
                        ]
                        .contains(&k)
                            && (detail == lro_host::Detail::Medium || !["content", "summary"].contains(&k))
                    };
                    r.as_object_mut().unwrap().retain(|k, _| keep(k));
                    if detail == lro_host::Detail::Medium {
                        r["confidence"] = if r["id"].as_str().unwrap().ends_with('3') {
                            Value::Null
                        } else {
                            json!(0.5)
                        };
                    }
                    r
                })
                .collect(),
        };
        let Outcome::Offloaded(out) = RUNTIME
            .offload(&config, &request(Operation::Recall, None, &records))
            .unwrap()
        else {
            panic!("offloaded")
        };
        let descriptor: Value = serde_json::from_str(&out.descriptor).unwrap();
        assert_eq!(descriptor["summary"]["detail"], detail_name(detail));
        for (i, recipe) in descriptor["jq_recipes"].as_array().unwrap().iter().enumerate() {
            let number = i as u32 + 1;
            let native = RUNTIME
                .extract(
                    &config,
                    &ExtractRequest {
                        recipe: Some(number),
                        limit: Some(u32::MAX),
                        ..extract_request(&out.path)
                    },
                )
                .unwrap_or_else(|e| panic!("{detail:?} recipe {number}: {e}"));
            let shell = Command::new("sh")
                .args(["-c", recipe["command"].as_str().unwrap()])
                .output()
                .unwrap();
            assert!(
                shell.status.success(),
                "{detail:?} recipe {number}: {}",
                String::from_utf8_lossy(&shell.stderr)
            );
            let shell_values = jq_values(&String::from_utf8(shell.stdout).unwrap(), native.raw);
            let native_values: Vec<Value> = native
                .values
                .iter()
                .map(|v| {
                    if native.raw {
                        Value::String(v.clone())
                    } else {
                        norm(serde_json::from_str(v).unwrap())
                    }
                })
                .collect();
            assert_eq!(native_values, shell_values, "{detail:?} recipe {number}");
        }
    }
}

fn detail_name(detail: lro_host::Detail) -> &'static str {
    match detail {
        lro_host::Detail::Light => "light",
        lro_host::Detail::Medium => "medium",
        lro_host::Detail::Full => "full",
    }
}

/// jq's output (pretty-printed values, or raw lines) as values to compare.
fn jq_values(stdout: &str, raw: bool) -> Vec<Value> {
    if raw {
        return stdout.lines().map(|l| Value::String(l.to_owned())).collect();
    }
    serde_json::Deserializer::from_str(stdout)
        .into_iter::<Value>()
        .map(|v| norm(v.unwrap()))
        .collect()
}

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
        matches!(&err, Error::Lro(LroError::NotLroFile(m)) if m.contains("not a regular file")),
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
            matches!(&err, Error::Lro(LroError::InvalidInput(m)) if m.contains(says)),
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
        matches!(&err, Error::Lro(LroError::InvalidInput(m)) if m.contains("nested 1001 levels deep")),
        "{err}"
    );
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
    assert!(matches!(recipe(&gone), Err(Error::Lro(LroError::NotFound(m))) if m.contains(&gone)));

    let cut_header = offload();
    let text = std::fs::read_to_string(&cut_header).unwrap();
    std::fs::write(&cut_header, &text[..40]).unwrap();
    assert!(matches!(recipe(&cut_header), Err(Error::Lro(LroError::NotLroFile(m))) if m.contains("header")));

    let no_header = offload();
    let text = std::fs::read_to_string(&no_header).unwrap();
    std::fs::write(&no_header, text.replacen("lro_header", "something", 1)).unwrap();
    assert!(matches!(recipe(&no_header), Err(Error::Lro(LroError::NotLroFile(_)))));

    let cut_line = offload();
    let text = std::fs::read_to_string(&cut_line).unwrap();
    std::fs::write(&cut_line, &text[..text.len() - 20]).unwrap();
    let err = recipe(&cut_line).unwrap_err();
    assert!(
        matches!(&err, Error::Lro(LroError::Corrupt(m)) if m.contains("line 21")),
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

// ---- storage caps --------------------------------------------------------------------------

#[test]
fn the_directory_stays_within_its_caps_evicting_the_oldest_first() {
    let dir = private_dir();
    let (runtime, events) = with_events();
    let config = Config {
        max_files: 5,
        ..config(dir.path(), 100)
    };
    let paths: Vec<String> = (0..12)
        .map(|_| {
            offloaded_path(
                runtime
                    .offload(&config, &request(Operation::Recall, None, &light(20)))
                    .unwrap(),
            )
        })
        .collect();
    // Oldest by ULID: files made in the same millisecond are ordered by the ULID's random part,
    // not by when they were made, so the expectation is the names sorted, not creation order.
    let mut by_ulid = paths.clone();
    by_ulid.sort();
    let mut left = names_ending(dir.path(), ".jsonl");
    left.sort();
    let newest: Vec<String> = by_ulid[7..]
        .iter()
        .map(|p| Path::new(p).file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    assert_eq!(left, newest);
    let evicted: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::OffloadFileEvicted(e) if e.cap == "max-files" => Some(e.path.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(evicted, by_ulid[..7]);

    // A byte cap of about three files keeps three; a result larger than the cap degrades.
    let size = std::fs::metadata(&paths[11]).unwrap().len();
    let config = Config {
        max_files: 0,
        max_bytes: size * 3 + size / 2,
        ..config
    };
    for _ in 0..4 {
        runtime
            .offload(&config, &request(Operation::Recall, None, &light(20)))
            .unwrap();
    }
    assert_eq!(names_ending(dir.path(), ".jsonl").len(), 3);
    let Outcome::Degraded(degraded) = runtime
        .offload(&config, &request(Operation::Recall, None, &light(200)))
        .unwrap()
    else {
        panic!("over the cap by itself")
    };
    assert!(degraded.warning.contains("(max_bytes)"), "{}", degraded.warning);
    assert_eq!(
        names_ending(dir.path(), ".jsonl").len(),
        3,
        "nothing evicted for a result that cannot fit"
    );
}

// ---- load ----------------------------------------------------------------------------------

const LOAD_PROCESSES: usize = 8;
const LOAD_OFFLOADS: usize = 200;

/// 8 processes × 200 offloads into one directory: every name unique, nothing lost, nothing
/// half-written. The processes are this test binary run again with `LRO_LOAD_DIR` set.
#[test]
fn eight_processes_offload_into_one_directory_without_loss() {
    if let Ok(dir) = std::env::var("LRO_LOAD_DIR") {
        let config = Config {
            max_files: 0,
            ..config(Path::new(&dir), 100)
        };
        for i in 0..LOAD_OFFLOADS {
            let records = light(10 + i % 20);
            let path = offloaded_path(
                RUNTIME
                    .offload(&config, &request(Operation::Recall, None, &records))
                    .unwrap(),
            );
            println!("OFFLOADED {} {path}", records.len());
        }
        return;
    }
    let dir = private_dir();
    let started = Instant::now();
    let children: Vec<_> = (0..LOAD_PROCESSES)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "eight_processes_offload_into_one_directory_without_loss",
                    "--nocapture",
                ])
                .env("LRO_LOAD_DIR", dir.path())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut written = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success());
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            if let Some(rest) = line.strip_prefix("OFFLOADED ") {
                let (count, path) = rest.split_once(' ').unwrap();
                written.push((count.parse::<usize>().unwrap(), path.to_owned()));
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(written.len(), LOAD_PROCESSES * LOAD_OFFLOADS);
    let mut unique: Vec<&String> = written.iter().map(|(_, p)| p).collect();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), written.len(), "every name is unique");
    for (count, path) in &written {
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(text.lines().count(), count + 1, "{path} is whole");
        assert!(text.ends_with('\n'));
    }
    assert_eq!(names_ending(dir.path(), ".jsonl").len(), written.len());
    assert!(names_ending(dir.path(), ".tmp").is_empty());
    println!(
        "load: {} offloads from {LOAD_PROCESSES} processes in {seconds:.1} s ({:.0} per second, debug build), 0 lost",
        written.len(),
        written.len() as f64 / seconds
    );
}

// ---- what a user reads ---------------------------------------------------------------------

/// Defect 12: everything a user reads points only at files that exist in the repository: every
/// relative Markdown link resolves, and no tracked file cites the specification folder or notes
/// that live outside the repository, or tells the reader to run `npm ci` (which fails here).
#[test]
fn what_a_user_reads_points_only_at_files_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let listed = Command::new("git").arg("ls-files").current_dir(&root).output().unwrap();
    assert!(
        listed.status.success(),
        "git ls-files: {}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let files: Vec<PathBuf> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .filter(|f| !f.starts_with("tests/fuzz/") && !f.starts_with("tests/cases/"))
        .map(|f| root.join(f))
        .filter(|f| {
            let name = f.file_name().unwrap().to_str().unwrap();
            [".md", ".rs", ".wit", ".js", ".py", ".toml"]
                .iter()
                .any(|e| name.ends_with(e))
                || name == "run"
        })
        .collect();
    assert!(files.len() > 50, "{} files", files.len());
    let mut stale = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        // This test names the patterns it looks for.
        if !shown.ends_with("robustness.rs") {
            for pattern in [
                "../shared",
                "FACTS.md",
                "spec/lro-spec",
                "spec/mif-lro",
                "spec/python-offload",
                "spec/README",
            ] {
                if text.contains(pattern) {
                    stale.push(format!("{shown}: cites {pattern}, which is not in the repository"));
                }
            }
            for (i, line) in text.lines().enumerate() {
                // "Not `npm ci`" explains why; an instruction to run it is stale.
                if line.contains("npm ci")
                    && !line.to_lowercase().contains("not `npm ci`")
                    && !line.contains("`npm ci` refuses")
                {
                    stale.push(format!("{shown}:{}: tells the reader to run npm ci", i + 1));
                }
            }
        }
        if shown.ends_with(".md") {
            for target in text
                .split("](")
                .skip(1)
                .filter_map(|rest| rest.split([')', ' ', '#']).next())
            {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if !file.parent().unwrap().join(target).exists() {
                    stale.push(format!("{shown}: links to {target}, which does not exist"));
                }
            }
        }
    }
    assert!(stale.is_empty(), "stale text:\n{}", stale.join("\n"));
}
