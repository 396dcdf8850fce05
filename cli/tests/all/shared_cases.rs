//! The shared host cases in `tests/cases/host/`, one folder per case: `case.json` holds calls in
//! the JSON form of `docs/HOSTS.md`, run through the Rust host and compared with
//! `expected.json`. The Python and Node hosts compare with the same files.
//! `LRO_BLESS=1 cargo test -p lro-cli --test all shared_cases` rewrites them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::common::{RUNTIME, reason_name};
use lro_host::{
    Config, DescriptorStyle, Detail, Error, Event, ExtractRequest, ExtractResult, Operation, Options, Outcome,
    RecipeLibrary, Request, ToolCall, ToolOutcome, ToolSettings,
};
use serde_json::{Map, Value, json};

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases")
}

// ---- JSON form -> WIT values ---------------------------------------------------------------

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn string(value: &Value, name: &str) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("{name}: expected a string, got {value}"))
        .to_owned()
}

fn opt_u32(value: &Value) -> Option<u32> {
    value.as_u64().map(|n| u32::try_from(n).unwrap())
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()
        .map(|a| a.iter().map(|s| string(s, "list item")).collect())
}

/// The component's defaults with each layer's keys (the spec's names, as in every host's dicts)
/// over them, in `dir`.
fn config(dir: &str, layers: &[&Value]) -> Config {
    let mut config = RUNTIME.defaults().expect("the component gives its defaults");
    for layer in layers {
        for (key, v) in layer.as_object().into_iter().flatten() {
            match key.as_str() {
                "enabled" => config.enabled = v.as_bool().unwrap(),
                "threshold_tokens" => config.threshold_tokens = opt_u32(v).unwrap(),
                "ttl_seconds" => config.ttl_seconds = v.as_u64().unwrap(),
                "prefix" => config.prefix = string(v, key),
                "descriptor" => {
                    config.descriptor = match v.as_str().unwrap() {
                        "full" => DescriptorStyle::Full,
                        "bare" => DescriptorStyle::Bare,
                        other => panic!("descriptor {other}"),
                    }
                }
                "extract_tool" => config.extract_tool = v.as_bool().unwrap(),
                "schema_version" => config.schema_version = string(v, key),
                "recipes" => {
                    config.recipes = match v.as_str().unwrap() {
                        "v2" => RecipeLibrary::V2,
                        "v1" => RecipeLibrary::V1,
                        other => panic!("recipes {other}"),
                    }
                }
                "max_bytes" => config.max_bytes = v.as_u64().unwrap(),
                "max_files" => config.max_files = opt_u32(v).unwrap(),
                "tools" => {
                    config.tools = v
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|t| ToolSettings {
                            name: string(&t["name"], "tools.name"),
                            enabled: t["enabled"].as_bool(),
                            threshold_tokens: opt_u32(&t["threshold_tokens"]),
                            sections: strings(&t["sections"]),
                            inline_keys: strings(&t["inline_keys"]),
                        })
                        .collect()
                }
                other => panic!("a case config has the unknown key {other}"),
            }
        }
    }
    config.output_dir = dir.to_owned();
    config
}

fn detail(value: &Value) -> Option<Detail> {
    value.as_str().map(|d| match d {
        "light" => Detail::Light,
        "medium" => Detail::Medium,
        "full" => Detail::Full,
        other => panic!("detail {other}"),
    })
}

fn operation(value: &Value) -> Operation {
    match value.as_str().unwrap() {
        "recall" => Operation::Recall,
        "search" => Operation::Search,
        "list" => Operation::List,
        "inject" => Operation::Inject,
        other => panic!("operation {other}"),
    }
}

// ---- WIT values -> JSON form ---------------------------------------------------------------

fn error_json(error: &Error) -> Value {
    // Limits and host failures carry host-specific text; no case expects them.
    let message = error
        .component_message()
        .map_or_else(|| error.to_string(), str::to_owned);
    json!({"kind": error.kind().as_str(), "message": message})
}

fn event_json(event: &Event) -> Value {
    match event {
        Event::OffloadCreated(e) => json!({
            "kind": "offload-created", "path": e.path, "operation": e.operation, "count": e.count,
            "tokens": e.tokens, "bytes": e.bytes
        }),
        Event::OffloadWriteFailed(e) => json!({
            "kind": "offload-write-failed", "path": e.path, "operation": e.operation, "error": e.error,
            "total": e.total, "returned": e.returned
        }),
        Event::OffloadFileExpired(e) => json!({
            "kind": "offload-file-expired", "path": e.path, "created": e.created, "expired": e.expired
        }),
        Event::OffloadFileEvicted(e) => json!({
            "kind": "offload-file-evicted", "path": e.path, "bytes": e.bytes, "cap": e.cap
        }),
    }
}

fn outcome_json(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Inline(r) => json!({"kind": "inline", "text": r.text, "tokens": r.tokens}),
        Outcome::Offloaded(r) => json!({
            "kind": "offloaded", "descriptor": r.descriptor, "path": r.path, "count": r.count,
            "tokens": r.tokens, "bytes": r.bytes
        }),
        Outcome::Degraded(r) => json!({
            "kind": "degraded", "payload": r.payload, "warning": r.warning, "total": r.total,
            "returned": r.returned
        }),
    }
}

fn tool_outcome_json(outcome: ToolOutcome) -> Value {
    match outcome {
        ToolOutcome::Unchanged(r) => json!({"kind": "unchanged", "reason": reason_name(r.reason), "tokens": r.tokens}),
        ToolOutcome::Offloaded(r) => {
            json!({"kind": "offloaded", "result": r.result, "files": r.files, "tokens": r.tokens})
        }
        ToolOutcome::Degraded(r) => json!({"kind": "degraded", "result": r.result, "warning": r.warning}),
    }
}

fn extracted_json(r: ExtractResult) -> Value {
    json!({"values": r.values, "raw": r.raw, "total": r.total, "truncated": r.truncated, "text": r.text})
}

// ---- the runner ----------------------------------------------------------------------------

/// Replaces `{"$text": PATH}` with the file's text, `<DIR>` and `<FILE>` in strings.
fn substitute(value: &Value, dir: &str) -> Value {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key("$text") => {
            let rel = map["$text"].as_str().unwrap();
            let text = std::fs::read_to_string(cases_dir().join(rel)).unwrap_or_else(|e| panic!("$text {rel}: {e}"));
            substitute(&Value::String(text), dir)
        }
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), substitute(v, dir))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, dir)).collect()),
        Value::String(s) => {
            let mut s = s.replace("<DIR>", dir);
            if s.contains("<FILE>") {
                s = s.replace("<FILE>", &only_jsonl(dir));
            }
            Value::String(s)
        }
        other => other.clone(),
    }
}

fn only_jsonl(dir: &str) -> String {
    let found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "<FILE> needs exactly one *.jsonl file in {dir}, found {found:?}"
    );
    format!("{dir}/{}", found[0])
}

/// `ROOT/lro-case-HEX`, exactly 72 characters (docs/HOSTS.md).
fn case_dir() -> String {
    let root = std::env::temp_dir().canonicalize().unwrap();
    let root = root.to_str().unwrap();
    assert!(
        root.len() <= 50,
        "the temporary directory {root} is longer than 50 characters"
    );
    let hex_len = 72 - root.len() - "/lro-case-".len();
    let mut hex = String::new();
    while hex.len() < hex_len {
        hex.push_str(&format!("{:016x}", rand_u64()));
    }
    hex.truncate(hex_len);
    format!("{root}/lro-case-{hex}")
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

fn call(name: &str, config: &Config, args: &Value, runtime: &lro_host::Runtime) -> Result<Value, Error> {
    match name {
        "offload" => {
            let r = &args["request"];
            let request = Request {
                operation: operation(&r["operation"]),
                query: text_of(&r["query"]),
                detail: detail(&r["detail"]),
                records: text_of(&r["records"]).expect("records"),
                text: text_of(&r["text"]),
            };
            runtime.offload(config, &request).map(outcome_json)
        }
        "intercept" => {
            let c = &args["call"];
            let call = ToolCall {
                tool: string(&c["tool"], "tool"),
                arguments: text_of(&c["arguments"]).unwrap_or_else(|| "{}".into()),
                result: text_of(&c["result"]).expect("result"),
                meta: text_of(&c["meta"]),
            };
            runtime.intercept(config, &call).map(tool_outcome_json)
        }
        "recipes" => runtime
            .recipes(config, detail(&args["detail"]).expect("detail"), args["file"].as_str())
            .map(|list| {
                Value::Array(
                    list.into_iter()
                        .map(|r| {
                            json!({
                                "number": r.number, "description": r.description, "program": r.program,
                                "slurp": r.slurp, "raw": r.raw,
                                "params": r.params.iter().map(|p| json!({"name": p.name, "default": p.default})).collect::<Vec<_>>(),
                                "command": r.command
                            })
                        })
                        .collect(),
                )
            }),
        "estimate" => runtime.estimate(args["text"].as_str().unwrap()).map(|n| json!(n)),
        "extract" => {
            let r = &args["request"];
            let request = ExtractRequest {
                path: string(&r["path"], "path"),
                recipe: opt_u32(&r["recipe"]),
                query: r["query"].as_str().map(str::to_owned),
                params: text_of(&r["params"]),
                slurp: r["slurp"].as_bool().unwrap_or(false),
                limit: opt_u32(&r["limit"]),
            };
            runtime.extract(config, &request).map(extracted_json)
        }
        "query" => runtime
            .query(
                args["filter"].as_str().unwrap(),
                &text_of(&args["input"]).expect("input"),
                args["slurp"].as_bool().unwrap_or(false),
                args["raw"].as_bool().unwrap_or(false),
                opt_u32(&args["limit"]),
            )
            .map(extracted_json),
        "tool_definition" => runtime.tool_definition().map(Value::String),
        "call_tool" => runtime
            .call_tool(config, &text_of(&args["arguments"]).expect("arguments"))
            .map(extracted_json),
        "rewrite_tools" => runtime
            .rewrite_tools(config, &text_of(&args["tools"]).expect("tools"))
            .map(Value::String),
        "sweep" => runtime.sweep(config, args["now"].as_u64().unwrap()).map(|r| {
            json!({
                "deleted": r.deleted, "kept": r.kept,
                "failed": r.failed.iter().map(|f| json!({"path": f.path, "reason": f.reason})).collect::<Vec<_>>()
            })
        }),
        other => panic!("unknown call {other}"),
    }
}

/// Files over this many bytes are kept in expected.json as their size and SHA-256 (the corpus's
/// files run to megabytes); every host computes the same.
const DIGEST_ABOVE: usize = 65_536;

/// A large file's normalised content as `{"bytes", "sha256"}`.
fn digest_large(content: Value) -> Value {
    use sha2::{Digest, Sha256};
    match content {
        Value::String(s) if s.len() > DIGEST_ABOVE => {
            let hash: String = Sha256::digest(s.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            json!({"bytes": s.len(), "sha256": hash})
        }
        other => other,
    }
}

fn snapshot(dir: &str) -> Vec<(String, Value)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let kind = e.file_type().unwrap();
            let content = if kind.is_file() {
                json!(std::fs::read_to_string(e.path()).unwrap())
            } else {
                Value::Null
            };
            (name, content)
        })
        .collect()
}

fn normalise_str(s: &str, dir: &str) -> String {
    let s = s.replace(dir, "<DIR>");
    let s = replace_ulids(&s);
    replace_timestamps(&s)
}

/// `-` + 26 ULID characters + `.jsonl` → `-<ULID>.jsonl`.
fn replace_ulids(s: &str) -> String {
    const ALPHABET: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(".jsonl") {
        let (head, tail) = rest.split_at(i);
        let b = head.as_bytes();
        let is_ulid = head.len() >= 27
            && b[head.len() - 27] == b'-'
            && head[head.len() - 26..].chars().all(|c| ALPHABET.contains(c));
        if is_ulid {
            out.push_str(&head[..head.len() - 26]);
            out.push_str("<ULID>");
        } else {
            out.push_str(head);
        }
        out.push_str(".jsonl");
        rest = &tail[".jsonl".len()..];
    }
    out.push_str(rest);
    out
}

/// `"timestamp":"…"` → `"timestamp":"<TIME>"`, and the same for `"expires_at"`.
fn replace_timestamps(s: &str) -> String {
    ["\"timestamp\":\"", "\"expires_at\":\""]
        .iter()
        .fold(s.to_owned(), |s, key| replace_value(&s, key))
}

fn replace_value(s: &str, key: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(key) {
        out.push_str(&rest[..i + key.len()]);
        rest = &rest[i + key.len()..];
        match rest.find('"') {
            Some(end) => {
                out.push_str("<TIME>");
                rest = &rest[end..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

fn normalise(value: Value, dir: &str) -> Value {
    match value {
        Value::String(s) => Value::String(normalise_str(&s, dir)),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| normalise(v, dir)).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (normalise_str(&k, dir), normalise(v, dir)))
                .collect(),
        ),
        other => other,
    }
}

fn run_case(case: &Value) -> Value {
    let dir = case_dir();
    let setup = &case["setup"];
    if !setup["missing"].as_bool().unwrap_or(false) {
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    if let Some(files) = setup["files"].as_object() {
        for (name, content) in files {
            let text = substitute(content, &dir);
            std::fs::write(format!("{dir}/{name}"), text.as_str().unwrap()).unwrap();
        }
    }
    if let Some(links) = setup["symlinks"].as_object() {
        for (name, target) in links {
            let target = substitute(target, &dir);
            std::os::unix::fs::symlink(target.as_str().unwrap(), format!("{dir}/{name}")).unwrap();
        }
    }
    if let Some(mode) = setup["mode"].as_str() {
        let mode = u32::from_str_radix(mode, 8).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let runtime = RUNTIME.with_options(Options {
        events: Some(Arc::new(move |e: &Event| sink.lock().unwrap().push(event_json(e)))),
        ..RUNTIME.options().clone()
    });
    let mut steps = Vec::new();
    for step in case["steps"].as_array().unwrap() {
        let name = step["call"].as_str().unwrap();
        let config = config(&dir, &[&case["config"], &step["config"]]);
        let args = substitute(&step["args"], &dir);
        let outcome = call(name, &config, &args, &runtime);
        let mut entry = Map::new();
        entry.insert("call".into(), json!(name));
        match outcome {
            Ok(v) => entry.insert("result".into(), v),
            Err(e) => entry.insert("error".into(), error_json(&e)),
        };
        entry.insert(
            "events".into(),
            Value::Array(std::mem::take(&mut *events.lock().unwrap())),
        );
        steps.push(Value::Object(entry));
    }

    let mut files: Vec<(String, Value)> = snapshot(&dir)
        .into_iter()
        .map(|(n, c)| (normalise_str(&n, &dir), digest_large(normalise(c, &dir))))
        .collect();
    files.sort_by(|a, b| (&a.0, a.1.to_string()).cmp(&(&b.0, b.1.to_string())));
    if Path::new(&dir).exists() {
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        std::fs::remove_dir_all(&dir).unwrap();
    }
    let files: Vec<Value> = files
        .into_iter()
        .map(|(name, content)| json!({"name": name, "content": content}))
        .collect();
    normalise(json!({"steps": steps, "files": files}), &dir)
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap();
    text.push('\n');
    text
}

#[test]
fn shared_host_cases_match_their_expected_files() {
    let dir = cases_dir().join("host");
    // Every folder is a case, except the inputs the cases share.
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n != "inputs"))
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 20,
        "only {} host cases in {}",
        cases.len(),
        dir.display()
    );
    let bless = std::env::var_os("LRO_BLESS").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for folder in &cases {
        let name = folder.file_name().unwrap().to_str().unwrap();
        let path = folder.join("case.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let case: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(case["about"].is_string(), "{name}: no `about`");
        let got = run_case(&case);
        let expected_path = folder.join("expected.json");
        if bless {
            std::fs::write(&expected_path, pretty(&got)).unwrap();
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Err(_) => failures.push(format!("{name}: no {name}/expected.json (bless with LRO_BLESS=1)")),
            Ok(text) => {
                let want: Value = serde_json::from_str(&text).unwrap();
                if want != got {
                    failures.push(format!(
                        "{name}: differs from {name}/expected.json\n{}",
                        diff(&want, &got)
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The first lines that differ between the pretty-printed values.
fn diff(want: &Value, got: &Value) -> String {
    let (want, got) = (pretty(want), pretty(got));
    want.lines()
        .zip(got.lines())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .take(5)
        .map(|(i, (a, b))| format!("  line {}: expected {a}\n  line {}:      got {b}", i + 1, i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn normalisation_replaces_only_ulids_before_jsonl_and_header_timestamps() {
    let dir = "/tmp/lro-case-abc";
    assert_eq!(
        normalise_str(
            "/tmp/lro-case-abc/atlatl-recall-01JDEF7X2K0000000000000000.jsonl and -01JDEF7X2K0000000000000000.json",
            dir
        ),
        "<DIR>/atlatl-recall-<ULID>.jsonl and -01JDEF7X2K0000000000000000.json"
    );
    assert_eq!(
        normalise_str(
            r#"{"timestamp":"2026-11-22T00:32:53.117Z","expires_at":"2026-11-22T01:32:53.117Z","created":"2025-01-01T00:35:31Z"}"#,
            dir
        ),
        r#"{"timestamp":"<TIME>","expires_at":"<TIME>","created":"2025-01-01T00:35:31Z"}"#
    );
}
