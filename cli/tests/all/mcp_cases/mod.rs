//! The MCP-level interceptor over the fixtures in `tests/cases/mcp/`: each realistic tool result
//! above and below its threshold, checked structurally; every generated recipe run with the
//! system jq and through the extractor; no data lost; descriptors within budget.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use lro_host::{PassReason, ToolCall, ToolOutcome};
use serde_json::{Map, Value, json};

mod check;
use check::*;

#[test]
fn every_fixture_gives_its_expected_outcome_above_and_below_its_threshold() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/mcp");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 7, "{} cases", cases.len());
    for case_dir in cases {
        let case = case_dir.file_name().unwrap().to_string_lossy().into_owned();
        let call = read_json(&case_dir.join("call.json"));
        let expected = read_json(&case_dir.join("expected.json"));
        let result_text = std::fs::read_to_string(case_dir.join("result.json")).unwrap();
        let original: Value = serde_json::from_str(&result_text).unwrap();
        let tool_call = ToolCall {
            tool: call["tool"].as_str().unwrap().to_owned(),
            arguments: call["arguments"].to_string(),
            result: result_text.clone(),
            meta: call.get("meta").map(Value::to_string),
        };
        let dir = crate::common::tempdir().unwrap();
        let threshold = call["threshold"].as_u64().unwrap() as u32;
        let mut settings = config(dir.path(), threshold);
        settings.extract_tool = true;
        let outcome = RUNTIME.intercept(&settings, &tool_call).unwrap();
        match (expected["outcome"].as_str().unwrap(), outcome) {
            ("unchanged", ToolOutcome::Unchanged(u)) => {
                assert_eq!(reason_name(u.reason), expected["reason"], "{case}");
                assert!(names(dir.path()).is_empty(), "{case}: nothing written");
            }
            ("offloaded", ToolOutcome::Offloaded(o)) => {
                let new: Value = serde_json::from_str(&o.result).unwrap();
                // Every field but the content is kept, in its place.
                let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
                assert_eq!(keys(&new), keys(&original), "{case}");
                for (k, v) in original.as_object().unwrap() {
                    if k != "content" && k != "structuredContent" {
                        assert_eq!(&new[k], v, "{case}: {k} preserved");
                    }
                }
                let content = new["content"].as_array().unwrap();
                assert_eq!(content[0]["type"].as_str(), Some("text"), "{case}");
                // Images, audio, links and resources stay, after the descriptor, as sent.
                let kept: Vec<&Value> = original["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|c| c["type"] != "text")
                    .collect();
                assert_eq!(content[1..].iter().collect::<Vec<_>>(), kept, "{case}");
                let descriptor: Value = serde_json::from_str(content[0]["text"].as_str().unwrap()).unwrap();
                match original.get("structuredContent").and_then(Value::as_object) {
                    // A single-key wrapper of text stays one, holding the descriptor's text,
                    // so it still matches the schema it came with.
                    Some(wrapper) if wrapper.len() == 1 && wrapper.values().all(Value::is_string) => {
                        let key = wrapper.keys().next().unwrap();
                        assert_eq!(new["structuredContent"], json!({key: content[0]["text"]}), "{case}");
                    }
                    Some(_) => assert_eq!(
                        new["structuredContent"], descriptor,
                        "{case}: content and structuredContent agree"
                    ),
                    None => {}
                }
                let tokens = RUNTIME.estimate(content[0]["text"].as_str().unwrap()).unwrap();
                match expected["kind"].as_str().unwrap() {
                    "memory" => {
                        assert_eq!(descriptor["summary"]["count"], expected["count"], "{case}");
                        assert_eq!(descriptor["summary"]["detail"], expected["detail"], "{case}");
                        assert_eq!(descriptor["jq_recipes"].as_array().unwrap().len(), 10);
                        assert_eq!(o.files, [descriptor["file_path"].as_str().unwrap()]);
                        assert!(descriptor["summary"]["score_range"].is_array());
                    }
                    _ => {
                        assert!(tokens <= 800, "{case}: descriptor of {tokens} tokens");
                        let data = match original.get("structuredContent") {
                            // The reference servers' wrapper of plain text: the text is the data.
                            Some(Value::Object(wrapper))
                                if wrapper.len() == 1 && wrapper.values().all(Value::is_string) =>
                            {
                                wrapper.values().next().unwrap().clone()
                            }
                            Some(v) => v.clone(),
                            None => {
                                let texts: Vec<&str> = original["content"]
                                    .as_array()
                                    .unwrap()
                                    .iter()
                                    .filter_map(|c| c["text"].as_str())
                                    .collect();
                                let text = texts.join("\n");
                                let text = text.as_str();
                                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
                            }
                        };
                        check_generic(&case, dir.path(), &expected, &data, &descriptor);
                    }
                }
            }
            (want, got) => panic!("{case}: expected {want}, got {got:?}"),
        }
        // Below its threshold every result passes through (errors, images and proxies for their
        // own reasons).
        let high = RUNTIME
            .intercept(&config(dir.path(), 1_000_000_000), &tool_call)
            .unwrap();
        let ToolOutcome::Unchanged(u) = high else {
            panic!("{case}: {high:?}")
        };
        let want = expected
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("under-threshold");
        assert_eq!(reason_name(u.reason), want, "{case} below its threshold");
    }
}

/// GitHub-style results of any size, and shapes built to bloat a descriptor.
fn adversarial(n: usize) -> Vec<Value> {
    let items: Vec<Value> = (0..n).map(|i| json!({"id": i, "state": if i % 2 == 0 { "open" } else { "closed" }, "title": format!("issue {i} title text here")})).collect();
    let wide: Vec<Value> = (0..n.min(500))
        .map(|i| {
            Value::Object(
                (0..120)
                    .map(|f| (format!("a_rather_long_field_name_number_{f:03}_x"), json!(i)))
                    .collect(),
            )
        })
        .collect();
    let mut many = Map::new();
    for k in 0..40 {
        many.insert(
            format!("section_with_a_long_name_{k:02}"),
            json!((0..n.max(20)).map(|i| format!("v{i}")).collect::<Vec<_>>()),
        );
        many.insert(format!("scalar_{k}"), json!(k));
    }
    vec![
        json!({"total_count": n, "items": items}),
        json!(wide),
        Value::Object(many),
        json!((0..n).map(|i| format!("line {i}")).collect::<Vec<_>>()),
    ]
}

#[test]
fn generic_descriptors_stay_under_800_tokens_for_any_input_size() {
    for n in [10, 1_000, 20_000] {
        for (i, data) in adversarial(n).into_iter().enumerate() {
            let dir = crate::common::tempdir().unwrap();
            let result = json!({"content": [{"type": "text", "text": data.to_string()}], "structuredContent": data});
            let call = ToolCall {
                tool: "a_tool_with_quite_a_long_name_for_testing".into(),
                arguments: "{}".into(),
                result: result.to_string(),
                meta: None,
            };
            let outcome = RUNTIME.intercept(&config(dir.path(), 10), &call).unwrap();
            let ToolOutcome::Offloaded(o) = outcome else {
                panic!("{n}/{i}: {outcome:?}")
            };
            let new: Value = serde_json::from_str(&o.result).unwrap();
            let tokens = RUNTIME.estimate(new["content"][0]["text"].as_str().unwrap()).unwrap();
            assert!(tokens <= 800, "n = {n}, shape {i}: {tokens} tokens");
        }
    }
}

/// The GitHub search fixture as a call to `search_issues`.
fn github_call() -> ToolCall {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/mcp/github_search");
    let result = std::fs::read_to_string(case.join("result.json")).unwrap();
    ToolCall {
        tool: "search_issues".into(),
        arguments: "{}".into(),
        result,
        meta: None,
    }
}

#[test]
fn per_tool_settings_choose_sections_inline_keys_and_thresholds() {
    let dir = crate::common::tempdir().unwrap();
    let call = github_call();
    let mut cfg = config(dir.path(), 500);
    cfg.tools = vec![lro_host::ToolSettings {
        name: "search_issues".into(),
        enabled: None,
        threshold_tokens: None,
        sections: Some(vec!["items".into()]),
        inline_keys: Some(vec!["total_count".into()]),
    }];
    let ToolOutcome::Offloaded(o) = RUNTIME.intercept(&cfg, &call).unwrap() else {
        panic!()
    };
    let new: Value = serde_json::from_str(&o.result).unwrap();
    let d: Value = serde_json::from_str(new["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(d["total_count"], 1432);
    assert!(
        d.get("incomplete_results").is_none(),
        "not listed inline, so in `other`"
    );
    assert_eq!(
        d["files"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["items", "other"]
    );
    cfg.tools[0].threshold_tokens = Some(1_000_000);
    assert!(
        matches!(RUNTIME.intercept(&cfg, &call).unwrap(), ToolOutcome::Unchanged(u) if u.reason == PassReason::UnderThreshold)
    );
    cfg.tools[0].threshold_tokens = None;
    cfg.tools[0].enabled = Some(false);
    assert!(
        matches!(RUNTIME.intercept(&cfg, &call).unwrap(), ToolOutcome::Unchanged(u) if u.reason == PassReason::Disabled)
    );
}

/// The `sections` setting names a nested array by its path; a name the result does not have
/// is reported, not ignored.
#[test]
fn a_sections_setting_names_nested_paths_and_reports_the_unknown() {
    let dir = crate::common::tempdir().unwrap();
    let rows: Vec<Value> = (0..300).map(|i| json!({"id": i, "status": "paid"})).collect();
    let result =
        json!({"content": [{"type": "text", "text": json!({"success": true, "data": {"rows": rows}}).to_string()}]});
    let call = ToolCall {
        tool: "execute_sql".into(),
        arguments: "{}".into(),
        result: result.to_string(),
        meta: None,
    };
    let mut cfg = config(dir.path(), 500);
    cfg.tools = vec![lro_host::ToolSettings {
        name: "execute_sql".into(),
        enabled: None,
        threshold_tokens: None,
        sections: Some(vec!["data.rows".into(), "data.nothing".into()]),
        inline_keys: None,
    }];
    let ToolOutcome::Offloaded(o) = RUNTIME.intercept(&cfg, &call).unwrap() else {
        panic!()
    };
    let new: Value = serde_json::from_str(&o.result).unwrap();
    let d: Value = serde_json::from_str(new["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(d["summary"]["data.rows"]["count"], 300, "{d}");
    assert!(d["lro_warning"].as_str().unwrap().contains("`data.nothing`"), "{d}");
}

/// A large `structuredContent` beside a one-line text (a summary) is offloaded: a client that
/// shows the structured content would put all of it in the context.
#[test]
fn large_structured_content_beside_a_short_text_is_offloaded() {
    let dir = crate::common::tempdir().unwrap();
    let rows: Vec<Value> = (0..300).map(|i| json!({"id": i, "name": format!("row {i}")})).collect();
    let result = json!({"content": [{"type": "text", "text": "Found 300 rows."}], "structuredContent": {"rows": rows}});
    let call = ToolCall {
        tool: "find_rows".into(),
        arguments: "{}".into(),
        result: result.to_string(),
        meta: None,
    };
    let ToolOutcome::Offloaded(o) = RUNTIME.intercept(&config(dir.path(), 500), &call).unwrap() else {
        panic!("not offloaded")
    };
    let new: Value = serde_json::from_str(&o.result).unwrap();
    let d: Value = serde_json::from_str(new["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(d["summary"]["rows"]["count"], 300);
    assert_eq!(new["structuredContent"], d, "the text and the structured form agree");
}

/// `lro_extract`'s definition offers numbered recipes to memory results only: a generic file
/// refuses them, and its guidance gives queries.
#[test]
fn the_extract_tools_definition_does_not_promise_recipes_to_generic_files() {
    let definition: Value = serde_json::from_str(&RUNTIME.tool_definition().unwrap()).unwrap();
    let recipe = definition["inputSchema"]["properties"]["recipe"]["description"]
        .as_str()
        .unwrap();
    assert!(recipe.starts_with("Only for a memory result"), "{recipe}");
}

#[test]
fn a_failed_write_degrades_to_a_truncated_result_and_leaves_no_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = crate::common::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o500)).unwrap();
    let call = github_call();
    let outcome = RUNTIME.intercept(&config(dir.path(), 500), &call).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let ToolOutcome::Degraded(d) = outcome else {
        panic!("{outcome:?}")
    };
    let new: Value = serde_json::from_str(&d.result).unwrap();
    let text = new["content"][0]["text"].as_str().unwrap();
    let payload: Value = serde_json::from_str(text).unwrap();
    assert_eq!(new["structuredContent"], payload);
    assert_eq!(
        (payload["truncated"].as_bool(), payload["total_count"].as_u64()),
        (Some(true), Some(40))
    );
    let returned = payload["returned_count"].as_u64().unwrap();
    assert_eq!(payload["items"].as_array().unwrap().len() as u64, returned);
    assert!(
        d.warning.contains(&format!("Showing {returned} of 40 items")),
        "{}",
        d.warning
    );
    assert!(RUNTIME.estimate(text).unwrap() <= 500);
    assert!(names(dir.path()).is_empty());
}

/// `intercept-file` reads the result from a byte range of a file in the offload directory and
/// gives what `intercept` gives for the same result; a name with a directory part, a range past
/// the end and a missing file are `invalid-input` naming the file, never a trap.
#[test]
fn intercept_file_reads_a_range_as_intercept_reads_the_text() {
    let dir = crate::common::tempdir().unwrap();
    let rows: Vec<Value> = (0..300).map(|i| json!({"id": i, "name": format!("row {i}")})).collect();
    let result =
        json!({"content": [{"type": "text", "text": serde_json::to_string_pretty(&rows).unwrap()}], "_meta": {"n": 1}})
            .to_string();
    let message = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{result}}}");
    std::fs::write(dir.path().join(".spooled"), &message).unwrap();
    let offset = message.find("\"result\":").unwrap() as u64 + 9;
    let source = |name: &str, offset: u64, length: u64| lro_host::ResultFile {
        name: name.into(),
        offset,
        length,
    };
    let empty = ToolCall {
        tool: "list_rows".into(),
        arguments: "{}".into(),
        result: String::new(),
        meta: None,
    };
    let config = config(dir.path(), 50);
    let from_file = RUNTIME
        .intercept_file(&config, &empty, &source(".spooled", offset, result.len() as u64))
        .unwrap();
    let in_memory = RUNTIME
        .intercept(
            &config,
            &ToolCall {
                result,
                ..empty.clone()
            },
        )
        .unwrap();
    let (ToolOutcome::Offloaded(a), ToolOutcome::Offloaded(b)) = (&from_file, &in_memory) else {
        panic!("{from_file:?} / {in_memory:?}")
    };
    let without_paths = |o: &lro_host::ToolOffloaded| {
        let mut text = o.result.clone();
        for file in &o.files {
            text = text.replace(file.as_str(), "FILE");
        }
        text
    };
    assert_eq!(without_paths(a), without_paths(b));
    assert_eq!(std::fs::read_to_string(&a.files[0]).unwrap().lines().count(), 301);
    for (bad, what) in [
        (source("../x", 0, 1), "not a plain file name"),
        (source(".spooled", offset, 1 << 30), "past the end of the file"),
        (source("missing", 0, 10), "missing: cannot open it"),
    ] {
        match RUNTIME.intercept_file(&config, &empty, &bad) {
            Err(lro_host::Error::Component(lro_host::ComponentError::InvalidInput(message))) => {
                assert!(message.contains(what), "{message}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}
