//! Helpers shared by the integration tests: one compiled component per test process.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use lro_host::{Config, Detail, Event, Operation, Options, PassReason, Request, Runtime, Settings};
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

pub fn config(dir: &Path, threshold: u32) -> Config {
    let mut config = Settings::default()
        .with_output_dir(dir.to_str().unwrap())
        .config()
        .unwrap();
    config.threshold = threshold;
    config
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
