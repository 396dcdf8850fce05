//! Runs the jq-format cases in `tests/cases/jq/` through `lro query`, and checks each against
//! the system jq (1.6): same results, except for the documented differences, which must differ.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[derive(Debug, Default)]
struct Case {
    file: String,
    line: usize,
    filter: String,
    input: String,
    expected: Vec<String>,
    fail: bool,
    slurp: bool,
    raw: bool,
    differs: Option<String>,
}

fn parse(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap();
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut cases = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut case = Case {
            file: file.clone(),
            line: n + 1,
            ..Case::default()
        };
        let mut current = line;
        while let Some(directive) = current.strip_prefix("%%") {
            match directive.split_once(':').map_or(directive, |(d, _)| d).trim() {
                "FAIL" => case.fail = true,
                "SLURP" => case.slurp = true,
                "RAW" => case.raw = true,
                "DIFFERS" => case.differs = Some(directive.split_once(':').unwrap().1.trim().to_owned()),
                other => panic!("{file}:{}: unknown directive %%{other}", n + 1),
            }
            current = lines
                .next()
                .unwrap_or_else(|| panic!("{file}: a directive at the end"))
                .1;
        }
        case.filter = current.to_owned();
        case.input = lines
            .next()
            .unwrap_or_else(|| panic!("{file}:{}: no input", n + 1))
            .1
            .to_owned();
        while let Some((_, l)) = lines.peek() {
            if l.trim().is_empty() {
                break;
            }
            case.expected.push(lines.next().unwrap().1.to_owned());
        }
        cases.push(case);
    }
    cases
}

fn run(program: &Path, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .env("LRO_CACHE_DIR", crate::common::cache_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}

fn flags(case: &Case) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if case.slurp {
        flags.push("--slurp");
    }
    if case.raw {
        flags.push("--raw-output");
    }
    flags
}

/// Whether an output matches the case's expectation.
fn matches(case: &Case, out: &Output) -> bool {
    let stdout = String::from_utf8_lossy(&out.stdout);
    if case.fail {
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains(&case.expected[0])
    } else {
        out.status.success() && stdout.lines().collect::<Vec<_>>() == case.expected
    }
}

#[test]
fn jq_cases_run_through_lro_query_and_agree_with_jq_except_where_documented() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/jq");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "test"));
    files.sort();
    let lro = Path::new(env!("CARGO_BIN_EXE_lro"));
    crate::common::assert_reference_jq();
    let jq = Path::new("jq");
    let (mut count, mut failures) = (0, Vec::new());
    for case in files.iter().flat_map(|f| parse(f)) {
        count += 1;
        let place = format!("{}:{} `{}`", case.file, case.line, case.filter);
        let mut args = vec!["query"];
        args.extend(flags(&case));
        args.extend(["--", case.filter.as_str()]);
        let ours = run(lro, &args, &case.input);
        if case.fail && ours.status.code() != Some(1) {
            failures.push(format!(
                "{place}: a failing filter must exit 1, got {:?}",
                ours.status.code()
            ));
            continue;
        }
        if !matches(&case, &ours) {
            failures.push(format!(
                "{place}: lro gave {:?} (stderr {:?}), expected {:?}",
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&ours.stderr),
                case.expected
            ));
            continue;
        }
        let mut jq_args = vec!["-c"];
        jq_args.extend(flags(&case));
        jq_args.push(case.filter.as_str());
        let reference = run(jq, &jq_args, &case.input);
        let jq_agrees = if case.fail {
            !reference.status.success()
        } else {
            matches(&case, &reference)
        };
        match (&case.differs, jq_agrees) {
            (None, false) => failures.push(format!(
                "{place}: jq 1.6 gave {:?} (stderr {:?}); add %%DIFFERS with the reason if that is intended",
                String::from_utf8_lossy(&reference.stdout),
                String::from_utf8_lossy(&reference.stderr)
            )),
            (Some(why), true)
                if !case.fail || String::from_utf8_lossy(&reference.stderr).contains(&case.expected[0]) =>
            {
                failures.push(format!("{place}: marked as a difference ({why}) but jq 1.6 agrees"))
            }
            _ => {}
        }
    }
    assert!(count >= 100, "only {count} cases found in {}", dir.display());
    assert!(
        failures.is_empty(),
        "{} of {count} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
