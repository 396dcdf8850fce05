//! The record-level interceptor: estimate, decide, write JSONL, describe.
//!
//! File format (see `docs/FORMAT.md`): a header line, then one memory object per line, in the
//! order of the result set. Search hits `{"memory": {...}, "score": x}` are written as the memory
//! alone; the score never reaches the file.
//!
//! This file decides and falls back; `records` reads the result set, `write` writes files
//! (for the MCP-level interceptor too), `descriptor` describes what was written.

mod descriptor;
mod records;
mod write;

use serde_json::json;
use ulid::Ulid;

use crate::estimate::Counts;
use crate::time::format_rfc3339_ms;
use crate::{Config, Detail, Error, Event, Operation, Outcome, json_string};
use descriptor::descriptor;
pub use descriptor::guidance;
use records::{Record, parse_records};
pub(crate) use write::{Planned, write_files};

/// A result set to intercept (the WIT `request` record).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The operation.
    pub operation: Operation,
    /// Its query, if any.
    pub query: Option<&'a str>,
    /// The detail level the call asked for. Informative: the file's level is the one its
    /// records show (see `offload`).
    pub detail: Option<Detail>,
    /// JSON array of memories or search hits.
    pub records: &'a str,
    /// For inject: the budgeted text.
    pub text: Option<&'a str>,
}

/// Intercepts one result set. Events go to `emit` before this returns.
pub fn offload(config: &Config, request: &Request<'_>, emit: &mut dyn FnMut(Event)) -> Result<Outcome, Error> {
    offload_estimated(config, request, None, emit)
}

/// [`offload`], with the estimate given by the caller instead of made from the records: the
/// MCP-level interceptor decides on what the model would read, and the descriptor must carry
/// that same number.
pub(crate) fn offload_estimated(
    config: &Config,
    request: &Request<'_>,
    estimate: Option<u32>,
    emit: &mut dyn FnMut(Event),
) -> Result<Outcome, Error> {
    config.validate()?;
    match (request.operation, request.text) {
        (Operation::Inject, None) => {
            return Err(Error::InvalidInput(
                "inject needs `text`, the budgeted context returned when the result set stays inline".into(),
            ));
        }
        (op, Some(_)) if op != Operation::Inject => {
            return Err(Error::InvalidInput(format!(
                "`text` is only for inject; {} takes the records alone",
                op.as_str()
            )));
        }
        _ => {}
    }
    let records = parse_records(request.records)?;

    // The estimate covers the JSON text the result set would be returned as inline (unless the
    // MCP-level caller passed its own, of what the model reads).
    let tokens = estimate.unwrap_or_else(|| {
        let brackets_and_commas = Counts {
            other: 2 + records.len().saturating_sub(1) as u64,
            cjk: 0,
        };
        records
            .iter()
            .fold(brackets_and_commas, |counts, r| counts + r.counts)
            .tokens()
    });

    if !config.enabled || tokens <= config.threshold_tokens {
        let text = match request.text {
            Some(text) => text.to_owned(),
            None => join_array(records.iter().map(|r| r.inline.as_ref())),
        };
        return Ok(Outcome::Inline { text, tokens });
    }

    // The header, schema and recipes describe what is in the file: the richest level the
    // records show, whatever level the call asked for (a server may send more or less).
    let detail = match records.iter().map(|r| r.level).max().unwrap_or(0) {
        0 => Detail::Light,
        1 => Detail::Medium,
        _ => Detail::Full,
    };
    let ulid = Ulid::generate();
    let operation = request.operation.as_str();
    let name = format!("{}-{operation}-{ulid}.jsonl", config.prefix);
    let path = format!("{}/{name}", config.dir_base());
    let created = ulid.timestamp_ms();
    let header = header_line(config, request, detail, records.len(), tokens, created);
    let file = Planned {
        name: &name,
        header: &header,
        lines: records.iter().map(Record::line),
    };
    match write_files(config, &[file], created, emit) {
        Ok(sizes) => {
            let bytes = sizes[0];
            let count = len_u32(records.len());
            let descriptor = descriptor(config, request.operation, detail, &path, &records, tokens);
            emit(Event::OffloadCreated {
                path: path.clone(),
                operation: operation.to_owned(),
                count,
                tokens,
                bytes,
            });
            Ok(Outcome::Offloaded {
                descriptor,
                path,
                count,
                tokens,
                bytes,
            })
        }
        Err((_, err)) => {
            let error = format!("writing {path}: {err}");
            let (payload, warning, returned) = degrade(config, &records, &error);
            let total = len_u32(records.len());
            emit(Event::OffloadWriteFailed {
                path,
                operation: operation.to_owned(),
                error,
                total,
                returned,
            });
            Ok(Outcome::Degraded {
                payload,
                warning,
                total,
                returned,
            })
        }
    }
}

/// A count as the WIT types carry it, saturating.
fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Texts of JSON values as the text of one array.
fn join_array<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push(']');
    out
}

/// The file's first line: what it holds, when it was made and until when it is kept, at which
/// detail level.
fn header_line(
    config: &Config,
    request: &Request<'_>,
    detail: Detail,
    count: usize,
    tokens: u32,
    now_ms: u64,
) -> String {
    // Field order follows the spec's OffloadHeader struct.
    json!({
        "type": "lro_header",
        "operation": request.operation.as_str(),
        "query": request.query,
        "count": count,
        "schema_version": config.schema_version,
        "timestamp": format_rfc3339_ms(now_ms),
        "expires_at": format_rfc3339_ms(crate::custodian::promised_expiry(config, now_ms)),
        "estimated_tokens": tokens,
        "detail": detail.as_str(),
    })
    .to_string()
}

/// The truncated inline fallback: the leading records whose whole payload fits the threshold.
fn degrade(config: &Config, records: &[Record], error: &str) -> (String, String, u32) {
    let total = records.len();
    let warning_for = |returned: usize| {
        format!(
            "LRO could not write the offload file ({error}). Showing {returned} of {total} records, \
             truncated to fit {} tokens; the rest is not available. Narrow the request to see them.",
            config.threshold_tokens
        )
    };
    let payload_for = |returned: usize, body: &str| {
        format!(
            "{{\"truncated\":true,\"total_count\":{total},\"returned_count\":{returned},\"lro_warning\":{},\"records\":{body}}}",
            json_string(&warning_for(returned))
        )
    };
    // `total` has at least as many digits as any count returned, so the overhead measured with
    // it is an upper bound for the real payload's.
    let overhead = Counts::of(&payload_for(total, "[]"));
    let mut counts = overhead;
    let mut returned = 0;
    for (i, record) in records.iter().enumerate() {
        let comma = Counts {
            other: u64::from(i > 0),
            cjk: 0,
        };
        let next = counts + record.counts + comma;
        if next.tokens() > config.threshold_tokens {
            break;
        }
        counts = next;
        returned += 1;
    }
    let body = join_array(records[..returned].iter().map(|r| r.inline.as_ref()));
    (payload_for(returned, &body), warning_for(returned), len_u32(returned))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::estimate;
    use serde_json::Value;
    use std::fs;

    /// A config writing into `dir`, offloading above `threshold` tokens.
    pub(super) fn config(dir: &std::path::Path, threshold: u32) -> Config {
        Config {
            output_dir: dir.to_str().unwrap().to_owned(),
            threshold_tokens: threshold,
            ..Config::default()
        }
    }

    fn memory(i: usize, ns: &str) -> Value {
        json!({"id": format!("m{i}"), "memory_type": "semantic", "namespace": ns, "title": format!("title {i}"), "tags": ["a"], "created": "2026-01-01T00:00:00Z", "status": "active"})
    }

    fn req(records: &str) -> Request<'_> {
        Request {
            operation: Operation::Recall,
            query: Some("q"),
            detail: None,
            records,
            text: None,
        }
    }

    fn run(config: &Config, request: &Request<'_>) -> (Outcome, Vec<Event>) {
        let mut events = Vec::new();
        let outcome = offload(config, request, &mut |e| events.push(e)).unwrap();
        (outcome, events)
    }

    #[test]
    fn threshold_is_inclusive() {
        let dir = tempfile::tempdir().unwrap();
        let records = serde_json::to_string(&(0..20).map(|i| memory(i, "_semantic/x")).collect::<Vec<_>>()).unwrap();
        let tokens = estimate(&records);
        let (at, _) = run(&config(dir.path(), tokens), &req(&records));
        assert!(matches!(at, Outcome::Inline { tokens: t, .. } if t == tokens));
        let (over, events) = run(&config(dir.path(), tokens - 1), &req(&records));
        assert!(matches!(over, Outcome::Offloaded { .. }), "{over:?}");
        assert!(matches!(events[..], [Event::OffloadCreated { .. }]));
    }

    #[test]
    fn inline_text_is_compact_and_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let (out, events) = run(
            &config(dir.path(), 1600),
            &req("[ {\"b\": 1, \"a\": [1, 2]} , {\"z\":null} ]"),
        );
        assert_eq!(
            out,
            Outcome::Inline {
                text: r#"[{"b":1,"a":[1,2]},{"z":null}]"#.into(),
                tokens: 8
            }
        );
        assert!(events.is_empty());
    }

    #[test]
    fn hits_lose_their_score_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let hits: Vec<Value> = (0..30)
            .map(|i| json!({"memory": memory(i, "_episodic/y"), "score": 1.0 - i as f64 / 100.0}))
            .collect();
        let records = serde_json::to_string(&hits).unwrap();
        let (out, _) = run(&config(dir.path(), 100), &req(&records));
        let Outcome::Offloaded {
            descriptor,
            path,
            count,
            ..
        } = out
        else {
            panic!("{out:?}")
        };
        assert_eq!(count, 30);
        let text = fs::read_to_string(&path).unwrap();
        assert!(!text.contains("score"));
        // The header records the writer's promise: created + ttl_seconds (3600 by default).
        let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let created = crate::time::parse_rfc3339_ms(header["timestamp"].as_str().unwrap()).unwrap();
        assert_eq!(header["expires_at"], format_rfc3339_ms(created + 3_600_000));
        assert!(text.starts_with("{\"type\":\"lro_header\""));
        let second: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        assert_eq!(second, memory(0, "_episodic/y"));
        let d: Value = serde_json::from_str(&descriptor).unwrap();
        assert_eq!(d["summary"]["score_range"], json!([0.71, 1.0]));
    }

    #[test]
    fn inject_below_threshold_returns_the_text_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let request = Request {
            operation: Operation::Inject,
            query: None,
            detail: None,
            records: "[{\"id\":\"x\"}]",
            text: Some("## Context\n- x"),
        };
        let (out, _) = run(&config(dir.path(), 1600), &request);
        assert_eq!(
            out,
            Outcome::Inline {
                text: "## Context\n- x".into(),
                tokens: 3
            }
        );
    }

    #[test]
    fn text_must_match_the_operation() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), 10);
        let inject = Request {
            operation: Operation::Inject,
            query: None,
            detail: None,
            records: "[]",
            text: None,
        };
        assert!(
            matches!(offload(&cfg, &inject, &mut |_| {}), Err(Error::InvalidInput(m)) if m.contains("inject needs `text`"))
        );
        let recall = Request {
            text: Some("x"),
            ..req("[]")
        };
        assert!(
            matches!(offload(&cfg, &recall, &mut |_| {}), Err(Error::InvalidInput(m)) if m.contains("only for inject"))
        );
    }

    #[test]
    fn bad_records_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), 10);
        let err = |text: &str| offload(&cfg, &req(text), &mut |_| {}).unwrap_err().to_string();
        assert!(err("[1,").contains("not valid JSON"), "{}", err("[1,"));
        assert!(err("{\"a\":1}").contains("must be a JSON array"));
        assert!(err("[{}, 3]").contains("records[1] is a number"));
        assert!(err("[{\"memory\":{}, \"score\":\"high\"}]").contains("records[0].score is a string"));
    }

    #[test]
    fn degraded_payload_fits_the_threshold() {
        let records = serde_json::to_string(&(0..50).map(|i| memory(i, "n")).collect::<Vec<_>>()).unwrap();
        let parsed = parse_records(&records).unwrap();
        // Below the size of the wrapper and its warning nothing fits: no records, still a warning.
        let tiny = Config {
            threshold_tokens: 50,
            ..Config::default()
        };
        assert_eq!(degrade(&tiny, &parsed, "writing /x: Permission denied").2, 0);
        for threshold in [200, 400, 1000] {
            let cfg = Config {
                threshold_tokens: threshold,
                ..Config::default()
            };
            let (payload, warning, returned) = degrade(&cfg, &parsed, "writing /x: Permission denied");
            assert!(estimate(&payload) <= threshold, "{threshold}: {}", estimate(&payload));
            let v: Value = serde_json::from_str(&payload).unwrap();
            assert_eq!(v["returned_count"], returned);
            assert_eq!(v["records"].as_array().unwrap().len() as u32, returned);
            assert!(warning.contains(&format!("Showing {returned} of 50 records")));
            // One more record would not have fitted.
            if (returned as usize) < parsed.len() {
                let more = join_array(parsed[..returned as usize + 1].iter().map(|r| r.inline.as_ref()));
                assert!(estimate(&payload) + estimate(&more) - estimate(&v["records"].to_string()) > threshold - 2);
            }
        }
    }
}
