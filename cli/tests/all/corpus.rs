//! The corpus of real results (`tests/corpus/`): each case's result through the MCP-level
//! interceptor as `lro proxy` runs it (threshold from its call.json, `lro_extract` offered), then
//! checked as a user would: the descriptor's counts are the true counts, every number of the
//! original is in the files or the descriptor spelled as the server spelled it, and a scripted
//! agent answers the case's questions exactly, using only what the descriptor says (sections,
//! shapes, schemas, inline values) and `lro_extract` calls. The answers were computed from the
//! original by `tests/corpus/questions.py`, which shares nothing with lro.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::common::*;
use lro_host::{Config, ToolCall, ToolOutcome};
use serde_json::{Value, json};

fn corpus() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("result.json").is_file())
        .collect();
    cases.sort();
    cases
}

/// The number tokens of JSON text, outside strings, as spelled.
fn numbers(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                out.push(&text[start..i]);
            }
            _ => i += 1,
        }
    }
    out
}

/// The JSON text of a result's data as the server sent it: its text content when that is JSON,
/// else its structured content; none for text data.
fn data_text(result: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow, default)]
        content: Vec<HashMap<String, &'a serde_json::value::RawValue>>,
        #[serde(borrow, rename = "structuredContent")]
        structured: Option<&'a serde_json::value::RawValue>,
    }
    let raw: Raw = serde_json::from_str(result).unwrap();
    let text: Option<String> = raw
        .content
        .iter()
        .find_map(|c| c.get("text").map(|t| serde_json::from_str(t.get()).unwrap()));
    match text {
        Some(t) if serde_json::from_str::<serde::de::IgnoredAny>(&t).is_ok() => Some(t),
        _ => raw.structured.map(|s| s.get().to_owned()),
    }
}

/// The jq path of a dotted field path: `_source.level` → `._source.level`, `@timestamp` →
/// `.["@timestamp"]`.
fn jq(path: &str) -> String {
    let mut out = String::new();
    for m in path.split('.') {
        let plain = m.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        match (plain, out.is_empty()) {
            (true, _) => out.push_str(&format!(".{m}")),
            (false, true) => out.push_str(&format!(".[{}]", json!(m))),
            (false, false) => out.push_str(&format!("[{}]", json!(m))),
        }
    }
    out
}

/// The scripted agent: reads the descriptor, chooses a section and a field path from what it
/// says, and asks `lro_extract`.
struct Agent<'a> {
    descriptor: &'a Value,
    config: &'a Config,
    case: &'a str,
}

impl Agent<'_> {
    fn call(&self, file: &str, query: &str, slurp: bool) -> Vec<Value> {
        let arguments = json!({"file_path": file, "query": query, "slurp": slurp, "limit": 1_000_000});
        let out = RUNTIME
            .call_tool(self.config, &arguments.to_string())
            .unwrap_or_else(|e| panic!("{}: lro_extract {arguments}: {e:?}", self.case));
        assert!(!out.truncated, "{}: {query} was cut", self.case);
        out.values.iter().map(|v| serde_json::from_str(v).unwrap()).collect()
    }

    /// Sections that hold records (not `other`), in the order of the original.
    fn sections(&self) -> Vec<(&str, &Value)> {
        self.descriptor["summary"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, s)| s["shape"] != "other")
            .map(|(k, s)| (k.as_str(), s))
            .collect()
    }

    /// The section a field belongs to (the first whose schema has the field's first member),
    /// its file, and the field's jq path in its lines (under `.value` for entries).
    fn locate(&self, field: Option<&str>) -> (String, String, Option<String>) {
        let sections = self.sections();
        let schema_has = |key: &str, member: &str| {
            let schema = &self.descriptor["schemas"][key]["line_schema"]["properties"];
            let entries = self.descriptor["summary"][key]["shape"] == "entries";
            if entries {
                !schema["value"]["properties"][member].is_null()
            } else {
                !schema[member].is_null()
            }
        };
        let (key, summary) = match field {
            Some(f) => {
                let first = f.split('.').next().unwrap();
                *sections.iter().find(|(k, _)| schema_has(k, first)).unwrap_or_else(|| {
                    panic!(
                        "{}: no section's schema has `{first}`: {}",
                        self.case, self.descriptor["schemas"]
                    )
                })
            }
            None => sections[0],
        };
        let file = self.descriptor["files"][key].as_str().unwrap().to_owned();
        let path = field.map(|f| {
            let path = jq(f);
            if summary["shape"] == "entries" {
                format!(".value{path}")
            } else {
                path
            }
        });
        (key.to_owned(), file, path)
    }

    /// Whether the schema says a field holds strings (CSV cells): sums then read numbers.
    fn is_text(&self, key: &str, field: &str) -> bool {
        let mut schema = &self.descriptor["schemas"][key]["line_schema"];
        for member in field.split('.') {
            schema = &schema["properties"][member];
        }
        schema["type"] == "string"
    }

    fn answer(&self, ask: &Value) -> Value {
        let field = ask["field"].as_str();
        match ask["op"].as_str().unwrap() {
            "count" => {
                let (key, file, _) = self.locate(None);
                let counted = self.call(&file, "length", true);
                // The summary's count is the true count; the agent reads it there.
                assert_eq!(
                    counted[0],
                    self.descriptor["summary"][key.as_str()]["count"],
                    "{}",
                    self.case
                );
                self.descriptor["summary"][key.as_str()]["count"].clone()
            }
            "count_where" => {
                let (_, file, path) = self.locate(field);
                let query = format!("map(select({} == $v)) | length", path.unwrap());
                self.call_with(&file, &query, json!({"v": ask["equals"]}))
            }
            "distinct" => {
                let (_, file, path) = self.locate(field);
                let p = path.unwrap();
                self.call(
                    &file,
                    &format!("map(select({p} != null) | {p}) | unique | length"),
                    true,
                )[0]
                .clone()
            }
            "sum" | "max" => {
                let (key, file, path) = self.locate(field);
                let p = path.unwrap();
                let read = if self.is_text(&key, field.unwrap()) {
                    " | tonumber"
                } else {
                    ""
                };
                let op = if ask["op"] == "sum" { "add" } else { "max" };
                let value = self.call(&file, &format!("map(select({p} != null) | {p}{read}) | {op}"), true)[0].clone();
                match ask["round"].as_u64() {
                    Some(places) => {
                        let scale = 10f64.powi(places as i32);
                        json!((value.as_f64().unwrap() * scale).round() / scale)
                    }
                    None => value,
                }
            }
            "lookup" => {
                let (_, file, path) = self.locate(ask["where"]["field"].as_str());
                let (_, _, wanted) = self.locate(field);
                let query = format!("map(select({} == $v) | {}) | first", path.unwrap(), wanted.unwrap());
                self.call_with(&file, &query, json!({"v": ask["where"]["equals"]}))
            }
            "sibling" => self.sibling(ask["path"].as_str().unwrap()),
            op => panic!("{}: unknown op {op}", self.case),
        }
    }

    fn call_with(&self, file: &str, query: &str, params: Value) -> Value {
        let arguments = json!({"file_path": file, "query": query, "slurp": true, "params": params});
        let out = RUNTIME
            .call_tool(self.config, &arguments.to_string())
            .unwrap_or_else(|e| panic!("{}: lro_extract {arguments}: {e:?}", self.case));
        serde_json::from_str(&out.values[0]).unwrap()
    }

    /// A small value beside the records: inline in the descriptor under its path (or a prefix
    /// of it), else a line of the `other` section.
    fn sibling(&self, path: &str) -> Value {
        let navigate = |value: &Value, rest: &str| {
            rest.split('.')
                .filter(|m| !m.is_empty())
                .fold(value.clone(), |v, m| v[m].clone())
        };
        for (key, value) in self.descriptor.as_object().unwrap() {
            if path == key {
                return value.clone();
            }
            if let Some(rest) = path.strip_prefix(&format!("{key}.")) {
                return navigate(value, rest);
            }
        }
        if let Some(file) = self.descriptor["files"]["other"].as_str() {
            for line in self.call(file, ".", false) {
                let key = line["key"].as_str().unwrap();
                if path == key {
                    return line["value"].clone();
                }
                if let Some(rest) = path.strip_prefix(&format!("{key}.")) {
                    return navigate(&line["value"], rest);
                }
            }
        }
        panic!(
            "{}: `{path}` is neither inline nor in `other`: {}",
            self.case, self.descriptor
        )
    }
}

fn same(answer: &Value, expected: &Value) -> bool {
    match (answer, expected) {
        (Value::Number(a), Value::Number(b)) => (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-6,
        _ => answer == expected,
    }
}

#[test]
fn every_corpus_case_is_described_truly_and_its_questions_answered_from_the_descriptor() {
    let cases = corpus();
    assert!(cases.len() >= 20, "{} corpus cases", cases.len());
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for dir in cases {
        let case = dir.file_name().unwrap().to_string_lossy().into_owned();
        let call: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("call.json")).unwrap()).unwrap();
        let result = std::fs::read_to_string(dir.join("result.json")).unwrap();
        let questions: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("questions.json")).unwrap()).unwrap();
        let out_dir = tempdir().unwrap();
        let mut config = config(out_dir.path(), call["threshold"].as_u64().unwrap() as u32);
        config.extract_tool = true;
        let tool_call = ToolCall {
            tool: call["tool"].as_str().unwrap().to_owned(),
            arguments: call["arguments"].to_string(),
            result: result.clone(),
            meta: None,
        };
        let offloaded = match RUNTIME.intercept(&config, &tool_call).unwrap() {
            ToolOutcome::Offloaded(o) => o,
            ToolOutcome::Unchanged(u) => {
                // Under the threshold: forwarded as sent, so the client has the original.
                assert!(u.tokens <= config.threshold_tokens, "{case}: {u:?}");
                report.push(format!("{case}: inline ({} tokens)", u.tokens));
                continue;
            }
            other => panic!("{case}: {other:?}"),
        };
        let forwarded: Value = serde_json::from_str(&offloaded.result).unwrap();
        let descriptor: Value = serde_json::from_str(forwarded["content"][0]["text"].as_str().unwrap()).unwrap();
        let tokens = descriptor["tokens"]["descriptor"].as_u64().unwrap();
        assert!(tokens <= 800, "{case}: a descriptor of {tokens} tokens");

        // Every number of the original, spelled as sent, is in the files or the descriptor.
        if let Some(data) = data_text(&result) {
            let mut held: HashMap<String, usize> = HashMap::new();
            let mut texts: Vec<String> = offloaded
                .files
                .iter()
                .map(|f| std::fs::read_to_string(f).unwrap())
                .collect();
            texts.push(descriptor.to_string());
            for text in &texts {
                for line in text.lines() {
                    for n in numbers(line) {
                        *held.entry(n.to_owned()).or_default() += 1;
                    }
                }
            }
            for n in numbers(&data) {
                let left = held.get_mut(n).filter(|c| **c > 0);
                assert!(left.is_some(), "{case}: the number {n} is not written as sent");
                *left.unwrap() -= 1;
            }
        }

        // Every recipe runs as printed: the shell command with the system jq, and the guidance's
        // `lro_extract` call; each finds something.
        for (name, command) in descriptor["jq_recipes"].as_object().unwrap() {
            let values = shell_jq(command.as_str().unwrap(), false);
            assert!(!values.is_empty(), "{case}: {name} found nothing: {command}");
        }
        for (name, arguments) in printed_calls(descriptor["guidance"].as_str().unwrap()) {
            let out = RUNTIME
                .call_tool(&config, &arguments.to_string())
                .unwrap_or_else(|e| panic!("{case}: {name} as printed: {e:?}"));
            assert!(!out.values.is_empty(), "{case}: {name} as printed found nothing");
        }

        let agent = Agent {
            descriptor: &descriptor,
            config: &config,
            case: &case,
        };
        let mut right = 0;
        for q in &questions {
            let answer = agent.answer(&q["ask"]);
            if same(&answer, &q["answer"]) {
                right += 1;
            } else {
                failures.push(format!(
                    "{case} {}: answered {answer}, expected {}",
                    q["id"], q["answer"]
                ));
            }
        }
        let counts: Vec<String> = descriptor["summary"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, s)| format!("{k} {} ({})", s["count"], s["shape"].as_str().unwrap_or("?")))
            .collect();
        report.push(format!(
            "{case}: {}; descriptor {tokens} tokens; {right}/{} answered",
            counts.join(", "),
            questions.len()
        ));
    }
    eprintln!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
