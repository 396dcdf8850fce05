//! jq's own test files (the `jq-tests` folder of the shared project files beside the repository,
//! see its SOURCE.txt), parsed and judged the way
//! jq's `src/jq_test.c` does, and the skip list (`tests/cases/jq/upstream-skips.txt`).
//!
//! Shared by the native run (`core/tests/jq_upstream.rs`) and the component run in the Rust
//! host (`cli/tests/all/jq_upstream.rs`); the Python and Node hosts have their own copies of this
//! parser (`bindings/python/tests/test_jq_upstream.py`, `bindings/node/test/jq_upstream.test.js`).
//!
//! How a case is judged, as in `jq_test.c`:
//! - a case is a program line, an input line and the expected outputs up to a blank or `#` line;
//! - outputs compare as values (`1.0` equals `1`, object keys in any order);
//! - an error after all expected outputs is no failure, an error before them is;
//! - `%%FAIL` and `%%FAIL IGNORE MSG` cases must fail to compile. lro words compile errors its own
//!   way (positions, "did you mean"), so the message is not compared: docs/JQ.md says so.

#![allow(dead_code, reason = "each including test uses the part it needs")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jaq_json::Val;

/// The upstream files, in the order reports list them.
pub const FILES: [&str; 4] = ["jq-1.6.test", "jq.test", "man.test", "onig.test"];

/// Where the upstream files are: `shared/jq-tests` beside the repository, or `$LRO_JQ_TESTS`.
pub fn dir(repo: &Path) -> PathBuf {
    std::env::var_os("LRO_JQ_TESTS").map_or_else(|| repo.join("..").join("shared").join("jq-tests"), PathBuf::from)
}

/// One upstream case.
#[derive(Debug, Clone)]
pub struct Case {
    pub file: &'static str,
    /// The line of the program, 1-based.
    pub line: usize,
    pub program: String,
    pub input: String,
    pub expected: Vec<String>,
    /// A `%%FAIL` case: the program must not compile.
    pub must_fail: bool,
    /// The case as a test file of its own, for `jq --run-tests`.
    pub text: String,
}

impl Case {
    /// `file:line`, the key of the skip list.
    pub fn id(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// The cases of one file.
pub fn parse(file: &'static str, text: &str) -> Vec<Case> {
    let lines: Vec<&str> = text.lines().collect();
    let skip = |l: &str| {
        let t = l.trim_start_matches([' ', '\t']);
        t.is_empty() || t.starts_with('#')
    };
    let mut cases = Vec::new();
    let mut i = 0;
    let mut must_fail = false;
    let mut fail_line = "";
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if skip(line) {
            continue;
        }
        if line == "%%FAIL" || line == "%%FAIL IGNORE MSG" {
            must_fail = true;
            fail_line = line;
            continue;
        }
        let at = i;
        if must_fail {
            // jq 1.6 reads one line of message; the head reads the message with its caret
            // lines, up to the blank line.
            let mut message = Vec::new();
            while i < lines.len() && !skip(lines[i]) {
                message.push(lines[i].to_owned());
                i += 1;
            }
            let text = format!("{fail_line}\n{line}\n{}\n", message.join("\n"));
            cases.push(Case {
                file,
                line: at,
                program: line.to_owned(),
                input: String::new(),
                expected: message,
                must_fail: true,
                text,
            });
            must_fail = false;
            continue;
        }
        let input = lines.get(i).copied().unwrap_or("").to_owned();
        i += 1;
        let mut expected = Vec::new();
        while i < lines.len() && !skip(lines[i]) {
            expected.push(lines[i].to_owned());
            i += 1;
        }
        let mut text = format!("{line}\n{input}\n");
        for e in &expected {
            text.push_str(e);
            text.push('\n');
        }
        cases.push(Case {
            file,
            line: at,
            program: line.to_owned(),
            input,
            expected,
            must_fail: false,
            text,
        });
    }
    cases
}

/// Every case of the four files.
pub fn cases(repo: &Path) -> Vec<Case> {
    let dir = dir(repo);
    FILES
        .iter()
        .flat_map(|file| {
            let path = dir.join(file);
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!(
                    "cannot read {}: {e}. jq's test files are read from shared/jq-tests beside the \
                     repository (or $LRO_JQ_TESTS)",
                    path.display()
                )
            });
            parse(file, &text)
        })
        .collect()
}

/// What a run of a program gave.
#[derive(Debug)]
pub enum Ran {
    /// It did not compile.
    CompileError(String),
    /// The input was refused.
    InputError(String),
    /// Outputs as `jq -c` prints them, then the error that ended the run, if any.
    Outputs(Vec<String>, Option<String>),
}

/// How a host's `query` failed.
pub enum Failure {
    /// The filter did not compile.
    Compile(String),
    /// The filter failed at run time.
    Runtime(String),
    /// Anything else: the input refused, a limit.
    Other(String),
}

/// Runs `program` through a host's `query` (values as `jq -c` prints them). After a runtime
/// error it runs again under `try`, which keeps the outputs before the error, as jq's runner
/// sees them.
pub fn run(program: &str, query: impl Fn(&str) -> Result<Vec<String>, Failure>) -> Ran {
    match query(program) {
        Ok(values) => Ran::Outputs(values, None),
        Err(Failure::Compile(e)) => Ran::CompileError(e),
        Err(Failure::Other(e)) => Ran::InputError(e),
        Err(Failure::Runtime(e)) => {
            let wrapped = format!("def lro_case_: {program}; try lro_case_ catch {{\"lro-upstream-error\": .}}");
            let mut outputs = query(&wrapped).unwrap_or_default();
            outputs.retain(|v| !v.starts_with("{\"lro-upstream-error\":"));
            Ran::Outputs(outputs, Some(e))
        }
    }
}

/// Why a case did not pass, or `None` when it passed.
pub fn judge(case: &Case, ran: &Ran) -> Option<String> {
    if case.must_fail {
        return match ran {
            Ran::CompileError(_) => None,
            other => Some(format!("compiled, but jq refuses it ({}): {other:?}", case.expected[0])),
        };
    }
    let (outputs, error) = match ran {
        Ran::Outputs(outputs, error) => (outputs, error),
        other => return Some(format!("{other:?}")),
    };
    for (n, expected) in case.expected.iter().enumerate() {
        let Ok(want) = jaq_json::read::parse_single(expected.as_bytes()) else {
            return Some(format!("expected output {expected:?} is not JSON"));
        };
        let Some(got) = outputs.get(n) else {
            return Some(format!(
                "{} outputs {outputs:?}, then {error:?}; expected {:?}",
                outputs.len(),
                case.expected
            ));
        };
        let got = jaq_json::read::parse_single(got.as_bytes()).unwrap_or_else(|e| panic!("lro printed {got:?}: {e}"));
        if !same(&want, &got) {
            return Some(format!(
                "got {outputs:?} (error {error:?}), expected {:?}",
                case.expected
            ));
        }
    }
    if outputs.len() > case.expected.len() {
        return Some(format!(
            "superfluous outputs: got {outputs:?}, expected {:?}",
            case.expected
        ));
    }
    None
}

/// jq's `jv_equal`: numbers compare as doubles.
fn same(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Num(_), Val::Num(_)) => a == b || as_f64(a) == as_f64(b),
        (Val::Arr(x), Val::Arr(y)) => x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b)),
        (Val::Obj(x), Val::Obj(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w))),
        _ => a == b,
    }
}

fn as_f64(v: &Val) -> f64 {
    lro_core::jq::to_json(v).parse::<f64>().unwrap_or(f64::NAN)
}

/// One line of the skip list: why a case does not pass.
#[derive(Debug)]
pub struct Skip {
    pub reason: String,
    pub why: String,
    pub program: String,
}

/// The reasons a case may be skipped for, as the skip list's header explains them.
pub const REASONS: [&str; 4] = ["sandbox", "jq-1.6", "jaq", "stack"];

/// The skip list, by case id.
pub fn skips(repo: &Path) -> BTreeMap<String, Skip> {
    let path = repo.join("tests/cases/jq/upstream-skips.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut skips = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.splitn(4, '\t').collect();
        let [id, reason, why, program] = fields[..] else {
            panic!(
                "{}:{}: expected `file:line<TAB>reason<TAB>why<TAB>program`",
                path.display(),
                n + 1
            );
        };
        assert!(
            REASONS.contains(&reason),
            "{}:{}: unknown reason {reason:?} (one of {REASONS:?})",
            path.display(),
            n + 1
        );
        let skip = Skip {
            reason: reason.to_owned(),
            why: why.to_owned(),
            program: program.to_owned(),
        };
        assert!(
            skips.insert(id.to_owned(), skip).is_none(),
            "{}:{}: {id} listed twice",
            path.display(),
            n + 1
        );
    }
    skips
}

/// Checks every case against the skip list: a case not on it passes, a case on it does not (so
/// the list stays true), and the list names the program each case has. Returns the failures.
///
/// `stack` cases overflow the component's stack: natively (`native`) they may pass.
pub fn check(cases: &[Case], verdicts: &[Option<String>], skips: &BTreeMap<String, Skip>, native: bool) -> Vec<String> {
    let mut failures = Vec::new();
    let ids: std::collections::BTreeSet<String> = cases.iter().map(Case::id).collect();
    for id in skips.keys() {
        if !ids.contains(id) {
            failures.push(format!("{id}: on the skip list, but no case starts at that line"));
        }
    }
    for (case, verdict) in cases.iter().zip(verdicts) {
        let id = case.id();
        match (skips.get(&id), verdict) {
            (None, Some(why)) => failures.push(format!("{id} `{}`: {why}", case.program)),
            (Some(skip), None) if native && skip.reason == "stack" => {}
            (Some(skip), None) => failures.push(format!(
                "{id} `{}`: passes, but the skip list says {}: {} (remove the line)",
                case.program, skip.reason, skip.why
            )),
            (Some(skip), Some(_)) if skip.program != case.program => failures.push(format!(
                "{id}: the skip list names `{}`, the case is `{}`",
                skip.program, case.program
            )),
            _ => {}
        }
    }
    failures
}
