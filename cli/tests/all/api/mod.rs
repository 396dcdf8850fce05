//! The Rust host driving the real component: one test per behaviour a user relies on.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::common::*;
use lro_host::{ComponentError, Config, DescriptorStyle, Detail, Error, Event, Operation, Options, Outcome, Request};
use serde::Deserialize;
use serde_json::{Value, json};

mod errors;

/// The header line, decoded strictly: an unknown or missing field fails the test.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    #[serde(rename = "type")]
    kind: String,
    operation: String,
    query: Option<String>,
    count: usize,
    schema_version: String,
    timestamp: String,
    expires_at: String,
    estimated_tokens: u32,
    detail: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Summary {
    count: usize,
    estimated_tokens: u32,
    operation: String,
    top_namespaces: Vec<String>,
    score_range: Option<(f64, f64)>,
    detail: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JqRecipe {
    description: String,
    command: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Descriptor {
    offloaded: bool,
    summary: Summary,
    file_path: String,
    line_schema: Value,
    jq_recipes: Vec<JqRecipe>,
    guidance: String,
}

fn offloaded(outcome: Outcome) -> lro_host::OffloadedResult {
    match outcome {
        Outcome::Offloaded(o) => o,
        other => panic!("expected an offload, got {other:?}"),
    }
}

fn compact(records: &[Value]) -> String {
    serde_json::to_string(records).unwrap()
}

#[test]
fn estimate_equal_to_threshold_stays_inline_one_more_offloads() {
    let dir = crate::common::tempdir().unwrap();
    let records = sample(lro_core::Detail::Light, 30, false);
    let tokens = RUNTIME.estimate(&compact(&records)).unwrap();
    let request = request(Operation::Recall, None, &records);

    let at = RUNTIME.offload(&config(dir.path(), tokens), &request).unwrap();
    let Outcome::Inline(inline) = at else { panic!("{at:?}") };
    assert_eq!((inline.text, inline.tokens), (compact(&records), tokens));
    assert!(names(dir.path()).is_empty());

    let over = offloaded(RUNTIME.offload(&config(dir.path(), tokens - 1), &request).unwrap());
    assert_eq!(over.tokens, tokens);
    assert_eq!(names(dir.path()).len(), 1);
}

#[test]
fn cjk_text_counts_one_token_per_character() {
    assert_eq!(RUNTIME.estimate("abcd").unwrap(), 1);
    assert_eq!(RUNTIME.estimate("漢字かなカナ한글abcd").unwrap(), 9);
    // 400 ideographs: ~100 tokens by characters / 4, 400 by the CJK rule, so a threshold of 200
    // offloads only under the CJK rule.
    let dir = crate::common::tempdir().unwrap();
    let records = vec![json!({"id": "1", "namespace": "_semantic/ja", "title": "記".repeat(400)})];
    let outcome = RUNTIME
        .offload(&config(dir.path(), 200), &request(Operation::Recall, None, &records))
        .unwrap();
    assert_eq!(
        offloaded(outcome).tokens,
        400 + "[{\"id\":\"1\",\"namespace\":\"_semantic/ja\",\"title\":\"\"}]"
            .len()
            .div_ceil(4) as u32
    );
}

#[test]
fn disabled_always_stays_inline() {
    let dir = crate::common::tempdir().unwrap();
    let records = sample(lro_core::Detail::Full, 500, false);
    let mut cfg = config(dir.path(), 10);
    cfg.enabled = false;
    let outcome = RUNTIME
        .offload(&cfg, &request(Operation::Recall, None, &records))
        .unwrap();
    let Outcome::Inline(inline) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(inline.text, compact(&records));
    assert!(inline.tokens > 10);
    assert!(names(dir.path()).is_empty());
}

#[test]
fn each_detail_level_gets_its_own_schema_and_recipes_and_no_score() {
    let mut seen_schemas = HashSet::new();
    let mut seen_adaptive = HashSet::new();
    for detail in DETAILS {
        let dir = crate::common::tempdir().unwrap();
        let hits = sample(core_detail(detail), 500, true);
        let out = offloaded(
            RUNTIME
                .offload(
                    &config(dir.path(), 1600),
                    &request(Operation::Search, Some(detail), &hits),
                )
                .unwrap(),
        );
        let d: Descriptor = serde_json::from_str(&out.descriptor).unwrap();
        assert!(d.offloaded);
        assert_eq!(d.jq_recipes.len(), 10);
        assert_eq!(d.summary.detail, core_detail(detail).as_str());
        let properties = d.line_schema["properties"].as_object().unwrap();
        assert_eq!(
            properties.contains_key("content"),
            detail != Detail::Light,
            "{detail:?}"
        );
        assert_eq!(
            properties.contains_key("confidence"),
            detail == Detail::Medium,
            "{detail:?}"
        );
        assert!(seen_schemas.insert(d.line_schema.to_string()));
        assert!(seen_adaptive.insert(format!("{} | {}", d.jq_recipes[8].command, d.jq_recipes[9].command)));
        let quoted = format!("'{}'", d.file_path);
        for recipe in &d.jq_recipes {
            assert!(
                recipe.command.starts_with(&format!("tail -n +2 {quoted} | jq")),
                "{}",
                recipe.command
            );
            assert!(!recipe.command.contains("score") && !recipe.description.is_empty());
        }
        let file = std::fs::read_to_string(&out.path).unwrap();
        for line in file.lines().skip(1) {
            let record: Value = serde_json::from_str(line).unwrap();
            assert!(
                record.get("score").is_none() && record.get("memory").is_none(),
                "{line}"
            );
        }
        assert!(d.guidance.contains(&format!("Detail level: {}", d.summary.detail)));
    }
}

#[test]
fn header_and_lines_decode_and_agree_with_the_descriptor() {
    let dir = crate::common::tempdir().unwrap();
    let hits = sample(lro_core::Detail::Full, 500, true);
    let request = request(Operation::Recall, Some(Detail::Full), &hits);
    let out = offloaded(RUNTIME.offload(&config(dir.path(), 1600), &request).unwrap());
    let text = std::fs::read_to_string(&out.path).unwrap();
    assert_eq!(text.len() as u64, out.bytes);
    let mut lines = text.lines();
    let header: Header = serde_json::from_str(lines.next().unwrap()).unwrap();
    let records: Vec<Value> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    let expected: Vec<&Value> = hits.iter().map(|h| &h["memory"]).collect();
    assert_eq!(
        records.iter().collect::<Vec<_>>(),
        expected,
        "lines are the memories, in result-set order"
    );
    assert_eq!(header.kind, "lro_header");
    assert_eq!(
        (header.operation.as_str(), header.query.as_deref(), header.count),
        ("recall", Some("caching"), 500)
    );
    assert_eq!(
        (header.schema_version.as_str(), header.detail.as_str()),
        ("0.1", "full")
    );
    assert_eq!(header.estimated_tokens, out.tokens);
    // RFC 3339 UTC with milliseconds, equal to the time in the file's ULID.
    let ms = lro_core::time::parse_rfc3339_ms(&header.timestamp).unwrap();
    assert_eq!(lro_core::time::format_rfc3339_ms(ms), header.timestamp);
    let ulid = out.path.rsplit('-').next().unwrap().trim_end_matches(".jsonl");
    assert_eq!(ulid::Ulid::from_string(ulid).unwrap().timestamp_ms(), ms);
    // The writer's promise: created + its ttl (3600 s by default), in the same format.
    assert_eq!(header.expires_at, lro_core::time::format_rfc3339_ms(ms + 3_600_000));

    let d: Descriptor = serde_json::from_str(&out.descriptor).unwrap();
    assert_eq!(
        (d.summary.count, d.summary.estimated_tokens),
        (500, header.estimated_tokens)
    );
    assert_eq!(d.summary.operation, "recall");
    // Most frequent first, ties by name, at most five; computed here independently.
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for r in &records {
        *counts.entry(r["namespace"].as_str().unwrap()).or_default() += 1;
    }
    let mut ranked: Vec<(&str, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let top: Vec<String> = ranked.iter().take(5).map(|(n, _)| (*n).to_owned()).collect();
    assert_eq!(d.summary.top_namespaces, top);
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    let (min, max) = (
        scores.iter().cloned().fold(f64::MAX, f64::min),
        scores.iter().cloned().fold(f64::MIN, f64::max),
    );
    assert_eq!(d.summary.score_range, Some((min, max)));
    assert!(d.guidance.contains("rank order"));
}

#[test]
fn plain_memories_have_no_score_range() {
    let dir = crate::common::tempdir().unwrap();
    let out = offloaded(
        RUNTIME
            .offload(
                &config(dir.path(), 100),
                &request(Operation::List, None, &sample(lro_core::Detail::Light, 50, false)),
            )
            .unwrap(),
    );
    let d: Value = serde_json::from_str(&out.descriptor).unwrap();
    assert_eq!(d["summary"]["score_range"], Value::Null);
    assert_eq!(d["summary"]["detail"], "light");
}

#[test]
fn file_names_match_the_pattern_and_stay_unique_over_1000_offloads() {
    let dir = crate::common::tempdir().unwrap();
    let cfg = config(dir.path(), 0);
    let request = request(Operation::Search, None, &sample(lro_core::Detail::Light, 1, false));
    let canonical = dir.path().canonicalize().unwrap();
    let mut paths = HashSet::new();
    for _ in 0..1000 {
        let out = offloaded(RUNTIME.offload(&cfg, &request).unwrap());
        let name = out
            .path
            .strip_prefix(&format!("{}/", canonical.display()))
            .expect("inside the directory");
        let ulid = name
            .strip_prefix("atlatl-search-")
            .and_then(|n| n.strip_suffix(".jsonl"))
            .expect(name);
        assert!(ulid::Ulid::from_string(ulid).is_ok() && ulid.len() == 26, "{name}");
        assert!(paths.insert(out.path));
    }
    assert_eq!(names(dir.path()).len(), 1000);
}

#[test]
fn files_are_owner_only_in_a_directory_created_private() {
    let parent = crate::common::tempdir().unwrap();
    let dir = parent.path().join("new/offload");
    let out = offloaded(
        RUNTIME
            .offload(
                &config(&dir, 10),
                &request(Operation::Recall, None, &sample(lro_core::Detail::Light, 20, false)),
            )
            .unwrap(),
    );
    assert!(out.path.starts_with(dir.canonicalize().unwrap().to_str().unwrap()));
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(std::path::Path::new(&out.path)), 0o600);
    assert_eq!(mode(&dir), 0o700);
}

#[test]
fn inject_keeps_the_budgeted_text_below_and_offloads_the_pre_budget_set_above() {
    let dir = crate::common::tempdir().unwrap();
    let records = sample(lro_core::Detail::Medium, 60, false);
    let text = "## Relevant memories\n- only the first three\n";
    let inject = |threshold| {
        let request = Request {
            operation: Operation::Inject,
            query: None,
            detail: None,
            records: compact(&records),
            text: Some(text.into()),
        };
        RUNTIME.offload(&config(dir.path(), threshold), &request).unwrap()
    };
    let below = inject(1_000_000);
    assert!(matches!(&below, Outcome::Inline(i) if i.text == text), "{below:?}");
    let above = offloaded(inject(100));
    assert_eq!(above.count, 60, "the whole pre-budget set, not what budgeting kept");
    let d: Value = serde_json::from_str(&above.descriptor).unwrap();
    assert_eq!(d["summary"]["detail"], "medium", "inject defaults to medium");
    assert_eq!(std::fs::read_to_string(&above.path).unwrap().lines().count(), 61);
}

#[test]
fn read_only_directory_falls_back_to_truncated_inline_with_warning_and_event() {
    let dir = crate::common::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o500)).unwrap();
    let (runtime, events) = with_events();
    let records = sample(lro_core::Detail::Light, 200, false);
    let outcome = runtime
        .offload(&config(dir.path(), 1600), &request(Operation::Recall, None, &records))
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();

    let Outcome::Degraded(degraded) = outcome else {
        panic!("{outcome:?}")
    };
    let payload: Value = serde_json::from_str(&degraded.payload).unwrap();
    assert_eq!(payload["truncated"], true);
    assert_eq!(payload["total_count"], 200);
    let returned = payload["returned_count"].as_u64().unwrap() as usize;
    assert!(returned > 0 && returned < 200, "{returned}");
    assert_eq!(
        payload["records"].as_array().unwrap().as_slice(),
        &records[..returned],
        "the leading records, in order"
    );
    assert_eq!(payload["lro_warning"], degraded.warning.as_str());
    assert!(
        degraded.warning.contains(&format!("Showing {returned} of 200 records")),
        "{}",
        degraded.warning
    );
    assert!(RUNTIME.estimate(&degraded.payload).unwrap() <= 1600);
    assert!(names(dir.path()).is_empty(), "no partial or temporary file is left");
    let events = events.lock().unwrap();
    assert!(
        matches!(&events[..], [Event::OffloadWriteFailed(e)] if e.total == 200 && e.returned as usize == returned && e.operation == "recall"),
        "{events:?}"
    );
}

#[test]
fn bare_descriptor_has_path_and_summary_only() {
    let dir = crate::common::tempdir().unwrap();
    let mut cfg = config(dir.path(), 100);
    cfg.descriptor = DescriptorStyle::Bare;
    let out = offloaded(
        RUNTIME
            .offload(
                &cfg,
                &request(Operation::Recall, None, &sample(lro_core::Detail::Light, 50, false)),
            )
            .unwrap(),
    );
    let d: Value = serde_json::from_str(&out.descriptor).unwrap();
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["offloaded", "summary", "file_path"]);
}

#[test]
fn extract_tool_guidance_points_to_lro_extract() {
    let dir = crate::common::tempdir().unwrap();
    let mut cfg = config(dir.path(), 100);
    cfg.extract_tool = true;
    let out = offloaded(
        RUNTIME
            .offload(
                &cfg,
                &request(Operation::Recall, None, &sample(lro_core::Detail::Light, 50, false)),
            )
            .unwrap(),
    );
    let d: Descriptor = serde_json::from_str(&out.descriptor).unwrap();
    assert!(
        d.guidance
            .contains(&format!("lro_extract(file_path=\"{}\", recipe=1)", out.path)),
        "{}",
        d.guidance
    );
    assert!(!d.guidance.contains("jq recipes above"));
    assert_eq!(d.jq_recipes.len(), 10, "recipes stay for shell-capable clients");
}

#[test]
fn offload_created_event_reports_the_file() {
    let dir = crate::common::tempdir().unwrap();
    let (runtime, events) = with_events();
    let out = offloaded(
        runtime
            .offload(
                &config(dir.path(), 100),
                &request(Operation::List, None, &sample(lro_core::Detail::Light, 50, false)),
            )
            .unwrap(),
    );
    let events = events.lock().unwrap();
    let [Event::OffloadCreated(e)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(
        (&e.path, e.count, e.tokens, e.bytes, e.operation.as_str()),
        (&out.path, 50, out.tokens, out.bytes, "list")
    );
}
