//! The record-level interceptor: estimate, decide, write JSONL, describe.
//!
//! File format (see `docs/FORMAT.md`): a header line, then one memory object per line, in the
//! order of the result set. Search hits `{"memory": {...}, "score": x}` are written as the memory
//! alone; the score never reaches the file.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;

use serde_json::value::RawValue;
use serde_json::{Value, json};
use ulid::Ulid;

use crate::compact::{self, compacted};
use crate::estimate::Counts;
use crate::recipes::{library, line_schema};
use crate::time::format_rfc3339_ms;
use crate::{Config, DescriptorStyle, Detail, Error, Event, Operation, Outcome, json_string};

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

/// One record of the result set, as compact JSON text (borrowed from the input when it was
/// compact already).
struct Record<'a> {
    /// Compact JSON of the element as given (hit or memory): what inline delivery would send.
    inline: Cow<'a, str>,
    /// Compact JSON of the memory alone: the file line. None when it equals `inline`.
    line: Option<Cow<'a, str>>,
    namespace: Option<String>,
    score: Option<f64>,
    /// The richest detail level its members show (see [`compact::Scan::level`]).
    level: u8,
}

impl Record<'_> {
    fn line(&self) -> &str {
        self.line.as_deref().unwrap_or(&self.inline)
    }
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
            .fold(brackets_and_commas, |counts, r| counts + Counts::of(&r.inline))
            .tokens()
    });

    if !config.enabled || tokens <= config.threshold {
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
    let header = header_line(config, request, detail, records.len(), tokens, ulid.timestamp_ms());
    let size = file_size(&header, records.iter().map(Record::line));

    let written = prepare_write(config, 1, size, emit)
        .and_then(|()| write_atomically(config, &name, &header, records.iter().map(Record::line)));
    match written {
        Ok(bytes) => {
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
        Err(err) => {
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

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn parse_records(text: &str) -> Result<Vec<Record<'_>>, Error> {
    let items: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| {
        // One pass in the common case; on failure, say whether it is not JSON or not an array.
        match serde_json::from_str::<&RawValue>(text) {
            Ok(whole) if !whole.get().starts_with('[') => Error::InvalidInput(format!(
                "records must be a JSON array of memory objects or search hits, got {}",
                compact::type_name(whole.get())
            )),
            Ok(_) => Error::InvalidInput(format!("records are not valid JSON: {e}")),
            Err(e) => Error::InvalidInput(format!("records are not valid JSON: {e}")),
        }
    })?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let raw = item.get();
            if !raw.starts_with('{') {
                return Err(Error::InvalidInput(format!(
                    "records[{i}] is {}; expected a memory object or a search hit {{\"memory\": {{...}}, \"score\": n}}",
                    compact::type_name(raw)
                )));
            }
            to_record(i, raw)
        })
        .collect()
}

fn to_record(i: usize, raw: &str) -> Result<Record<'_>, Error> {
    let unusable = |e: String| Error::InvalidInput(format!("records[{i}] cannot be written as JSON: {e}"));
    let scan = compact::scan(raw);
    // The extractor parses a line at most this deep; a record it could never read back is
    // refused here rather than offloaded.
    if scan.depth > crate::jq::MAX_DEPTH {
        return Err(Error::InvalidInput(format!(
            "records[{i}] is nested {} levels deep; offloaded records may nest at most {} levels, \
             the most lro_extract reads",
            scan.depth,
            crate::jq::MAX_DEPTH
        )));
    }
    let inline = compacted(raw, scan.compact).map_err(unusable)?;
    match scan.memory {
        Some(memory) if memory.starts_with('{') => {
            let score = match scan.score {
                None | Some("null") => None,
                Some(number) if compact::type_name(number) == "a number" => Some(
                    serde_json::from_str::<f64>(number)
                        .map_err(|e| Error::InvalidInput(format!("records[{i}].score is not a usable number: {e}")))?,
                ),
                Some(other) => {
                    return Err(Error::InvalidInput(format!(
                        "records[{i}].score is {}; a search hit's score must be a number",
                        compact::type_name(other)
                    )));
                }
            };
            let memory_scan = compact::scan(memory);
            Ok(Record {
                line: Some(compacted(memory, memory_scan.compact).map_err(unusable)?),
                namespace: namespace_of(memory_scan.namespace),
                score,
                level: memory_scan.level,
                inline,
            })
        }
        _ => Ok(Record {
            namespace: namespace_of(scan.namespace),
            score: None,
            line: None,
            level: scan.level,
            inline,
        }),
    }
}

fn namespace_of(raw: Option<&str>) -> Option<String> {
    raw.filter(|r| r.starts_with('"'))
        .and_then(|r| serde_json::from_str(r).ok())
}

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
        "estimated_tokens": tokens,
        "detail": detail.as_str(),
    })
    .to_string()
}

/// The size of the file `header` and `lines` make.
pub(crate) fn file_size<'a>(header: &str, lines: impl Iterator<Item = &'a str>) -> u64 {
    lines.fold(header.len() as u64 + 1, |n, l| n + l.len() as u64 + 1)
}

/// Checks that `files` new files of `bytes` in all may be written: the host found the directory
/// usable, and the storage caps leave room once the oldest files are evicted.
pub(crate) fn prepare_write(config: &Config, files: u32, bytes: u64, emit: &mut dyn FnMut(Event)) -> io::Result<()> {
    if let Some(problem) = &config.dir_problem {
        return Err(io::Error::other(problem.clone()));
    }
    crate::custody::make_room(config, files, bytes, emit)
}

/// Writes header and lines to a hidden temporary name, then renames it into place, so a reader
/// (or a sweep) never sees a partial file. Returns the file size. Used for every offload file.
/// On failure nothing is left behind, and the error names the operating system's reason (disk
/// full, read-only file system, file too large, ...).
pub(crate) fn write_atomically<'a>(
    config: &Config,
    name: &str,
    header: &str,
    lines: impl Iterator<Item = &'a str>,
) -> io::Result<u64> {
    let base = config.dir_base();
    let tmp = format!(".{name}.tmp");
    let mut file = crate::sink::Dir::open(base)?.create(&tmp)?;
    let result = write_lines(&mut file, header, lines).and_then(|bytes| {
        // rename() replaces an existing file; a ULID clash is astronomically unlikely, but
        // refusing it keeps the no-lost-data promise unconditional.
        if file.dir().exists(name) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "the file name is taken"));
        }
        file.dir().rename(&tmp, name)?;
        Ok(bytes)
    });
    if result.is_err() {
        file.dir().remove(&tmp);
    }
    result
}

fn write_lines<'a>(
    file: &mut crate::sink::File,
    header: &str,
    lines: impl Iterator<Item = &'a str>,
) -> io::Result<u64> {
    const CHUNK: usize = 256 * 1024;
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    let mut bytes = header.len() as u64 + 1;
    buf.extend_from_slice(header.as_bytes());
    buf.push(b'\n');
    for line in lines {
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        bytes += line.len() as u64 + 1;
        if buf.len() >= CHUNK {
            file.write_all(&buf)?;
            buf.clear();
        }
    }
    file.write_all(&buf)?;
    Ok(bytes)
}

fn top_namespaces<'a>(records: &'a [Record<'_>]) -> Vec<&'a str> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for ns in records.iter().filter_map(|r| r.namespace.as_deref()) {
        *counts.entry(ns).or_default() += 1;
    }
    let mut ranked: Vec<(&str, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.into_iter().take(5).map(|(ns, _)| ns).collect()
}

fn score_range(records: &[Record]) -> Value {
    let mut scores = records.iter().filter_map(|r| r.score);
    let Some(first) = scores.next() else { return Value::Null };
    let (min, max) = scores.fold((first, first), |(lo, hi), s| (lo.min(s), hi.max(s)));
    json!([min, max])
}

fn descriptor(
    config: &Config,
    operation: Operation,
    detail: Detail,
    path: &str,
    records: &[Record],
    tokens: u32,
) -> String {
    let count = records.len();
    let summary = json!({
        "count": count,
        "estimated_tokens": tokens,
        "operation": operation.as_str(),
        "top_namespaces": top_namespaces(records),
        "score_range": score_range(records),
        "detail": detail.as_str(),
    });
    let value = match config.descriptor {
        DescriptorStyle::Bare => json!({"offloaded": true, "summary": summary, "file_path": path}),
        DescriptorStyle::Full => {
            let recipes: Vec<Value> = library(config.recipes, detail, Some(path))
                .into_iter()
                .map(|r| json!({"description": r.description, "command": r.command}))
                .collect();
            json!({
                "offloaded": true,
                "summary": summary,
                "file_path": path,
                "line_schema": line_schema(detail),
                "jq_recipes": recipes,
                "guidance": guidance(config.native, operation, detail, path, count, tokens),
            })
        }
    };
    value.to_string()
}

/// The spec's guidance template (shell or native), plus the two facts it leaves implicit: line
/// order, and what light detail lacks.
pub fn guidance(native: bool, operation: Operation, detail: Detail, path: &str, count: usize, tokens: u32) -> String {
    let d = detail.as_str();
    let mut text = format!("Results offloaded to JSONL ({count} memories, ~{tokens} tokens saved).\n");
    if native {
        let p = json_string(path);
        let (example, nine, ten) = match detail {
            Detail::Light => (
                "select(.memory_type == \"episodic\")",
                "unique namespaces",
                "count by type",
            ),
            Detail::Medium => ("select(.confidence > 0.8)", "sort by confidence", "search content"),
            Detail::Full => (
                "select(.provenance.confidence > 0.8)",
                "sort by confidence",
                "search content",
            ),
        };
        text.push_str(&format!(
            "Detail level: {d}\n\
             Use the `lro_extract` tool to query this result set. Examples:\n\
             - Browse: lro_extract(file_path={p}, recipe=1)\n\
             - Filter by namespace: lro_extract(file_path={p}, recipe=2, params={{\"namespace\": \"_semantic\"}})\n\
             - Search by keyword: lro_extract(file_path={p}, recipe=3, params={{\"keyword\": \"your term\"}})\n\
             - Custom filter: lro_extract(file_path={p}, query={})\n\
             Available recipes: 1=titles+namespaces, 2=filter namespace, 3=search titles,\n\
             4=IDs+titles, 5=filter type, 6=count by namespace, 7=filter tag, 8=sort by date,\n\
             9={nine}, 10={ten}.\n",
            json_string(example)
        ));
    } else {
        text.push_str(&format!(
            "File: {path}\n\
             Detail level: {d}\n\
             Use the jq recipes above to extract specific data. Common patterns:\n\
             - Browse: recipe #1 (titles with namespaces)\n\
             - Filter: recipe #2 (by namespace) or #3 (by keyword)\n\
             - Analyze: recipe #6 (count by namespace)\n\
             Read the file directly only if you need the complete dataset.\n\
             The header line (line 1) contains metadata; memory objects start at line 2.\n"
        ));
    }
    if operation.is_ranked() {
        text.push_str("Records are in rank order, best match first.");
    } else {
        text.push_str("Records are in the order the tool returned them.");
    }
    if detail == Detail::Light {
        text.push_str("\nLight detail has no content field; ask for medium or full detail to search content.");
    }
    text
}

/// The truncated inline fallback: the leading records whose whole payload fits the threshold.
fn degrade(config: &Config, records: &[Record], error: &str) -> (String, String, u32) {
    let total = records.len();
    let warning_for = |returned: usize| {
        format!(
            "LRO could not write the offload file ({error}). Showing {returned} of {total} records, \
             truncated to fit {} tokens; the rest is not available. Narrow the request to see them.",
            config.threshold
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
        let next = counts + Counts::of(&record.inline) + comma;
        if next.tokens() > config.threshold {
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
    use std::fs;

    fn config(dir: &std::path::Path, threshold: u32) -> Config {
        Config {
            dir: dir.to_str().unwrap().to_owned(),
            threshold,
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
        assert!(text.starts_with("{\"type\":\"lro_header\""));
        let second: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        assert_eq!(second, memory(0, "_episodic/y"));
        let d: Value = serde_json::from_str(&descriptor).unwrap();
        assert_eq!(d["summary"]["score_range"], json!([0.71, 1.0]));
    }

    #[test]
    fn top_namespaces_are_most_frequent_first_then_by_name() {
        let names = ["b", "a", "c", "a", "d", "e", "f", "b", "f"];
        let records: Vec<Record> = names
            .iter()
            .map(|n| Record {
                inline: Cow::Borrowed(""),
                line: None,
                namespace: Some((*n).into()),
                score: None,
                level: 0,
            })
            .collect();
        assert_eq!(top_namespaces(&records), ["a", "b", "f", "c", "d"]);
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
            threshold: 50,
            ..Config::default()
        };
        assert_eq!(degrade(&tiny, &parsed, "writing /x: Permission denied").2, 0);
        for threshold in [200, 400, 1000] {
            let cfg = Config {
                threshold,
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

    /// A symlink or directory planted at the name a file is about to take, or at its temporary
    /// name, is never replaced or written through, and nothing is left behind.
    #[test]
    fn a_link_or_directory_planted_at_the_name_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), 10);
        let outside = dir.path().join("outside");
        fs::write(&outside, "keep").unwrap();
        let name = "atlatl-recall-01JDEF7X2K0000000000000000.jsonl";
        let plant = |at: &str, link: bool| {
            let path = dir.path().join(at);
            if link {
                std::os::unix::fs::symlink(&outside, &path).unwrap();
            } else {
                fs::create_dir(&path).unwrap();
            }
            path
        };
        let lines = || ["{\"id\":\"a\"}"].into_iter();
        for (at, link) in [
            (name.to_owned(), true),
            (name.to_owned(), false),
            (format!(".{name}.tmp"), true),
        ] {
            let planted = plant(&at, link);
            let err = write_atomically(&cfg, name, "{}", lines()).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{at}: {err}");
            assert_eq!(fs::read_to_string(&outside).unwrap(), "keep");
            let mut left: Vec<String> = fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            left.sort();
            let mut expected = vec![at.clone(), "outside".to_owned()];
            expected.sort();
            assert_eq!(left, expected, "only what was planted is there");
            if link {
                fs::remove_file(&planted).unwrap();
            } else {
                fs::remove_dir(&planted).unwrap();
            }
        }
    }

    #[test]
    fn guidance_follows_the_templates() {
        let shell = guidance(false, Operation::Recall, Detail::Full, "/tmp/f.jsonl", 247, 38285);
        assert!(shell.starts_with(
            "Results offloaded to JSONL (247 memories, ~38285 tokens saved).\nFile: /tmp/f.jsonl\nDetail level: full\n"
        ));
        assert!(shell.contains("rank order"));
        let native = guidance(true, Operation::List, Detail::Medium, "/tmp/f.jsonl", 1, 2);
        assert!(native.contains("lro_extract(file_path=\"/tmp/f.jsonl\", recipe=1)"));
        assert!(native.contains("query=\"select(.confidence > 0.8)\""));
        assert!(!native.contains("File:"));
    }
}
