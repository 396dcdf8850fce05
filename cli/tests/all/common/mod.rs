//! Helpers shared by the integration tests: one compiled component per test process.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, LazyLock, Mutex};

use lro_host::{Config, Detail, Event, Operation, Options, PassReason, Request, Runtime};
use serde_json::Value;

/// Where the compiled component is cached between test processes.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lro-cache")
}

pub static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    Runtime::new(Options {
        cache_dir: Some(cache_dir()),
        ..Options::default()
    })
    .expect("the component loads")
});

/// The shared runtime with an event sink; returns the events it collects.
pub fn with_events() -> (Runtime, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let options = Options {
        events: Some(Arc::new(move |e: &Event| sink.lock().unwrap().push(e.clone()))),
        ..RUNTIME.options().clone()
    };
    (RUNTIME.with_options(options), events)
}

/// The component's defaults, as every host starts from them.
pub fn defaults() -> Config {
    RUNTIME.defaults().expect("the component gives its defaults")
}

pub fn config(dir: &Path, threshold_tokens: u32) -> Config {
    Config {
        output_dir: dir.to_str().unwrap().to_owned(),
        threshold_tokens,
        ..defaults()
    }
}

pub fn sample(detail: lro_core::Detail, count: usize, hits: bool) -> Vec<Value> {
    lro_core::sample::records(detail, count, 42, hits)
}

pub fn request(operation: Operation, detail: Option<Detail>, records: &[Value]) -> Request {
    Request {
        operation,
        query: Some("caching".into()),
        detail,
        records: serde_json::to_string(records).unwrap(),
        text: None,
    }
}

pub fn core_detail(detail: Detail) -> lro_core::Detail {
    match detail {
        Detail::Light => lro_core::Detail::Light,
        Detail::Medium => lro_core::Detail::Medium,
        Detail::Full => lro_core::Detail::Full,
    }
}

pub const DETAILS: [Detail; 3] = [Detail::Light, Detail::Medium, Detail::Full];

/// Names in a directory, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Numbers compared as doubles: jq 1.6 prints `1.0` as `1`, jq 1.8 as `1.0`; both are the value 1.
pub fn norm(value: Value) -> Value {
    match value {
        Value::Number(n) => serde_json::json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.into_iter().map(norm).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, norm(v))).collect()),
        other => other,
    }
}

/// A pass reason by its WIT name.
pub fn reason_name(reason: PassReason) -> &'static str {
    match reason {
        PassReason::UnderThreshold => "under-threshold",
        PassReason::Disabled => "disabled",
        PassReason::ErrorResult => "error-result",
        PassReason::NonTextContent => "non-text-content",
        PassReason::Proxied => "proxied",
        PassReason::BudgetedText => "budgeted-text",
    }
}

/// The reference jq the comparisons are written against: the system jq 1.6 (tests/cases/jq's
/// documented differences are differences from it). Panics naming the version found otherwise,
/// so another jq fails loudly instead of silently changing what is compared.
pub fn assert_reference_jq() {
    static VERSION: LazyLock<String> = LazyLock::new(|| {
        Command::new("jq")
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_else(|e| format!("no jq ({e})"))
    });
    assert_eq!(
        VERSION.as_str(),
        "jq-1.6",
        "the comparisons are with the system jq 1.6 (`apt-get install jq` on Debian 12)"
    );
}

/// Runs a shell command that ends in the reference jq (a descriptor's recipe, as an agent would
/// run it) and returns its output values: lines as strings when `raw`, else the JSON values.
pub fn shell_jq(command: &str, raw: bool) -> Vec<Value> {
    assert_reference_jq();
    let out = Command::new("sh").args(["-c", command]).output().unwrap();
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    if raw {
        return text.lines().map(|l| Value::String(l.to_owned())).collect();
    }
    serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .map(|v| norm(v.unwrap()))
        .collect()
}

/// A temporary directory only this user can enter (0700), as an offload directory must be:
/// `tempfile::tempdir()` leaves it as the umask makes it (0755 here), which the hosts refuse.
pub fn tempdir() -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// The `lro_extract(key=value, ...)` calls a generic descriptor's guidance prints, one per line
/// (`  - NAME: lro_extract(...)`), as (name, arguments) with the values read as JSON.
pub fn printed_calls(guidance: &str) -> Vec<(String, Value)> {
    guidance
        .lines()
        .filter_map(|line| {
            let (name, call) = line.trim().strip_prefix("- ")?.split_once(": ")?;
            let inner = call.strip_prefix("lro_extract(")?.strip_suffix(')')?;
            Some((name.to_owned(), printed_arguments(inner)))
        })
        .collect()
}

/// `key=JSON, key=JSON` as a JSON object.
pub fn printed_arguments(mut rest: &str) -> Value {
    let mut arguments = serde_json::Map::new();
    while let Some((key, after)) = rest.split_once('=') {
        let mut values = serde_json::Deserializer::from_str(after).into_iter::<Value>();
        let value = values.next().expect("a JSON value").expect("a JSON value");
        arguments.insert(key.trim().to_owned(), value);
        rest = &after[values.byte_offset()..];
        match rest.strip_prefix(", ") {
            Some(next) => rest = next,
            None => break,
        }
    }
    Value::Object(arguments)
}
