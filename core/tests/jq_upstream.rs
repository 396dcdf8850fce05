//! jq's own test files through `lro_core::query`, natively: the same code the component runs,
//! without building it. `cli/tests/all/jq_upstream.rs` runs them through the component.

mod upstream;

use std::path::Path;

use lro_core::Error;
use upstream::{Failure, Ran};

/// Runs `program` on `input` as `lro query` does.
fn run_native(program: &str, input: &str) -> Ran {
    upstream::run(program, |program| {
        lro_core::query(program, input, false, false, None)
            .map(|out| out.values)
            .map_err(|e| match e {
                Error::InvalidFilter(e) => Failure::Compile(e),
                Error::FilterFailed(e) => Failure::Runtime(e),
                other => Failure::Other(other.to_string()),
            })
    })
}

#[test]
fn jq_upstream_cases_pass_natively_except_the_skip_list() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cases = upstream::cases(&repo);
    // The component has a 1 MiB shadow stack and reports running out of it as a limit error;
    // natively, a debug build's frames are larger, so the cases run on a larger stack.
    let verdicts = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn({
            let cases = cases.clone();
            move || verdicts(&cases)
        })
        .unwrap()
        .join()
        .unwrap();
    let failures = upstream::check(&cases, &verdicts, &upstream::skips(&repo), true);
    let passed = verdicts.iter().filter(|v| v.is_none()).count();
    println!("{passed} of {} upstream cases pass natively", cases.len());
    assert!(
        failures.is_empty(),
        "{} cases disagree with the skip list:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn verdicts(cases: &[upstream::Case]) -> Vec<Option<String>> {
    cases
        .iter()
        .map(|case| {
            // A panic is a bug to fix (in the component it is a trap), not a reason to stop:
            // the other cases still run, and the panic is this case's failure.
            match std::panic::catch_unwind(|| run_native(&case.program, &case.input)) {
                Ok(ran) => upstream::judge(case, &ran),
                Err(_) => Some("panicked".to_owned()),
            }
        })
        .collect()
}
