//! jq, as jaq 3 runs it, with what agents expect from jq 1.6 on top: `@tsv` and `@csv`, JSON
//! written the way jq writes it (numbers, escapes), errors that say where, and no way to hang
//! the caller through `halt` or deep input.
//!
//! Known differences from jq 1.6 are listed in docs/JQ.md.
//!
//! The layers, as jaq's own crates split them: `defs.jq` holds the definitions written in jq,
//! `builtins` the Rust-defined builtins they call, `tabular` `@tsv` and `@csv`, and `write`
//! the output writer. This file compiles and runs filters and parses their input.

mod builtins;
mod hints;
mod tabular;
pub(crate) use builtins::regex_test;
pub(crate) use tabular::{Tabular, format as tabular};
mod write;

use std::fmt::Write as _;

use jaq_core::compile::Undefined;
use jaq_core::load::{self, Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data::JustLut};
use jaq_json::Val;

pub(crate) use write::write_num;
pub use write::{to_json, to_raw, write_f64, write_json};

use crate::Error;
use crate::json_text::depth;

/// The data kind filters run with: values only, no `input`/`inputs` (every value comes in as `.`).
type Kind = JustLut<Val>;

/// A compiled filter.
pub struct Filter {
    filter: jaq_core::Filter<Kind>,
    vars: usize,
}

/// The definitions written in jq, layered over jaq's standard library (see `defs.jq`).
fn defs() -> impl Iterator<Item = load::parse::Def<&'static str>> {
    load::parse(include_str!("defs.jq"), |p| p.defs())
        .expect("defs.jq parses")
        .into_iter()
}

/// Every definition written in jq that filters see: jaq's standard library, then ours.
fn all_defs() -> impl Iterator<Item = load::parse::Def<&'static str>> {
    jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs())
        .chain(defs())
}

/// Every Rust-defined builtin that filters see: jaq's, then ours.
fn all_funs() -> impl Iterator<Item = jaq_core::native::Fun<Kind>> {
    jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs())
        .chain(builtins::funs())
}

/// Every builtin filter as (name, arity), for `builtins` and the hints of compile errors.
fn defined() -> Vec<(&'static str, usize)> {
    let defs = all_defs().map(|def| (def.name, def.args.len()));
    let funs = all_funs().map(|(name, args, _)| (name, args.len()));
    defs.chain(funs).collect()
}

/// Deepest nesting of arrays and objects accepted in input. jq 1.6 stops at 10,000; jaq's parser
/// recurses, so the limit is lower to stay well inside the component's stack.
pub const MAX_DEPTH: usize = 1000;

/// jq's name for a value's type.
pub fn type_name(value: &Val) -> &'static str {
    match value {
        Val::Null => "null",
        Val::Bool(_) => "boolean",
        Val::Num(_) => "number",
        Val::TStr(_) | Val::BStr(_) => "string",
        Val::Arr(_) => "array",
        Val::Obj(_) => "object",
    }
}

impl Filter {
    /// Compiles `code` with global variables `vars` (names without `$`), in that order.
    /// `$ENV` is always defined, as an empty object: the sandbox has no environment.
    pub fn compile(code: &str, vars: &[&str]) -> Result<Filter, Error> {
        let names: Vec<String> = std::iter::once("$ENV".to_owned())
            .chain(vars.iter().map(|v| format!("${v}")))
            .collect();
        let loader = Loader::new(all_defs());
        let arena = Arena::default();
        let modules = loader.load(&arena, File { code, path: () }).map_err(|errors| {
            let mut message = String::new();
            for (_, error) in errors {
                describe_load_error(code, error, &mut message);
            }
            Error::InvalidFilter(message.trim_end().to_owned())
        })?;
        let filter = Compiler::default()
            .with_funs(all_funs())
            .with_global_vars(names.iter().map(String::as_str))
            .compile(modules)
            .map_err(|errors| {
                let defined = defined();
                let vars: Vec<&str> = names.iter().map(String::as_str).collect();
                let mut message = String::new();
                for (_, errors) in errors {
                    for (found, undefined) in errors {
                        let what = match (found, &undefined) {
                            ("reduce", _) | ("foreach", _) => "wrong number of arguments to".to_owned(),
                            _ => format!("undefined {}", undefined.as_str()),
                        };
                        let hint = match undefined {
                            Undefined::Filter(arity) => hints::filter_hint(found, arity, &defined),
                            Undefined::Var => hints::var_hint(found, &vars),
                            _ => None,
                        };
                        let _ = write!(message, "{what} `{found}` at {}", position(code, found));
                        let _ = match hint {
                            Some(hint) => writeln!(message, "; {hint}"),
                            None => writeln!(message),
                        };
                    }
                }
                Error::InvalidFilter(message.trim_end().to_owned())
            })?;
        Ok(Filter {
            filter,
            vars: vars.len(),
        })
    }

    /// Runs the filter on `input` with `vars` (in the order given to `compile`), calling `each`
    /// for every output until it returns false. Stops at the first error, which it returns.
    pub fn run(&self, input: Val, vars: &[Val], each: &mut dyn FnMut(Val) -> bool) -> Result<Flow, String> {
        assert_eq!(vars.len(), self.vars, "one value per variable");
        let env = Val::obj(Default::default());
        let ctx = Ctx::<Kind>::new(
            &self.filter.lut,
            Vars::new(std::iter::once(env).chain(vars.iter().cloned())),
        );
        for output in self.filter.id.run((ctx, input)) {
            match output {
                Ok(value) => {
                    if !each(value) {
                        return Ok(Flow::Stop);
                    }
                }
                Err(exn) => {
                    return match exn.get_err() {
                        Ok(error) => Err(describe_runtime_error(error)),
                        // `halt` ends the program in jq; here it ends the outputs.
                        Err(exn) => match exn.get_halt() {
                            Ok(_) => Ok(Flow::Halt),
                            Err(_) => Err("the filter broke out of a label it was not inside".to_owned()),
                        },
                    };
                }
            }
        }
        Ok(Flow::Continue)
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// All outputs were produced.
    Continue,
    /// The caller asked to stop.
    Stop,
    /// The filter called `halt`.
    Halt,
}

fn describe_runtime_error(error: jaq_core::Error<Val>) -> String {
    // A string given to `error` is the message itself, as jq prints it; anything else as JSON.
    match error.into_val() {
        Val::TStr(s) | Val::BStr(s) => String::from_utf8_lossy(&s).into_owned(),
        other => to_json(&other),
    }
}

fn describe_load_error(code: &str, error: load::Error<&str>, out: &mut String) {
    match error {
        load::Error::Io(errors) => {
            for (path, reason) in errors {
                let _ = writeln!(
                    out,
                    "cannot load module {path:?}: {reason} (modules are not available here)"
                );
            }
        }
        load::Error::Lex(errors) => {
            for (expected, found) in errors {
                let found_text = found
                    .chars()
                    .next()
                    .map_or("the end of the filter".to_owned(), |c| format!("`{c}`"));
                let _ = writeln!(
                    out,
                    "expected {} but found {found_text} at {}",
                    expected.as_str(),
                    position(code, found)
                );
            }
        }
        load::Error::Parse(errors) => {
            for (expected, found) in errors {
                let found_text = if found.is_empty() {
                    "the end of the filter".to_owned()
                } else {
                    format!("`{found}`")
                };
                let _ = writeln!(
                    out,
                    "expected {} but found {found_text} at {}",
                    expected.as_str(),
                    position(code, found)
                );
            }
        }
    }
}

/// "line L, column C" of the subslice `part` of `code` (1-based, columns in characters).
fn position(code: &str, part: &str) -> String {
    let start = load::span(code, part).start.min(code.len());
    let before = &code[..start];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    if line == 1 {
        format!("column {column}")
    } else {
        format!("line {line}, column {column}")
    }
}

/// Parses one JSON value, refusing nesting deeper than [`MAX_DEPTH`].
pub fn parse(text: &str) -> Result<Val, String> {
    if depth(text.as_bytes(), MAX_DEPTH) > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    jaq_json::read::parse_single(text.as_bytes()).map_err(|e| e.to_string())
}

/// Parses whitespace-separated JSON values, refusing nesting deeper than [`MAX_DEPTH`].
pub fn parse_many(text: &str) -> Result<Vec<Val>, String> {
    // jq skips a byte-order mark before its input.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if depth(text.as_bytes(), MAX_DEPTH) > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    jaq_json::read::parse_many(text.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

/// A JSON string value.
pub fn string(s: &str) -> Val {
    Val::utf8_str(s.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The outputs of `code` on `input`, as `jq -c` prints them, or the error.
    pub(super) fn run(code: &str, input: &str) -> Result<Vec<String>, String> {
        let filter = Filter::compile(code, &[]).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        filter.run(parse(input).unwrap(), &[], &mut |v| {
            out.push(to_json(&v));
            true
        })?;
        Ok(out)
    }

    #[test]
    fn variables_bind_in_order() {
        let filter = Filter::compile("[$a, $b]", &["a", "b"]).unwrap();
        let mut out = Vec::new();
        filter
            .run(Val::Null, &[string("x"), string("y")], &mut |v| {
                out.push(to_json(&v));
                true
            })
            .unwrap();
        assert_eq!(out, [r#"["x","y"]"#]);
    }

    #[test]
    fn parse_errors_say_where() {
        let err = Filter::compile(".a | ", &[]).err().unwrap().to_string();
        assert!(err.contains("column 6") && err.contains("end of the filter"), "{err}");
        let err = Filter::compile("map(.x) | foo(1)", &[]).err().unwrap().to_string();
        assert!(
            err.contains("undefined filter `foo`") && err.contains("column 11"),
            "{err}"
        );
        let err = Filter::compile("[1,\n (2", &[]).err().unwrap().to_string();
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn jq_1_6_behaviour_where_agents_meet_it() {
        let cases = [
            (
                "[.[] | tostring]",
                "[1, 1.5, 3.0, \"a\", [1.0]]",
                r#"["1","1.5","3","a","[1]"]"#,
            ),
            ("tojson", "[1.0, 2.5]", r#""[1,2.5]""#),
            ("[nan] | tojson", "null", r#""[null]""#),
            ("join(\"-\")", "[\"a\", 1, null, 3.0]", r#""a-1--3""#),
            (
                "from_entries",
                r#"[{"key":"a","value":1},{"name":"b","value":2},{"k":"c","v":3}]"#,
                r#"{"a":1,"b":2,"c":3}"#,
            ),
            ("index(\"x\")", "null", "null"),
            ("[ltrimstr(\"a\"), rtrimstr(\"c\")]", "\"abc\"", r#"["bc","ab"]"#),
            ("ltrimstr(\"a\")", "1", "1"),
            ("[leaf_paths]", r#"{"a":1,"b":{"c":2}}"#, r#"[["a"],["b","c"]]"#),
            ("[tostream]", r#"{"a":[1]}"#, r#"[[["a",0],1],[["a",0]],[["a"]]]"#),
            ("[$ENV, env]", "null", "[{},{}]"),
        ];
        for (filter, input, expected) in cases {
            assert_eq!(run(filter, input).unwrap(), [expected], "{filter}");
        }
    }

    #[test]
    fn halt_ends_outputs_without_exiting() {
        assert_eq!(run("1, halt, 2", "null").unwrap(), ["1"]);
        assert_eq!(run("error(\"boom\")", "null").unwrap_err(), "boom");
    }

    #[test]
    fn deep_input_is_refused_before_parsing() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(parse(&deep).unwrap_err().contains("nested deeper than 1000 levels"));
    }
}
