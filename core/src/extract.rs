//! `lro_extract`: recipes with parameters, or custom jq, over an offloaded file.
//!
//! The file must be an LRO file directly inside the offload directory: the path is checked here
//! (absolute, inside the directory after resolving `.` and `..`, our name pattern, a valid header,
//! not expired) and the component's sandbox refuses anything outside the one directory it can
//! see, symlinks included. The header line is skipped; its detail level picks the recipe.

use std::fs;
use std::io::ErrorKind;

use jaq_json::Val;
use serde_json::Value;

use crate::estimate::Counts;
use crate::jq::{self, Filter, Flow};
use crate::plan::{self, Plan, Slurp};
use crate::recipes::{self, fields_absent_at};
use crate::time::parse_rfc3339_ms;
use crate::{Config, Detail, Error, custody};

/// The arguments of `lro_extract` (the WIT `extract-request` record).
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractRequest<'a> {
    /// The offloaded file.
    pub path: &'a str,
    /// A recipe number, 1 to 10.
    pub recipe: Option<u32>,
    /// A custom jq filter.
    pub query: Option<&'a str>,
    /// Parameters as a JSON object.
    pub params: Option<&'a str>,
    /// Run a custom query over an array of all records.
    pub slurp: bool,
    /// Output cap in estimated tokens; None means the config's threshold.
    pub limit: Option<u32>,
}

/// What an extraction produced (the WIT `extract-result` record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// Values in order, as `jq -c` prints them (raw strings when `raw`).
    pub values: Vec<String>,
    /// Strings are printed raw.
    pub raw: bool,
    /// How many values the filter produced in all.
    pub total: u64,
    /// The cap cut the output.
    pub truncated: bool,
    /// The text to return to the model.
    pub text: String,
}

/// Runs an extraction at time `now_ms` (for the expiry check).
pub fn extract(config: &Config, request: &ExtractRequest<'_>, now_ms: u64) -> Result<Extracted, Error> {
    config.validate()?;
    let (recipe, query) = match (request.recipe, request.query) {
        (Some(_), Some(_)) => {
            return Err(Error::InvalidRequest(
                "give either `recipe` or `query`, not both".into(),
            ));
        }
        (None, None) => {
            return Err(Error::InvalidRequest(
                "give `recipe` (a number from 1 to 10) or `query` (a jq filter)".into(),
            ));
        }
        pair => pair,
    };
    if let Some(n) = recipe
        && !(1..=10).contains(&n)
    {
        return Err(Error::InvalidRequest(format!(
            "`recipe` must be a number from 1 to 10, got {n}"
        )));
    }
    let params = parse_params(request.params)?;
    let path = confine(config, request.path)?;
    let text = read(&path)?;
    let (header, body) = text.split_once('\n').unwrap_or((text.as_str(), ""));
    let detail = check_header(config, &path, header, now_ms)?;

    let limit = request.limit.unwrap_or(config.threshold);
    match (recipe, query) {
        (Some(number), _) => {
            let Some(detail) = detail else {
                return Err(Error::InvalidRequest(format!(
                    "{path} holds a generic tool result, which has no numbered recipes; use `query` \
                     (the descriptor's jq_recipes show the programs)"
                )));
            };
            let all = recipes::library(config.recipes, detail, None);
            let recipe = &all[number as usize - 1];
            if request.slurp && !recipe.slurp {
                return Err(Error::InvalidRequest(format!(
                    "`slurp` is for custom queries; recipe {number} runs once per record"
                )));
            }
            let mut names = Vec::new();
            let mut values = Vec::new();
            for param in &recipe.params {
                let value = match params.iter().find(|(k, _)| *k == param.name) {
                    None => jq::string(&param.default),
                    Some((_, Value::String(s))) => jq::string(s),
                    Some((name, other)) => {
                        return Err(Error::InvalidRequest(format!(
                            "params.{name} must be a string for recipe {number}, got {}",
                            crate::TypeName(other)
                        )));
                    }
                };
                names.push(param.name.as_str());
                values.push(value);
            }
            let filter = Filter::compile(&recipe.program, &names)?;
            run_over_lines(
                &filter,
                &names,
                &values,
                body,
                recipe.slurp,
                recipe.raw,
                limit,
                Some(detail),
                &recipe.program,
            )
        }
        (None, Some(query)) => {
            let names: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
            let values: Vec<Val> = params.iter().map(|(_, v)| json_to_val(v)).collect();
            let filter = Filter::compile(query, &names).map_err(|e| with_hint(e, query, detail))?;
            run_over_lines(
                &filter,
                &names,
                &values,
                body,
                request.slurp,
                false,
                limit,
                detail,
                query,
            )
        }
        (None, None) => unreachable!("checked above"),
    }
}

/// `lro query`: a filter over whitespace-separated JSON values, without files.
pub fn query(filter: &str, input: &str, slurp: bool, raw: bool, limit: Option<u32>) -> Result<Extracted, Error> {
    let compiled = Filter::compile(filter, &[])?;
    let inputs = jq::parse_many(input).map_err(|e| Error::InvalidInput(format!("input is not valid JSON: {e}")))?;
    let inputs = if slurp {
        vec![inputs.into_iter().collect::<Val>()]
    } else {
        inputs
    };
    let mut out = Output::new(raw, limit.unwrap_or(u32::MAX));
    for (i, value) in inputs.into_iter().enumerate() {
        let flow = compiled.run(value, &[], &mut |v| out.push(&v)).map_err(|e| {
            Error::FilterFailed(if slurp {
                e
            } else {
                format!("{e} (input value {})", i + 1)
            })
        })?;
        if flow == Flow::Halt {
            break;
        }
    }
    Ok(out.finish(None, filter))
}

fn parse_params(params: Option<&str>) -> Result<Vec<(String, Value)>, Error> {
    let Some(text) = params else { return Ok(Vec::new()) };
    let value: Value =
        serde_json::from_str(text).map_err(|e| Error::InvalidRequest(format!("`params` is not valid JSON: {e}")))?;
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Object(map) => {
            for key in map.keys() {
                let ok = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !ok {
                    return Err(Error::InvalidRequest(format!(
                        "params key {key:?} cannot be a jq variable name (letters, digits and _)"
                    )));
                }
            }
            Ok(map.into_iter().collect())
        }
        other => Err(Error::InvalidRequest(format!(
            "`params` must be a JSON object such as {{\"namespace\": \"_semantic\"}}, got {}",
            crate::TypeName(&other)
        ))),
    }
}

fn json_to_val(value: &Value) -> Val {
    jq::parse(&value.to_string()).unwrap_or(Val::Null)
}

/// The path, made lexical-canonical, if it names a file directly in the offload directory with
/// our name pattern. Nothing is read before this check passes.
fn confine(config: &Config, path: &str) -> Result<String, Error> {
    if !path.starts_with('/') {
        return Err(Error::OutsideDirectory(format!(
            "{path:?} is relative; pass the absolute file_path from the descriptor"
        )));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let normal = format!("/{}", parts.join("/"));
    let dir = config.dir_base();
    let Some(name) = normal.strip_prefix(dir).and_then(|rest| rest.strip_prefix('/')) else {
        return Err(Error::OutsideDirectory(format!(
            "{path} (the offload directory is {dir})"
        )));
    };
    if name.contains('/') {
        return Err(Error::OutsideDirectory(format!(
            "{path} is in a subdirectory; offload files sit directly in {dir}"
        )));
    }
    if custody::classify(&config.prefix, name).is_none_or(|kind| !kind.is_offload()) {
        return Err(Error::NotLroFile(format!(
            "{path}: offload files are named {}-OPERATION-ULID.jsonl",
            config.prefix
        )));
    }
    Ok(normal)
}

fn read(path: &str) -> Result<String, Error> {
    fs::read_to_string(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => Error::NotFound(format!("{path} does not exist (it may have expired and been swept)")),
        // The sandbox answers a symlink (or any path) leading out of the directory this way.
        ErrorKind::PermissionDenied => {
            Error::OutsideDirectory(format!("{path} is a link leading out of it; the sandbox refused it"))
        }
        ErrorKind::InvalidData => Error::NotLroFile(format!("{path}: not UTF-8 text")),
        // WASI ENOTCAPABLE: the other way a capability refusal can come back.
        _ if e.raw_os_error() == Some(76) => {
            Error::OutsideDirectory(format!("{path} is a link leading out of it; the sandbox refused it"))
        }
        _ => Error::Io(format!("reading {path}: {e}")),
    })
}

fn check_header(config: &Config, path: &str, header: &str, now_ms: u64) -> Result<Option<Detail>, Error> {
    let not_lro = |why: &str| Error::NotLroFile(format!("{path}: {why}"));
    let header: Value = serde_json::from_str(header).map_err(|_| not_lro("its first line is not a JSON header"))?;
    if header.get("type").and_then(Value::as_str) != Some("lro_header") {
        return Err(not_lro("its first line has no \"type\": \"lro_header\""));
    }
    // Generic results (any tool's data) have no detail level, hence no numbered recipes.
    let detail = match header.get("detail").and_then(Value::as_str) {
        Some("generic") => None,
        Some(level) => Some(Detail::parse(level).ok_or_else(|| not_lro("its header names an unknown detail level"))?),
        None => return Err(not_lro("its header has no detail level")),
    };
    let created = header
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_rfc3339_ms)
        .ok_or_else(|| not_lro("its header has no RFC 3339 timestamp"))?;
    let expired = created.saturating_add(config.ttl.saturating_mul(1000));
    if expired <= now_ms {
        return Err(Error::Expired(format!(
            "{path} expired at {} (ttl {} s); run the tool again for fresh results",
            crate::time::format_rfc3339_ms(expired),
            config.ttl
        )));
    }
    Ok(detail)
}

#[allow(
    clippy::too_many_arguments,
    reason = "one private call site; a struct would only rename them"
)]
fn run_over_lines(
    filter: &Filter,
    names: &[&str],
    vars: &[Val],
    body: &str,
    slurp: bool,
    raw: bool,
    limit: u32,
    detail: Option<Detail>,
    program: &str,
) -> Result<Extracted, Error> {
    let mut out = Output::new(raw, limit);
    let lines = body.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let corrupt = |i: usize, e: String| Error::Corrupt(format!("line {} is not a valid record: {e}", i + 2));
    let parse = |(i, line): (usize, &str)| jq::parse(line).map_err(|e| corrupt(i, e));
    let failed = |e: String, at: Option<usize>| {
        let at = at.map_or(String::new(), |i| format!(" (on the record at line {})", i + 2));
        with_hint(Error::FilterFailed(format!("{e}{at}")), program, detail)
    };
    if slurp {
        let lines: Vec<(usize, &str)> = lines.collect();
        let projected = |keys: &[String]| {
            lines
                .iter()
                .map(|&(i, line)| plan::parse_projected(line, keys).map_err(|e| corrupt(i, e)))
                .collect::<Result<Val, Error>>()
        };
        let keys = match plan::slurped(program) {
            Slurp::Whole => None,
            Slurp::Project(keys) => Some(keys),
            Slurp::SortBy { key, keys } => {
                let sorted =
                    sorted_positions(&key, names, vars, projected(&keys)?, lines.len()).map_err(|e| failed(e, None))?;
                if let Some(positions) = sorted {
                    let mut text = String::with_capacity(body.len() + 2);
                    text.push('[');
                    for (n, position) in positions.into_iter().enumerate() {
                        let (i, line) = lines[position];
                        if n > 0 {
                            text.push(',');
                        }
                        if jq::is_canonical(line) {
                            text.push_str(line);
                        } else {
                            text.push_str(&jq::to_json(&parse((i, line))?));
                        }
                    }
                    text.push(']');
                    out.push_text(text);
                    return Ok(out.finish(detail, program));
                }
                // The key halted, or did something else unforeseen: sort the records themselves.
                None
            }
        };
        let records = match &keys {
            Some(keys) => projected(keys)?,
            None => lines.iter().copied().map(parse).collect::<Result<Val, Error>>()?,
        };
        filter
            .run(records, vars, &mut |v| out.push(&v))
            .map_err(|e| failed(e, None))?;
    } else {
        match plan::per_record(program) {
            plan @ (Plan::Whole | Plan::Project(_)) => {
                let keys = match &plan {
                    Plan::Project(keys) => Some(keys),
                    _ => None,
                };
                for (i, line) in lines {
                    let record = match keys {
                        Some(keys) => plan::parse_projected(line, keys).map_err(|e| corrupt(i, e))?,
                        None => parse((i, line))?,
                    };
                    if filter
                        .run(record, vars, &mut |v| out.push(&v))
                        .map_err(|e| failed(e, Some(i)))?
                        == Flow::Halt
                    {
                        break;
                    }
                }
            }
            Plan::Select { cond, keys } => {
                // `select(COND)` outputs the record once for every true output of COND.
                let cond = Filter::compile(&cond, names)?;
                for (i, line) in lines {
                    let record = plan::parse_projected(line, &keys).map_err(|e| corrupt(i, e))?;
                    let mut whole: Option<Val> = None;
                    let mut bad_line = None;
                    let flow = cond
                        .run(record, vars, &mut |v| {
                            if matches!(v, Val::Null | Val::Bool(false)) {
                                return true;
                            }
                            if out.is_full() {
                                return out.count();
                            }
                            // Most lines print as they are written: no need to build the record
                            // (a string would print differently in raw mode).
                            if !(out.raw && line.starts_with('"')) && jq::is_canonical(line) {
                                return out.push_text(line.to_owned());
                            }
                            if whole.is_none() {
                                match parse((i, line)) {
                                    Ok(v) => whole = Some(v),
                                    Err(e) => {
                                        bad_line = Some(e);
                                        return false;
                                    }
                                }
                            }
                            out.push(whole.as_ref().expect("parsed above"))
                        })
                        .map_err(|e| failed(e, Some(i)))?;
                    if let Some(e) = bad_line {
                        return Err(e);
                    }
                    if flow == Flow::Halt {
                        break;
                    }
                }
            }
        }
    }
    Ok(out.finish(detail, program))
}

/// The order `sort_by(KEY)` puts `records` (projected to what KEY reads) in, as positions: jaq
/// sorts the positions by the same keys, so the order is the one it gives the records, ties
/// included. `None` when the run does not give one permutation of `0..count`.
fn sorted_positions(
    key: &str,
    names: &[&str],
    vars: &[Val],
    records: Val,
    count: usize,
) -> Result<Option<Vec<usize>>, String> {
    let program = format!(". as $__lro_records | [range(length)] | sort_by($__lro_records[.] | ({key}))");
    let Ok(order) = Filter::compile(&program, names) else {
        return Ok(None);
    };
    let mut outputs = Vec::new();
    order.run(records, vars, &mut |v| {
        outputs.push(v);
        true
    })?;
    let [Val::Arr(positions)] = &outputs[..] else {
        return Ok(None);
    };
    let positions: Option<Vec<usize>> = positions
        .iter()
        .map(|p| match p {
            Val::Num(n) => n
                .as_isize()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n < count),
            _ => None,
        })
        .collect();
    Ok(positions.filter(|p| p.len() == count))
}

/// Collects values up to the cap and counts the rest.
struct Output {
    raw: bool,
    limit: u32,
    values: Vec<String>,
    counts: Counts,
    total: u64,
    truncated: bool,
}

impl Output {
    fn new(raw: bool, limit: u32) -> Self {
        Output {
            raw,
            limit,
            values: Vec::new(),
            counts: Counts::default(),
            total: 0,
            truncated: false,
        }
    }

    /// The cap has been reached: further values are only counted.
    fn is_full(&self) -> bool {
        self.truncated
    }

    /// Counts a value past the cap without printing it.
    fn count(&mut self) -> bool {
        debug_assert!(self.truncated);
        self.total += 1;
        true
    }

    fn push(&mut self, value: &Val) -> bool {
        if self.truncated {
            return self.count();
        }
        self.push_text(if self.raw {
            jq::to_raw(value)
        } else {
            jq::to_json(value)
        })
    }

    /// Pushes a value already printed.
    fn push_text(&mut self, text: String) -> bool {
        self.total += 1;
        if !self.truncated {
            let next = self.counts + Counts::of(&text) + Counts { other: 1, cjk: 0 };
            if next.tokens() > self.limit {
                self.truncated = true;
            } else {
                self.counts = next;
                self.values.push(text);
            }
        }
        true
    }

    fn finish(self, detail: Option<Detail>, program: &str) -> Extracted {
        let mut text = self.values.join("\n");
        if self.total == 0 {
            text = match absent_field_hint(program, detail) {
                Some(hint) => format!("[lro_extract: no values: the filter matched nothing. {hint}]"),
                None => "[lro_extract: no values: the filter matched nothing.]".to_owned(),
            };
        } else if self.truncated {
            text.push_str(&format!(
                "\n[lro_extract: showing {} of {} values; the output cap is {} tokens. Narrow the query \
                 (select(...), limit(n; ...), or fewer fields) or pass a larger limit.]",
                self.values.len(),
                self.total,
                self.limit
            ));
        }
        Extracted {
            values: self.values,
            raw: self.raw,
            total: self.total,
            truncated: self.truncated,
            text,
        }
    }
}

/// Adds a hint naming the fields the program uses that this detail level does not have.
fn with_hint(error: Error, program: &str, detail: Option<Detail>) -> Error {
    let Some(hint) = absent_field_hint(program, detail) else {
        return error;
    };
    match error {
        Error::FilterFailed(m) => Error::FilterFailed(format!("{m}. {hint}")),
        Error::InvalidFilter(m) => Error::InvalidFilter(format!("{m}. {hint}")),
        other => other,
    }
}

fn absent_field_hint(program: &str, detail: Option<Detail>) -> Option<String> {
    let detail = detail?;
    let used = field_names(program);
    let absent: Vec<&str> = fields_absent_at(detail)
        .into_iter()
        .filter(|f| used.contains(f))
        .collect();
    let score = used.contains(&"score");
    if absent.is_empty() && !score {
        return None;
    }
    let mut hint = String::from("Hint:");
    if !absent.is_empty() {
        let list: Vec<String> = absent.iter().map(|f| format!("`.{f}`")).collect();
        hint.push_str(&format!(
            " {} not present at {} detail, so {} null here.",
            list.join(", "),
            detail.as_str(),
            if absent.len() == 1 { "it is" } else { "they are" }
        ));
        if absent.contains(&"confidence") && detail == Detail::Full {
            hint.push_str(" At full detail confidence is `.provenance.confidence`.");
        } else if detail != Detail::Full {
            hint.push_str(&format!(
                " Call the tool again with a richer detail level to use {}.",
                if absent.len() == 1 { "it" } else { "them" }
            ));
        }
    }
    if score {
        hint.push_str(" `.score` is never in the file: lines are in rank order instead.");
    }
    Some(hint)
}

/// Identifiers that follow a `.` outside string literals, not right after another name, index or
/// parenthesis: the top-level fields a filter reads (`confidence` of `.provenance.confidence` is not one).
fn field_names(program: &str) -> Vec<&str> {
    let bytes = program.as_bytes();
    let (mut names, mut i, mut in_string) = (Vec::new(), 0, false);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'.' if !in_string => {
                let start = i + 1;
                let mut end = start;
                while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                    end += 1;
                }
                let nested = i > 0
                    && matches!(bytes[i - 1], b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b']' | b')' | b'?');
                if end > start && !nested {
                    names.push(&program[start..end]);
                }
                i = end.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &std::path::Path) -> Config {
        Config {
            dir: dir.to_str().unwrap().to_owned(),
            ..Config::default()
        }
    }

    #[test]
    fn confinement_is_lexical_first() {
        let cfg = Config {
            dir: "/srv/lro".into(),
            ..Config::default()
        };
        let ok = "01JDEF7X2K0000000000000000";
        assert_eq!(
            confine(&cfg, &format!("/srv/lro/./atlatl-recall-{ok}.jsonl")).unwrap(),
            format!("/srv/lro/atlatl-recall-{ok}.jsonl")
        );
        for (path, kind) in [
            ("/srv/lro/../etc/passwd", "outside"),
            ("/etc/passwd", "outside"),
            ("relative.jsonl", "outside"),
            (
                "/srv/lro-other/atlatl-recall-01JDEF7X2K0000000000000000.jsonl",
                "outside",
            ),
            ("/srv/lro/sub/atlatl-recall-01JDEF7X2K0000000000000000.jsonl", "outside"),
            ("/srv/lro/notes.txt", "not-lro"),
            (
                "/srv/lro/.atlatl-recall-01JDEF7X2K0000000000000000.jsonl.tmp",
                "not-lro",
            ),
        ] {
            let err = confine(&cfg, path).unwrap_err();
            let matches = match kind {
                "outside" => matches!(err, Error::OutsideDirectory(_)),
                _ => matches!(err, Error::NotLroFile(_)),
            };
            assert!(matches, "{path}: {err}");
        }
    }

    #[test]
    fn recipe_and_query_are_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let both = ExtractRequest {
            path: "/x",
            recipe: Some(1),
            query: Some("."),
            ..Default::default()
        };
        assert_eq!(
            extract(&cfg, &both, 0).unwrap_err().to_string(),
            "invalid request: give either `recipe` or `query`, not both"
        );
        let neither = ExtractRequest {
            path: "/x",
            ..Default::default()
        };
        assert!(
            extract(&cfg, &neither, 0)
                .unwrap_err()
                .to_string()
                .contains("give `recipe`")
        );
        let eleven = ExtractRequest {
            path: "/x",
            recipe: Some(11),
            ..Default::default()
        };
        assert!(
            extract(&cfg, &eleven, 0)
                .unwrap_err()
                .to_string()
                .contains("from 1 to 10, got 11")
        );
    }

    /// Extraction parses only what a filter reads (see `plan`); `query` parses every value whole.
    /// Over the same records they must agree on every value, error and count.
    #[test]
    fn planned_extraction_agrees_with_parsing_every_line_whole() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let records = crate::sample::records(Detail::Full, 40, 7, false);
        let mut lines: Vec<String> = records.iter().map(Value::to_string).collect();
        // A missing title; members with escapes, repeated (the last one counts).
        let mut untitled = records[3].clone();
        untitled.as_object_mut().unwrap().remove("title");
        lines[3] = untitled.to_string();
        lines[9] = lines[9].replacen('{', r#"{"title":"first","namespace":"a\"b\u00e9","#, 1);
        let clean = lines.join("\n");
        // Lines some filters fail on, each after good ones: a title that is not a string, a line
        // that is not an object.
        let mut odd_title = records[5].clone();
        odd_title["title"] = serde_json::json!({"nested": [1, 2]});
        let bodies = [
            clean.clone(),
            format!("{clean}\n{odd_title}"),
            format!("{clean}\n[1, \"two\"]"),
        ];
        let filters = [
            "[.title, .namespace] | @tsv",
            "{id, title, namespace}",
            ".title",
            ".title?",
            r#"select(.title | test("e"; "i"))"#,
            r#"select(.title | tostring | test("e"; "i"))"#,
            "select((.tags // []) | index(\"alpha\"))",
            r#"select(.memory_type == "semantic") | .id"#,
            "select(.provenance.confidence > 0.5) | {id, c: .provenance.confidence}",
            "select(.title)",
            "select(true, false, true) | .id",
            "select(.id) | keys",
            "if .title then .namespace else \"none\" end",
            "\"\\(.id): \\(.title)\"",
            ".namespace as $n | {id, $n}",
            "keys | length",
            ".",
            "select(.title | length > 30)",
            "select(.title) # a comment)",
        ];
        // Over the array of every record (`slurp`).
        let slurped = [
            "group_by(.namespace) | map({namespace: .[0].namespace, count: length})",
            "group_by(.memory_type) | map({memory_type: .[0].memory_type, count: length})",
            "map(.namespace) | unique",
            "sort_by(.created)",
            "sort_by(-.provenance.confidence)",
            // Many ties: the order among equal keys must be the file's.
            "sort_by(.memory_type)",
            "sort_by(.title)",
            "sort_by(.provenance.agent, .id) | map(.id)",
            "[.[].title, .[0].namespace?]",
            "group_by(.memory_type) | map(.[0].title)",
            "length",
            "sort_by(.title | halt)",
        ];
        let filters: Vec<(&str, bool)> = filters
            .iter()
            .map(|f| (*f, false))
            .chain(slurped.iter().map(|f| (*f, true)))
            .collect();
        let mut compared = (0, 0);
        for (b, body) in bodies.iter().enumerate() {
            let name = format!("atlatl-recall-{}.jsonl", ulid::Ulid::generate());
            let header = r#"{"type":"lro_header","operation":"recall","count":40,"timestamp":"2999-01-01T00:00:00.000Z","detail":"full"}"#;
            std::fs::write(dir.path().join(&name), format!("{header}\n{body}\n")).unwrap();
            let path = format!("{}/{name}", dir.path().to_str().unwrap());
            for &(filter, slurp) in &filters {
                let request = ExtractRequest {
                    path: &path,
                    query: Some(filter),
                    slurp,
                    limit: Some(u32::MAX),
                    ..Default::default()
                };
                let planned = extract(&cfg, &request, 0).map_err(|e| e.to_string());
                let whole = query(filter, body, slurp, false, None).map_err(|e| e.to_string());
                match (planned, whole) {
                    (Ok(p), Ok(w)) => {
                        assert_eq!((p.values, p.total), (w.values, w.total), "{filter} (body {b})");
                        compared.0 += 1;
                    }
                    // The messages name the line in different ways; what failed must be the same.
                    (Err(p), Err(w)) => {
                        let what = |m: &str| m.replace("filter failed: ", "").split(" (").next().unwrap().to_owned();
                        assert_eq!(what(&p), what(&w), "{filter} (body {b})");
                        compared.1 += 1;
                    }
                    (p, w) => panic!("{filter} (body {b}): extraction {p:?}, whole parse {w:?}"),
                }
            }
        }
        assert_eq!(compared.0 + compared.1, 3 * filters.len());
        assert!(compared.0 >= filters.len() && compared.1 >= 10, "{compared:?}");
    }

    #[test]
    fn field_names_skip_strings() {
        assert_eq!(
            field_names(r#"select(.content | test(".x")) | .provenance.confidence, .[0].title, (.a).b, .c?.d"#),
            ["content", "provenance", "a", "c"]
        );
        // Recipe 9 at full detail reads the confidence where that level has it.
        assert_eq!(
            absent_field_hint("sort_by(-.provenance.confidence)", Some(Detail::Full)),
            None
        );
    }

    #[test]
    fn hints_name_fields_absent_at_the_level() {
        let hint = absent_field_hint("select(.content | test(\"x\"))", Some(Detail::Light)).unwrap();
        assert!(hint.contains("`.content` not present at light detail"), "{hint}");
        let hint = absent_field_hint("sort_by(.confidence)", Some(Detail::Full)).unwrap();
        assert!(hint.contains(".provenance.confidence"), "{hint}");
        assert!(absent_field_hint(".content", Some(Detail::Medium)).is_none());
        assert!(
            absent_field_hint(".score", Some(Detail::Medium))
                .unwrap()
                .contains("rank order")
        );
    }

    #[test]
    fn query_caps_output_and_counts_all() {
        let out = query("range(100)", "null", false, false, Some(10)).unwrap();
        assert!(out.truncated && out.total == 100 && out.values.len() < 100);
        assert!(
            out.text
                .contains(&format!("showing {} of 100 values", out.values.len()))
        );
        let none = query("empty", "null", false, false, None).unwrap();
        assert_eq!((none.total, none.text.contains("no values")), (0, true));
        let raw = query(".[]", r#"["a", 1]"#, false, true, None).unwrap();
        assert_eq!(raw.values, ["a", "1"]);
        let slurped = query("length", "1 2 3", true, false, None).unwrap();
        assert_eq!(slurped.values, ["3"]);
    }
}
