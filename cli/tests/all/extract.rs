//! The extractor through the real component: recipes against jq 1.6 and jq 1.8, the paper's
//! tasks, limits for untrusted filters, confinement to the offload directory, and the messages
//! a model acts on.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use lro_host::{ComponentError, Error, ExtractRequest, ExtractResult, Operation, Outcome, RecipeLibrary};
use serde_json::{Value, json};

/// Offloads `records` and returns the file's path.
fn offload(dir: &Path, detail: lro_host::Detail, records: &[Value]) -> String {
    match RUNTIME
        .offload(&config(dir, 10), &request(Operation::Recall, Some(detail), records))
        .unwrap()
    {
        Outcome::Offloaded(o) => o.path,
        other => panic!("{other:?}"),
    }
}

fn extract(dir: &Path, request: ExtractRequest) -> Result<ExtractResult, Error> {
    RUNTIME.extract(&config(dir, 1600), &request)
}

fn recipe(path: &str, number: u32, params: Option<Value>) -> ExtractRequest {
    ExtractRequest {
        path: path.to_owned(),
        recipe: Some(number),
        query: None,
        params: params.map(|p| p.to_string()),
        slurp: false,
        limit: Some(u32::MAX),
    }
}

fn query(path: &str, filter: &str, slurp: bool) -> ExtractRequest {
    ExtractRequest {
        path: path.to_owned(),
        recipe: None,
        query: Some(filter.into()),
        params: None,
        slurp,
        limit: Some(u32::MAX),
    }
}

fn ours(result: &ExtractResult) -> Vec<Value> {
    assert!(!result.truncated);
    result
        .values
        .iter()
        .map(|v| {
            if result.raw {
                Value::String(v.clone())
            } else {
                norm(serde_json::from_str(v).unwrap())
            }
        })
        .collect()
}

/// Runs `jq [-s|-r] --arg k v... program` (the system jq, 1.6) over the file's records.
fn jq16(path: &str, program: &str, slurp: bool, raw: bool, args: &[(&str, &str)]) -> Vec<Value> {
    let mut command = format!("tail -n +2 '{path}' | jq");
    if slurp {
        command.push_str(" -s");
    }
    if raw {
        command.push_str(" -r");
    }
    for (k, v) in args {
        command.push_str(&format!(" --arg {k} '{v}'"));
    }
    command.push_str(&format!(" '{program}'"));
    shell_jq(&command, raw)
}

fn python() -> PathBuf {
    let python = std::env::var_os("LRO_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: this test compares with jq 1.8 from PyPI. Run `python3 -m venv .venv && \
         .venv/bin/pip install -r tests/requirements.txt` (the README set-up), or set LRO_PYTHON.",
        python.display()
    );
    python
}

/// Runs every job with jq 1.8 in one Python process.
fn jq18(path: &str, jobs: &[Value]) -> Vec<Vec<Value>> {
    let text = std::fs::read_to_string(path).unwrap();
    let body = text.split_once('\n').unwrap().1;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/jq18.py");
    let mut child = Command::new(python())
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let request = json!({"input": body, "jobs": jobs}).to_string();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), request.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        results["version"], "1.8",
        "the comparison is with jq 1.8 (PyPI `jq`, tests/requirements.txt)"
    );
    results["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().cloned().map(norm).collect())
        .collect()
}

/// Non-default values for each parameterised recipe, chosen to match some records.
fn other_params(number: u8) -> Option<(&'static str, &'static str)> {
    match number {
        2 => Some(("namespace", "_episodic")),
        3 => Some(("keyword", "cache")),
        5 => Some(("memory_type", "procedural")),
        7 => Some(("tag", "ops")),
        10 => Some(("pattern", "priority 5")),
        _ => None,
    }
}

#[test]
fn every_recipe_matches_jq_1_6_and_jq_1_8_with_default_and_other_parameters() {
    for detail in DETAILS {
        let dir = crate::common::tempdir().unwrap();
        let path = offload(dir.path(), detail, &sample(core_detail(detail), 500, true));
        let recipes = RUNTIME.recipes(&config(dir.path(), 1600), detail, Some(&path)).unwrap();
        let mut jobs = Vec::new();
        let mut expected_ours = Vec::new();
        for r in &recipes {
            let mut runs: Vec<Option<(&str, &str)>> = vec![None];
            if r.number == 10 && detail == lro_host::Detail::Light {
                runs.clear();
                runs.push(None);
            } else if let Some(p) = other_params(r.number) {
                runs.push(Some(p));
            }
            for params in runs {
                let args: Vec<(&str, &str)> = match params {
                    Some(p) => vec![p],
                    None => r.params.iter().map(|p| (p.name.as_str(), p.default.as_str())).collect(),
                };
                let result = extract(
                    dir.path(),
                    recipe(&path, u32::from(r.number), params.map(|(k, v)| json!({k: v}))),
                )
                .unwrap();
                let got = ours(&result);
                assert_eq!(result.raw, r.raw);
                // jq 1.6, as the descriptor's command runs it (defaults) or with --arg (others).
                let reference = match params {
                    None => shell_jq(&r.command, r.raw),
                    Some(_) => jq16(&path, &r.program, r.slurp, r.raw, &args),
                };
                assert_eq!(got, reference, "{detail:?} recipe {} {params:?} vs jq 1.6", r.number);
                if r.number == 6 || r.number == 8 || r.number == 1 {
                    assert!(!got.is_empty());
                }
                let arg_map: serde_json::Map<String, Value> =
                    args.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect();
                jobs.push(json!({"program": r.program, "args": arg_map, "slurp": r.slurp}));
                expected_ours.push((r.number, r.raw, got));
            }
        }
        // jq 1.8 returns values, so raw recipes compare as strings too.
        for (reference, (number, _raw, got)) in jq18(&path, &jobs).into_iter().zip(expected_ours) {
            assert_eq!(got, reference, "{detail:?} recipe {number} vs jq 1.8");
        }
    }
}

#[test]
fn the_v1_library_is_offered_and_runs() {
    let dir = crate::common::tempdir().unwrap();
    let mut cfg = config(dir.path(), 10);
    cfg.recipes = RecipeLibrary::V1;
    let records = sample(lro_core::Detail::Full, 200, false);
    let Outcome::Offloaded(out) = RUNTIME
        .offload(&cfg, &request(Operation::Recall, None, &records))
        .unwrap()
    else {
        panic!()
    };
    let d: Value = serde_json::from_str(&out.descriptor).unwrap();
    assert_eq!(d["jq_recipes"][6]["description"], "Get memories with entities");
    cfg.threshold_tokens = 1600;
    let result = RUNTIME.extract(&cfg, &recipe(&out.path, 9, None)).unwrap();
    let top: Value = serde_json::from_str(&result.values[0]).unwrap();
    assert_eq!(top.as_array().unwrap().len(), 10, "v1 recipe 9 is the top ten");
}

/// Counts through `lro extract --query --slurp`, as a user would run it.
fn count_with_cli(dir: &Path, path: &str, filter: &str) -> u64 {
    let out = Command::new(env!("CARGO_BIN_EXE_lro"))
        .args([
            "extract",
            path,
            "--query",
            filter,
            "--slurp",
            "--output-dir",
            dir.to_str().unwrap(),
        ])
        .env("LRO_CACHE_DIR", cache_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
}

#[test]
fn the_papers_two_tasks_answer_exactly() {
    for n in [50, 200, 500] {
        let dir = crate::common::tempdir().unwrap();
        let records = lro_core::sample::records(lro_core::Detail::Full, n, n as u64, false);
        let path = offload(dir.path(), lro_host::Detail::Full, &records);

        // "How many of these 12 ids exist?" 8 do.
        let mut ids: Vec<String> = (0..8)
            .map(|i| records[i * n / 8]["id"].as_str().unwrap().to_owned())
            .collect();
        ids.extend((0..4).map(|i| format!("00000000-0000-4000-a000-00000000000{i}")));
        let list = serde_json::to_string(&ids).unwrap();
        let filter = format!("map(select(.id as $id | {list} | index($id))) | length");
        assert_eq!(count_with_cli(dir.path(), &path, &filter), 8, "n = {n}");

        // "How many in namespace X with priority >= Y mention Z?", counted here independently.
        let (namespace, priority, product) = ("_semantic/decisions", 3, "atlas");
        let truth = records
            .iter()
            .filter(|r| {
                r["namespace"] == namespace
                    && r["extensions"]["priority"].as_u64().unwrap() >= priority
                    && r["content"].as_str().unwrap().to_lowercase().contains(product)
            })
            .count() as u64;
        if n >= 200 {
            assert!(truth > 0, "the corpus should have matches at n = {n}");
        }
        let filter = format!(
            "map(select(.namespace == \"{namespace}\" and .extensions.priority >= {priority} and (.content | test(\"{product}\"; \"i\")))) | length"
        );
        assert_eq!(count_with_cli(dir.path(), &path, &filter), truth, "n = {n}");
    }
}

#[test]
fn runaway_filters_and_deep_input_stop_and_the_next_call_works() {
    // The filter deadline is 1 s. The bound below only catches a deadline that does not work:
    // CI machines run the suites in parallel on 2 shared cores, where a tight bound is flaky.
    let bound = Duration::from_secs(15);
    let dir = crate::common::tempdir().unwrap();
    let path = offload(
        dir.path(),
        lro_host::Detail::Light,
        &sample(lro_core::Detail::Light, 50, false),
    );
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let deep_filter = "(".repeat(100_000) + "." + &")".repeat(100_000);
    let cases: [(&str, &str); 7] = [
        ("repeat(1)", "null"),
        ("last(range(1e18))", "null"),
        ("[range(1e9)]", "null"),
        ("def f: f; f", "null"),
        ("def f: [f]; f", "null"),
        (".", deep.as_str()),
        (deep_filter.as_str(), "null"),
    ];
    for (filter, input) in cases {
        let start = Instant::now();
        let err = RUNTIME.query(filter, input, false, false, None).unwrap_err();
        let took = start.elapsed();
        assert!(took < bound, "{}: {took:?}", &filter[..filter.len().min(40)]);
        let clear = err.is_limit()
            || matches!(&err, Error::Component(ComponentError::InvalidInput(m)) if m.contains("nested deeper than 1000"));
        assert!(clear, "{}: {err}", &filter[..filter.len().min(40)]);
        if filter == "def f: [f]; f" {
            assert_eq!(err.kind(), lro_host::ErrorKind::StackOverflow, "{err}");
        }
        // The next call, query and extraction alike, works.
        assert_eq!(
            RUNTIME.query(".a", "{\"a\": 1}", false, false, None).unwrap().values,
            ["1"]
        );
        assert_eq!(extract(dir.path(), recipe(&path, 1, None)).unwrap().values.len(), 50);
    }
    // The same filters inside an extraction.
    let start = Instant::now();
    let err = extract(dir.path(), query(&path, "repeat(.)", false)).unwrap_err();
    assert!(err.is_limit() && start.elapsed() < bound, "{err}");
    // A deep line in a file is refused as corrupt, with its line number.
    let name = format!("atlatl-recall-{}.jsonl", ulid::Ulid::generate());
    let header = r#"{"type":"lro_header","operation":"recall","query":null,"count":1,"schema_version":"0.1","timestamp":"2999-01-01T00:00:00.000Z","estimated_tokens":1,"detail":"light"}"#;
    std::fs::write(dir.path().join(&name), format!("{header}\n{deep}\n")).unwrap();
    let deep_path = dir.path().canonicalize().unwrap().join(&name);
    let err = extract(dir.path(), recipe(deep_path.to_str().unwrap(), 4, None)).unwrap_err();
    assert!(
        matches!(&err, Error::Component(ComponentError::Corrupt(m)) if m.contains("line 2") && m.contains("nested deeper")),
        "{err}"
    );
}

#[test]
fn paths_outside_or_not_ours_are_refused_and_nothing_outside_is_read() {
    let root = crate::common::tempdir().unwrap();
    let dir = root.path().join("offload");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let inside = offload(
        &dir,
        lro_host::Detail::Light,
        &sample(lro_core::Detail::Light, 20, false),
    );
    let dir = dir.canonicalize().unwrap();
    let name = Path::new(&inside).file_name().unwrap().to_str().unwrap().to_owned();
    // A valid LRO file outside: reading it would succeed, so a refusal proves it was not read.
    std::fs::copy(&inside, outside.join(&name)).unwrap();
    let link_name = name
        .replace(".jsonl", "")
        .replace(&name[name.len() - 10..name.len() - 6], "ZZZZ")
        + ".jsonl";
    std::os::unix::fs::symlink(outside.join(&name), dir.join(&link_name)).unwrap();
    std::fs::write(dir.join("notes.txt"), "hello").unwrap();
    let fake = format!("atlatl-recall-{}.jsonl", ulid::Ulid::generate());
    std::fs::write(dir.join(&fake), "{\"not\": \"a header\"}\n{}\n").unwrap();

    let d = dir.to_str().unwrap();
    let cases = [
        (format!("{d}/../outside/{name}"), "outside"),
        (outside.join(&name).to_str().unwrap().to_owned(), "outside"),
        (format!("{d}/{link_name}"), "outside"),
        (format!("{d}/notes.txt"), "not-lro"),
        (format!("{d}/{fake}"), "not-lro"),
        (format!("{d}/atlatl-recall-{}.jsonl", ulid::Ulid::generate()), "missing"),
        ("/etc/passwd".to_owned(), "outside"),
    ];
    for (path, kind) in cases {
        let err = extract(&dir, recipe(&path, 1, None)).unwrap_err();
        let ok = match (kind, &err) {
            ("outside", Error::Component(ComponentError::OutsideDirectory(m))) => m.contains(&path),
            ("not-lro", Error::Component(ComponentError::NotLroFile(m))) => m.contains(&path),
            ("missing", Error::Component(ComponentError::NotFound(m))) => m.contains("does not exist"),
            _ => false,
        };
        assert!(ok, "{path}: expected {kind}, got {err}");
    }
    // The real file inside still works.
    assert_eq!(extract(&dir, recipe(&inside, 4, None)).unwrap().values.len(), 20);
}

#[test]
fn an_expired_file_is_refused() {
    let dir = crate::common::tempdir().unwrap();
    let name = format!("atlatl-recall-{}.jsonl", ulid::Ulid::generate());
    let header = r#"{"type":"lro_header","operation":"recall","query":null,"count":1,"schema_version":"0.1","timestamp":"2020-01-01T00:00:00.000Z","estimated_tokens":1,"detail":"light"}"#;
    std::fs::write(dir.path().join(&name), format!("{header}\n{{\"id\":\"x\"}}\n")).unwrap();
    let path = dir.path().canonicalize().unwrap().join(&name);
    let err = extract(dir.path(), recipe(path.to_str().unwrap(), 4, None)).unwrap_err();
    assert!(
        matches!(&err, Error::Component(ComponentError::Expired(m)) if m.contains("2020-01-01T01:00:00.000Z")),
        "{err}"
    );
}

#[test]
fn exactly_one_of_recipe_and_query() {
    let dir = crate::common::tempdir().unwrap();
    let path = offload(
        dir.path(),
        lro_host::Detail::Light,
        &sample(lro_core::Detail::Light, 20, false),
    );
    let both = ExtractRequest {
        query: Some(".".into()),
        ..recipe(&path, 1, None)
    };
    let err = extract(dir.path(), both).unwrap_err();
    assert!(
        matches!(&err, Error::Component(ComponentError::InvalidRequest(m)) if m.contains("not both")),
        "{err}"
    );
    let neither = ExtractRequest {
        recipe: None,
        ..recipe(&path, 1, None)
    };
    assert!(matches!(
        extract(dir.path(), neither).unwrap_err(),
        Error::Component(ComponentError::InvalidRequest(_))
    ));
    let slurp_recipe = ExtractRequest {
        slurp: true,
        ..recipe(&path, 2, None)
    };
    assert!(
        matches!(extract(dir.path(), slurp_recipe).unwrap_err(), Error::Component(ComponentError::InvalidRequest(m)) if m.contains("slurp"))
    );
    let bad_param = recipe(&path, 2, Some(json!({"namespace": 3})));
    assert!(
        matches!(extract(dir.path(), bad_param).unwrap_err(), Error::Component(ComponentError::InvalidRequest(m)) if m.contains("params.namespace must be a string"))
    );
}

#[test]
fn parameters_are_bound_as_values_never_pasted_into_the_program() {
    let dir = crate::common::tempdir().unwrap();
    let path = offload(
        dir.path(),
        lro_host::Detail::Light,
        &sample(lro_core::Detail::Light, 20, false),
    );
    // Pasted into the program this would close the string and halt; bound, it is just a prefix.
    let hostile = json!({"namespace": "\") | halt | (\""});
    let result = extract(dir.path(), recipe(&path, 2, Some(hostile))).unwrap();
    assert_eq!((result.total, result.truncated), (0, false));
    // Extra keys (the spec's example passes several at once) are ignored by a recipe.
    let several = json!({"namespace": "_semantic", "keyword": "x", "tag": "y"});
    assert!(extract(dir.path(), recipe(&path, 2, Some(several))).unwrap().total > 0);
    // A query sees every parameter as a variable.
    let q = ExtractRequest {
        params: Some(json!({"ns": "_semantic", "n": 2}).to_string()),
        ..query(&path, "select(.namespace | startswith($ns)) | $n", false)
    };
    assert!(extract(dir.path(), q).unwrap().values.iter().all(|v| v == "2"));
}

#[test]
fn errors_and_empty_results_tell_the_model_what_to_do() {
    let dir = crate::common::tempdir().unwrap();
    let path = offload(
        dir.path(),
        lro_host::Detail::Light,
        &sample(lro_core::Detail::Light, 30, false),
    );
    let err = extract(dir.path(), query(&path, "select(.title | ", false)).unwrap_err();
    assert!(
        matches!(&err, Error::Component(ComponentError::InvalidFilter(m)) if m.contains("column 17")),
        "{err}"
    );
    let err = extract(dir.path(), query(&path, "select(.content | test(\"x\"))", false)).unwrap_err();
    let Error::Component(ComponentError::FilterFailed(m)) = &err else {
        panic!("{err}")
    };
    assert!(
        m.starts_with("test: null (null) cannot be matched, as it is not a string (on the record at line 2)"),
        "{m}"
    );
    assert!(m.contains("`.content` not present at light detail"), "{m}");
    let empty = extract(dir.path(), query(&path, "select(.summary == \"x\")", false)).unwrap();
    assert_eq!(empty.total, 0);
    assert!(
        empty.text.starts_with("[lro_extract: no values")
            && empty.text.contains("`.summary` not present at light detail"),
        "{}",
        empty.text
    );
    let none = extract(dir.path(), query(&path, "select(.title == \"no such title\")", false)).unwrap();
    assert_eq!(none.text, "[lro_extract: no values: the filter matched nothing.]");
}

#[test]
fn output_is_capped_and_says_where_the_filter_stopped() {
    let dir = crate::common::tempdir().unwrap();
    let path = offload(
        dir.path(),
        lro_host::Detail::Full,
        &sample(lro_core::Detail::Full, 300, false),
    );
    let mut capped = recipe(&path, 4, None);
    capped.limit = None; // the threshold_tokens: 1600 tokens
    let result = extract(dir.path(), capped).unwrap();
    let shown = result.values.len();
    // The value past the cap stopped the filter (issue 34, item 14).
    assert!(result.truncated && result.total == shown as u64 + 1);
    assert!(shown > 10 && shown < 300, "{shown}");
    assert!(
        result.text.contains(&format!(
            "showing {shown} values; the output cap is 1600 tokens. The filter was stopped at the record on line {}",
            shown + 2
        )),
        "{}",
        result.text
    );
    assert!(RUNTIME.estimate(&result.values.join("\n")).unwrap() <= 1600);
    let raw = extract(dir.path(), recipe(&path, 1, None)).unwrap();
    assert!(raw.raw && raw.values[0].contains('\t') && !raw.values[0].starts_with('"'));
}

// See: issue 34, item 14. Every value past the output cap was still counted, so a filter that
// needs a few records (`limit: 1`, `first(.id)`) read and ran over all of them, and timed out on
// a large file. The first value past the cap now stops the filter, and the records after it are
// not read: the note says where it stopped.
#[test]
fn the_output_cap_stops_the_filter_and_later_records_are_not_read() {
    let dir = crate::common::tempdir().unwrap();
    // 200,000 records, about 20 MB: parsing each whole takes the component several times the
    // deadline below; the first few take a moment.
    let records: Vec<String> = (0..200_000)
        .map(|i| {
            format!(
                r#"{{"id":{i},"title":"Record number {i} of the set","namespace":"_semantic/n{}"}}"#,
                i % 17
            )
        })
        .collect();
    let request = lro_host::Request {
        operation: Operation::List,
        query: None,
        detail: None,
        records: format!("[{}]", records.join(",")),
        text: None,
    };
    let Outcome::Offloaded(o) = RUNTIME.offload(&config(dir.path(), 10), &request).unwrap() else {
        panic!("not offloaded")
    };
    let runtime = lro_host::Runtime::new(lro_host::Options {
        filter_deadline: Duration::from_millis(400),
        cache_dir: Some(cache_dir()),
        ..lro_host::Options::default()
    })
    .unwrap();
    let run = |filter: &str, limit: Option<u32>| {
        let request = ExtractRequest {
            limit,
            ..query(&o.path, filter, false)
        };
        runtime
            .extract(&config(dir.path(), 1600), &request)
            .unwrap_or_else(|e| panic!("{filter}: {e}"))
    };
    // Whole records, five under a cap of 100 tokens: the sixth stops the filter on line 7
    // (the header is line 1).
    let out = run(".", Some(100));
    assert_eq!(
        (out.values.len(), out.total, out.truncated),
        (5, 6, true),
        "{}",
        out.text
    );
    assert!(
        out.text.ends_with(
            "[lro_extract: showing 5 values; the output cap is 100 tokens. The filter was stopped at the record \
             on line 7: the records after it, if any, were not read. Pass a larger `limit` to see more, or narrow \
             the query (select(...), limit(n; ...), or fewer fields).]"
        ),
        "{}",
        out.text
    );
    // One value per record, under the default cap (the threshold): a few hundred records read.
    for filter in [
        "first(.id)",
        "limit(1; .id)",
        ".id",
        "{id}",
        "[.id, .title] | @tsv",
        "select(.id >= 0)",
    ] {
        let out = run(filter, None);
        assert!(out.truncated && out.total < 2_000, "{filter}: {}", out.total);
        assert!(
            out.text
                .contains(&format!("stopped at the record on line {}:", out.total + 1)),
            "{filter}: {}",
            &out.text[out.text.len() - 300..]
        );
    }
}
