//! The defects real use found, each test failing before its fix.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use crate::robustness::*;
use lro_host::{Config, Error, ExtractRequest, Operation, Outcome, PassReason, ToolOutcome, ToolSettings};
use serde_json::{Value, json};

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
            threshold_tokens: None,
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

/// Issue 34, item 7: a directory others can read or enter is refused like one they can write:
/// under a lax umask a file exists with a group- or other-accessible mode until the host narrows
/// it, and another user who can enter the directory could open it in that moment and append.
/// Offload degrades naming the mode; extract and sweep fail with it (exit 2).
#[test]
fn a_directory_others_can_read_or_enter_is_refused() {
    let root = private_dir();
    let records = light(30);
    for (mode, reason) in [
        (
            0o755,
            "readable by everyone (mode 755); refusing to use it: make it 0700",
        ),
        (
            0o750,
            "readable by its group (mode 750); refusing to use it: make it 0700",
        ),
        (
            0o711,
            "searchable by everyone (mode 711); refusing to use it: make it 0700",
        ),
    ] {
        let dir = root.path().join(format!("dir-{mode:o}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let (runtime, events) = with_events();
        let outcome = runtime
            .offload(&config(&dir, 500), &request(Operation::Recall, None, &records))
            .unwrap();
        let Outcome::Degraded(degraded) = outcome else {
            panic!("{mode:o}: {outcome:?}")
        };
        assert!(degraded.warning.contains(reason), "{}", degraded.warning);
        assert!(write_failures(&events.lock().unwrap())[0].contains(reason));
        assert!(names(&dir).is_empty(), "nothing is written into a refused directory");
        let out = lro().args(["sweep", "--output-dir"]).arg(&dir).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(reason),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Issue 34, item 7: with `umask 000`, what an offload leaves is owner-only: the directory it
/// creates is 0700 and the file 0600; a directory others can enter (0777, 0755) is refused.
#[test]
fn under_umask_000_nothing_is_left_open_to_others() {
    let root = private_dir();
    let dir = root.path().join("made-by-lro");
    let script = format!(
        "umask 000 && printf '%s' \"$0\" | exec '{}' offload --threshold 10 --output-dir '{}' -",
        env!("CARGO_BIN_EXE_lro"),
        dir.display()
    );
    let run = || {
        Command::new("sh")
            .args(["-c", &script, &serde_json::to_string(&light(30)).unwrap()])
            .output()
            .unwrap()
    };
    let out = run();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let descriptor: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&dir), 0o700);
    let file = Path::new(descriptor["file_path"].as_str().unwrap());
    assert_eq!(mode(file), 0o600);
    for name in names(&dir) {
        assert_eq!(mode(&dir.join(&name)), 0o600, "{name}");
    }
    // A directory others can enter is not used: there, with this umask, a file would be open
    // to them from its creation until the host narrows it.
    for (mode, reason) in [
        (0o777, "writable by everyone (mode 777)"),
        (0o755, "readable by everyone (mode 755)"),
    ] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = run();
        let degraded: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(degraded["lro_warning"].as_str().unwrap().contains(reason), "{degraded}");
        assert_eq!(names(&dir).len(), 1, "nothing more was written");
    }
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
            extract_tool: true,
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
