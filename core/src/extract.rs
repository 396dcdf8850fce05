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

/// Reads an offload file. Only a regular file is opened: a FIFO or device wearing an LRO name
/// would block the open (and a deadline cannot interrupt a blocking open), a directory cannot be
/// read. The check follows a symlink that stays inside the directory, as the read does.
fn read(path: &str) -> Result<String, Error> {
    let meta = fs::metadata(path).map_err(|e| read_error(path, e))?;
    if !meta.is_file() {
        return Err(Error::NotLroFile(format!(
            "{path} is not a regular file (a directory, FIFO, socket or device); nothing was read"
        )));
    }
    fs::read_to_string(path).map_err(|e| read_error(path, e))
}

fn read_error(path: &str, e: std::io::Error) -> Error {
    match e.kind() {
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
    }
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
    let stamped = header
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_rfc3339_ms)
        .ok_or_else(|| not_lro("its header has no RFC 3339 timestamp"))?;
    // The same date the custodian goes by, so a file is never readable past the time a sweep
    // would delete it.
    let name = path.rsplit('/').next().unwrap_or(path);
    let created = match custody::classify(&config.prefix, name) {
        Some(custody::Kind::Offload(ulid)) => custody::created_ms(path, ulid, Some(stamped)),
        _ => stamped,
    };
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
    /// When the first value alone was over the cap and was cut to its leading parts: what it
    /// was (`"array"`/`"object"`), the parts shown and the parts it had.
    cut: Option<(&'static str, usize, usize)>,
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
            cut: None,
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
                // One value over the cap (a slurped recipe's array, say) would show nothing at
                // all: show its leading elements instead, and say how many there were.
                if self.values.is_empty()
                    && let Some((part, kind, shown, all)) = leading_part(&text, self.limit)
                {
                    self.cut = Some((kind, shown, all));
                    self.values.push(part);
                }
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
        } else if let Some((kind, shown, all)) = self.cut {
            let (part, parts) = if kind == "array" {
                ("element", "elements")
            } else {
                ("member", "members")
            };
            let others = if self.total > 1 {
                format!(" It is the first of {} values; the others are not shown.", self.total)
            } else {
                String::new()
            };
            text.push_str(&format!(
                "\n[lro_extract: the value is an {kind} of {all} {parts}, over the output cap of {} tokens; \
                 showing its first {shown} {}.{others} Narrow the query (.[:n], map(...), select(...), \
                 or fewer fields) or pass a larger limit.]",
                self.limit,
                if shown == 1 { part } else { parts },
            ));
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

/// The leading elements of an array (members of an object) printed as `text` that fit `limit`
/// tokens, as JSON of the same kind: (the part, its kind, parts shown, parts in all). None for
/// other values, or text nested too deeply to take apart.
fn leading_part(text: &str, limit: u32) -> Option<(String, &'static str, usize, usize)> {
    use serde_json::value::RawValue;
    let (kind, parts): (&'static str, Vec<(Option<String>, &RawValue)>) = match text.as_bytes().first() {
        Some(b'[') => (
            "array",
            serde_json::from_str::<Vec<&RawValue>>(text)
                .ok()?
                .into_iter()
                .map(|v| (None, v))
                .collect(),
        ),
        Some(b'{') => (
            "object",
            serde_json::from_str::<Members<'_>>(text)
                .ok()?
                .0
                .into_iter()
                .map(|(k, v)| (Some(crate::json_string(&k)), v))
                .collect(),
        ),
        _ => return None,
    };
    let (open, close) = if kind == "array" { ('[', ']') } else { ('{', '}') };
    let mut part = String::from(open);
    let mut counts = Counts { other: 3, cjk: 0 };
    let mut shown = 0;
    for (key, value) in &parts {
        let mut item = String::new();
        if shown > 0 {
            item.push(',');
        }
        if let Some(key) = key {
            item.push_str(key);
            item.push(':');
        }
        item.push_str(value.get());
        let next = counts + Counts::of(&item);
        if next.tokens() > limit {
            break;
        }
        counts = next;
        part.push_str(&item);
        shown += 1;
    }
    part.push(close);
    Some((part, kind, shown, parts.len()))
}

/// An object's members in order, values as raw text (printed as they are).
struct Members<'a>(Vec<(String, &'a serde_json::value::RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Members<'a>, M::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de serde_json::value::RawValue>()? {
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData))
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

/// The `lro_extract` tool as `tools/list` lists it (MCP `Tool`): name, description and input
/// schema. The spec's arguments (`file_path`, `recipe`, `query`, `params`) plus `slurp` and
/// `limit`; the nullable types let a model pass `null` for the one of `recipe`/`query` it does
/// not use, which SDKs that validate arguments against the schema would otherwise refuse.
pub fn tool_definition() -> Value {
    serde_json::json!({
        "name": "lro_extract",
        "description": "Query a large tool result that was offloaded to a JSONL file (the descriptor's file_path), \
            without a shell: run one of its numbered recipes, or a jq filter over its records. Give exactly one of \
            recipe and query. The answer is capped; when it says so, narrow the query or pass a larger limit.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "The descriptor's file_path: an offloaded JSONL file."
                },
                "recipe": {
                    "type": ["integer", "null"], "minimum": 1, "maximum": 10,
                    "description": "A recipe number: 1=titles+namespaces, 2=filter namespace, 3=search titles, \
                        4=IDs+titles, 5=filter type, 6=count by namespace, 7=filter tag, 8=sort by date, \
                        9 and 10 depend on the detail level (see the descriptor). Not with query."
                },
                "query": {
                    "type": ["string", "null"],
                    "description": "A jq filter, run once per record, or once over an array of all records \
                        with slurp. Not with recipe."
                },
                "params": {
                    "type": ["object", "null"],
                    "description": "Values bound as jq variables, never pasted into the program: a recipe's \
                        parameters ({\"namespace\": \"_semantic\"}, {\"keyword\": \"...\"}, {\"memory_type\": \"...\"}, \
                        {\"tag\": \"...\"}, {\"pattern\": \"...\"}), or $name variables of a query."
                },
                "slurp": {
                    "type": ["boolean", "null"],
                    "description": "For a query: run it once over an array of all records, like jq -s \
                        (counting, grouping, sorting). Default false."
                },
                "limit": {
                    "type": ["integer", "null"], "minimum": 1,
                    "description": "The output cap in estimated tokens. Default: the offload threshold."
                }
            },
            "required": ["file_path"],
            "additionalProperties": false
        }
    })
}

/// Runs `lro_extract` from a `tools/call` request's `arguments` object at time `now_ms`.
pub fn call_tool(config: &Config, arguments: &str, now_ms: u64) -> Result<Extracted, Error> {
    let bad = |m: String| Error::InvalidRequest(m);
    let args = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(bad(format!(
                "the arguments must be a JSON object, got {}",
                crate::TypeName(&other)
            )));
        }
        Err(e) => return Err(bad(format!("the arguments are not valid JSON: {e}"))),
    };
    const KNOWN: [&str; 6] = ["file_path", "recipe", "query", "params", "slurp", "limit"];
    if let Some(unknown) = args.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(bad(format!(
            "unknown argument `{unknown}`; lro_extract takes {}",
            KNOWN.join(", ")
        )));
    }
    let given = |key: &str| args.get(key).filter(|v| !v.is_null());
    let path = match given("file_path") {
        Some(Value::String(p)) => p.as_str(),
        Some(other) => {
            return Err(bad(format!(
                "`file_path` must be a string, got {}",
                crate::TypeName(other)
            )));
        }
        None => return Err(bad("`file_path` is required: the descriptor's file_path".into())),
    };
    // Models sometimes send numbers as strings ("2") or as 2.0: take them when they are whole.
    // Above u32 is as good as no cap, and out of range for a recipe.
    let whole = |key: &str, v: &Value| -> Result<u32, Error> {
        let n = match v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e15)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        n.map(|n| u32::try_from(n).unwrap_or(u32::MAX))
            .ok_or_else(|| bad(format!("`{key}` must be a whole number, got {v}")))
    };
    let recipe = given("recipe").map(|v| whole("recipe", v)).transpose()?;
    let query = match given("query") {
        None => None,
        Some(Value::String(q)) => Some(q.as_str()),
        Some(other) => {
            return Err(bad(format!(
                "`query` must be a string (a jq filter), got {}",
                crate::TypeName(other)
            )));
        }
    };
    // A stringified object is what some clients send for an object argument.
    let params = match given("params") {
        None => None,
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(Value::String(text)) if text.trim_start().starts_with('{') => Some(text.clone()),
        Some(other) => {
            return Err(bad(format!(
                "`params` must be an object such as {{\"namespace\": \"_semantic\"}}, got {}",
                crate::TypeName(other)
            )));
        }
    };
    let slurp = match given("slurp") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(t)) if t == "true" || t == "false" => t == "true",
        Some(other) => {
            return Err(bad(format!(
                "`slurp` must be true or false, got {}",
                crate::TypeName(other)
            )));
        }
    };
    let limit = given("limit").map(|v| whole("limit", v)).transpose()?;
    if limit == Some(0) {
        return Err(bad("`limit` must be at least 1".into()));
    }
    let request = ExtractRequest {
        path,
        recipe,
        query,
        params: params.as_deref(),
        slurp,
        limit,
    };
    extract(config, &request, now_ms)
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
