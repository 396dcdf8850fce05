//! What descriptors and recipes say, against what is in the file and what the SDKs send.

use std::process::Command;

use crate::common::*;
use crate::robustness::*;
use lro_host::{Config, ExtractRequest, Operation, Outcome, PassReason, ToolOutcome};
use serde_json::{Value, json};

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
        extract_tool: true,
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
/// every recipe answers the same through the extractor (`lro_extract`) and as the shell command, with missing fields.
#[test]
fn recipes_are_guarded_against_missing_fields_in_the_extractor_and_in_the_shell() {
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
            let extracted = RUNTIME
                .extract(
                    &config,
                    &ExtractRequest {
                        recipe: Some(number),
                        limit: Some(u32::MAX),
                        ..extract_request(&out.path)
                    },
                )
                .unwrap_or_else(|e| panic!("{detail:?} recipe {number}: {e}"));
            assert_reference_jq();
            let shell = Command::new("sh")
                .args(["-c", recipe["command"].as_str().unwrap()])
                .output()
                .unwrap();
            assert!(
                shell.status.success(),
                "{detail:?} recipe {number}: {}",
                String::from_utf8_lossy(&shell.stderr)
            );
            let shell_values = jq_values(&String::from_utf8(shell.stdout).unwrap(), extracted.raw);
            let extracted_values: Vec<Value> = extracted
                .values
                .iter()
                .map(|v| {
                    if extracted.raw {
                        Value::String(v.clone())
                    } else {
                        norm(serde_json::from_str(v).unwrap())
                    }
                })
                .collect();
            assert_eq!(extracted_values, shell_values, "{detail:?} recipe {number}");
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
