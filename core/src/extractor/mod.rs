//! `lro_extract` (the WIT `extractor` interface): recipes with parameters, or custom jq, over an
//! offloaded file; and `query`, the same filters over JSON text without a file.
//!
//! The file must be an LRO file directly inside the offload directory: `confine` checks the
//! path (absolute, inside the directory after resolving `.` and `..`, our name pattern), that it
//! is a regular file, its header and its expiry, and the component's sandbox refuses anything
//! outside the one directory it can see, symlinks included. The header line is skipped; its
//! detail level picks the recipe. `run` runs the filter over the record lines, parsing only
//! what it reads, into `output`, which caps what the model gets; `hint` names fields a
//! filter reads that the file's detail level lacks; `tool` is the `lro_extract` MCP tool.

mod confine;
mod hint;
mod output;
mod run;
mod tool;

use jaq_json::Val;
use serde_json::Value;

use crate::jq::{self, Filter, Flow};
use crate::recipes;
use crate::{Config, Error};
use confine::{check_header, confine, read};
use hint::with_hint;
use output::{Output, cap_error, cap_other_error};
use run::run_over_lines;
pub use tool::{call_tool, tool_definition};

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
    /// Output cap in estimated tokens; None means the config's `threshold_tokens`.
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

/// Runs an extraction at time `now_ms` (for the expiry check). Error texts are capped like the
/// output (see [`output::cap_error`]).
pub fn extract(config: &Config, request: &ExtractRequest<'_>, now_ms: u64) -> Result<Extracted, Error> {
    let limit = request.limit.unwrap_or(config.threshold_tokens);
    extract_uncapped(config, request, now_ms).map_err(|e| cap_other_error(e, limit))
}

fn extract_uncapped(config: &Config, request: &ExtractRequest<'_>, now_ms: u64) -> Result<Extracted, Error> {
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

    let limit = request.limit.unwrap_or(config.threshold_tokens);
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
            let filter =
                Filter::compile(query, &names).map_err(|e| with_hint(cap_filter_error(e, limit), query, detail))?;
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
/// Error texts are capped like the output: not at all without a `limit`.
pub fn query(filter: &str, input: &str, slurp: bool, raw: bool, limit: Option<u32>) -> Result<Extracted, Error> {
    let cap = limit.unwrap_or(u32::MAX);
    let compiled = Filter::compile(filter, &[]).map_err(|e| cap_filter_error(e, cap))?;
    let inputs = jq::parse_many(input)
        .map_err(|e| cap_other_error(Error::InvalidInput(format!("input is not valid JSON: {e}")), cap))?;
    let inputs = if slurp {
        vec![inputs.into_iter().collect::<Val>()]
    } else {
        inputs
    };
    let mut out = Output::new(raw, cap);
    for (i, value) in inputs.into_iter().enumerate() {
        if !slurp {
            out.at_input(i + 1);
        }
        let flow = compiled.run(value, &[], &mut |v| out.push(&v)).map_err(|e| {
            let e = cap_error(e, cap);
            Error::FilterFailed(if slurp {
                e
            } else {
                format!("{e} (input value {})", i + 1)
            })
        })?;
        if flow != Flow::Continue {
            break;
        }
    }
    Ok(out.finish(None, filter))
}

/// A compile error's text (which quotes names from the filter) cut to the cap.
fn cap_filter_error(error: Error, limit: u32) -> Error {
    match error {
        Error::InvalidFilter(m) => Error::InvalidFilter(cap_error(m, limit)),
        other => cap_other_error(other, limit),
    }
}

/// The `params` object as (variable name, value) pairs, each name a valid jq variable.
fn parse_params(params: Option<&str>) -> Result<Vec<(String, Value)>, Error> {
    let Some(text) = params else { return Ok(Vec::new()) };
    let value: Value = crate::json_text::parse(text, crate::mcp::RESULT_DEPTH)
        .map_err(|e| Error::InvalidRequest(format!("`params` is {e}")))?;
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

/// A JSON value as a jq value.
fn json_to_val(value: &Value) -> Val {
    jq::parse(&value.to_string()).unwrap_or(Val::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Detail;

    fn config(dir: &std::path::Path) -> Config {
        Config {
            output_dir: dir.to_str().unwrap().to_owned(),
            ..Config::default()
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

    #[test]
    fn a_file_that_is_not_utf8_is_named_so() {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("atlatl-recall-{}.jsonl", ulid::Ulid::generate());
        let header = r#"{"type":"lro_header","operation":"recall","count":1,"timestamp":"2999-01-01T00:00:00.000Z","detail":"full"}"#;
        let mut bytes = format!("{header}\n{{\"title\":\"caf").into_bytes();
        bytes.extend_from_slice(b"\xe9\"}\n");
        std::fs::write(dir.path().join(&name), bytes).unwrap();
        let path = format!("{}/{name}", dir.path().to_str().unwrap());
        let request = ExtractRequest {
            path: &path,
            query: Some(".title"),
            ..Default::default()
        };
        let err = extract(&config(dir.path()), &request, 0).unwrap_err();
        assert_eq!(err.to_string(), format!("not an LRO file: {path}: not UTF-8 text"));
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
        // Lines jq prints differently from how they are written (spaces, numbers and escapes in
        // another form), an escaped member name, a member repeated with another value, members
        // that are objects.
        let unusual = [
            r#"{"id": "s1", "title" : "caf\u00e9 \/ 1", "namespace":{"b":2, "a":[1.0, 1e2, -0]}}"#,
            r#"{"id":"s2","ti\u0074le":"escaped name","namespace":"n"}"#,
            r#"{"id":"s3","title":"one","title":2.50,"namespace":null,"id":"s3b"}"#,
            r#"{"id":"s4","title":"\u001f\u007f\t\"","namespace":"\ud83d\ude00"}"#,
            r#"{}"#,
        ];
        let bodies = [
            clean.clone(),
            format!("{clean}\n{odd_title}"),
            format!("{clean}\n[1, \"two\"]"),
            format!("{clean}\n{}", unusual.join("\n")),
            // Lines ended as on Windows, and blank lines between them.
            clean.replace('\n', "\r\n \n"),
        ];
        let filters = [
            "[.title, .namespace] | @tsv",
            "[.id, .missing, .title, .id, .provenance.confidence] | @csv",
            "[.id, .created, .namespace] | @csv",
            "[.id, .missing, .title, .id] | @csv",
            "[.title, .provenance] | @tsv",
            "{id, title, namespace}",
            r#"{t: .title, "namespace", i: ."id", again: .id, p: .provenance}"#,
            "{title: .title?}",
            "{}",
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
            // Conditions evaluated in Rust (`plan::Cond`), where jq fails too.
            r#"select(.namespace | startswith("_semantic"))"#,
            r#"select(.title | endswith("e"))"#,
            r#"select(.title | test("^[A-Z].*s$"))"#,
            r#"select(.title | test("E"; "x"))"#,
            r#"select(.title | test("e"; "q"))"#,
            r#"select(.id != "s3b")"#,
            r#"select("semantic" == .memory_type)"#,
            r#"select(.tags | index("alpha"))"#,
            r#"select((.namespace // []) | index("n"))"#,
            r#"select((.title // []) | index("o"))"#,
            r#"select((.title // "") | test("E"; "i"))"#,
            r#"select((.namespace // "_semantic") | startswith("_semantic"))"#,
            r#"select((.missing // "x") | endswith("x"))"#,
            // Number literals, and jq's definitions that pass outputs on (issue 34, item 14).
            "select(.title == 2.5)",
            "select(.title != 2.50) | .id",
            "select(.id == 1e0)",
            "select(.namespace == 0)",
            "first(.title)",
            "limit(1; .title, .id)",
            "last(.id, .title)",
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
        assert_eq!(compared.0 + compared.1, bodies.len() * filters.len());
        assert!(compared.0 >= filters.len() && compared.1 >= 10, "{compared:?}");
    }

    /// A file of `records` (one JSON text a line) in `dir`, and its path.
    fn file_of(dir: &std::path::Path, records: &[String]) -> String {
        let name = format!("atlatl-recall-{}.jsonl", ulid::Ulid::generate());
        let header = format!(
            r#"{{"type":"lro_header","operation":"recall","count":{},"timestamp":"2999-01-01T00:00:00.000Z","detail":"full"}}"#,
            records.len()
        );
        std::fs::write(dir.join(&name), format!("{header}\n{}\n", records.join("\n"))).unwrap();
        format!("{}/{name}", dir.to_str().unwrap())
    }

    // See: issue 34, item 6 (the output cap did not apply to error texts).
    #[test]
    fn error_texts_are_capped_like_values() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let long = "x".repeat(200_000);
        let records: Vec<String> = (0..50).map(|i| format!(r#"{{"id":{i},"title":"{long}"}}"#)).collect();
        let path = file_of(dir.path(), &records);
        let run = |query: &str, slurp: bool, limit: Option<u32>| {
            let request = ExtractRequest {
                path: &path,
                query: Some(query),
                slurp,
                limit,
                ..Default::default()
            };
            extract(&cfg, &request, 0).unwrap_err()
        };
        let cut = |m: &str, at: usize, of: usize| m.contains(&format!("... (error message cut at {at} of {of} bytes)"));
        // The whole file as the error's text, over a cap of 1 token: cut to the floor of 256
        // tokens (1,024 bytes here), the note inside it.
        let all = run("error(tojson)", true, Some(1));
        let Error::FilterFailed(m) = &all else { panic!("{all}") };
        assert!(
            m.len() <= 1024 && cut(m, 1024 - 64, 10_001_041),
            "{}",
            &m[m.len() - 80..]
        );
        // With a larger limit, more of it; where it failed comes after the cut, whole.
        let per_record = run(".title | tonumber", false, Some(2000));
        let Error::FilterFailed(m) = &per_record else {
            panic!("{per_record}")
        };
        assert!(
            m.len() < 8100
                && m.contains("error message cut at 7936 of 200")
                && m.ends_with(" (on the record at line 2)"),
            "{m:.100}"
        );
        // The default limit is the threshold.
        let Error::FilterFailed(m) = run("error(\"x\" * 100000000)", false, None) else {
            panic!()
        };
        assert!(m.len() < 6500 && cut(&m, 6336, 100_000_000), "{}", &m[m.len() - 80..]);
        // A name in the filter, quoted back by the compile error.
        let name = "a".repeat(100_000);
        let Error::InvalidFilter(m) = run(&format!(".x | {name}"), false, None) else {
            panic!()
        };
        assert!(m.len() < 6500 && m.contains("error message cut at"), "{m:.100}");
        // Short errors are whole, whatever the limit.
        assert_eq!(
            run("error(\"boom\")", false, Some(1)).to_string(),
            "filter failed: boom (on the record at line 2)"
        );
        // The same in `query`, with a limit; without one, nothing is cut (as with values).
        let input = format!("\"{long}\"");
        let err = query("tonumber", &input, false, false, Some(10))
            .unwrap_err()
            .to_string();
        assert!(
            err.len() < 1100 && err.contains("error message cut at") && err.ends_with("(input value 1)"),
            "{err:.100}"
        );
        let err = query("tonumber", &input, false, false, None).unwrap_err().to_string();
        assert!(err.len() > 200_000, "{err:.100}");
    }

    // See: issue 34, item 6 (a 250 KB path was quoted whole).
    #[test]
    fn long_paths_and_arguments_are_cut_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let long = format!("/{}/notes.jsonl", "d".repeat(250_000));
        for path in [long.clone(), long[1..].to_owned(), format!("{}{long}", cfg.output_dir)] {
            let request = ExtractRequest {
                path: &path,
                query: Some("."),
                ..Default::default()
            };
            let m = extract(&cfg, &request, 0).unwrap_err().to_string();
            assert!(
                m.len() < 1200 && m.contains("[... 249") && m.contains(" bytes cut ...]"),
                "{m}"
            );
            assert!(
                m.contains("notes.jsonl"),
                "the end of the path, its file name, is shown: {m}"
            );
        }
        // A tool call's arguments are quoted in its errors: cut at the threshold.
        let key = "k".repeat(100_000);
        let arguments = serde_json::json!({"file_path": "/x", key: 1}).to_string();
        let m = call_tool(&cfg, &arguments, 0).unwrap_err().to_string();
        assert!(m.len() < 6500 && m.contains("error message cut at"), "{m:.100}");
        let arguments = serde_json::json!({"file_path": "/x", "recipe": long}).to_string();
        let m = call_tool(&cfg, &arguments, 0).unwrap_err().to_string();
        assert!(m.len() < 6500 && m.contains("error message cut at"), "{m:.100}");
    }

    #[test]
    fn query_caps_output_and_stops_there() {
        // The first value past the cap stops the filter.
        let out = query("range(100000)", "null", false, false, Some(10)).unwrap();
        assert!(out.truncated && out.total == out.values.len() as u64 + 1, "{out:?}");
        assert!(
            out.text.contains(&format!(
                "showing {} values; the output cap is 10 tokens. The filter was stopped at input value 1",
                out.values.len()
            )),
            "{}",
            out.text
        );
        let out = query(".", &"1 ".repeat(1000), false, false, Some(10)).unwrap();
        assert!(
            out.text
                .contains("stopped at input value 21: the input values after it"),
            "{}",
            out.text
        );
        let none = query("empty", "null", false, false, None).unwrap();
        assert_eq!((none.total, none.text.contains("no values")), (0, true));
        let raw = query(".[]", r#"["a", 1]"#, false, true, None).unwrap();
        assert_eq!(raw.values, ["a", "1"]);
        let slurped = query("length", "1 2 3", true, false, None).unwrap();
        assert_eq!(slurped.values, ["3"]);
    }
}
