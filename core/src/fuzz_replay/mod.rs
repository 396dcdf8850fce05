//! Replays the fuzz findings and seeds in `tests/fuzz/<target>/` through the code path of each
//! lro-core fuzz target (`fuzz/fuzz_targets/*.rs`), without libFuzzer. Every file must give `Ok`
//! or a typed `Err`; a panic fails the test, which names every file that panicked.
//!
//! Part of lro-core's unit tests (`cargo test -p lro-core fuzz_replay`). See docs/FUZZING.md.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

// Shared with the fuzz targets, which include it by path: a finding replays as it was found.
mod calls;

use calls::{extract_file, filter_input, intercept_mcp, offload_records};

/// The files of `tests/fuzz/<target>/`, sorted by name.
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fuzz")
        .join(target);
    let mut files: Vec<(String, Vec<u8>)> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().expect("a file name").to_string_lossy().into_owned();
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            (name, bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no inputs in {}", dir.display());
    files
}

/// Runs `one` on every input of `target`; fails naming each input that panicked.
fn replay(target: &str, one: fn(&[u8])) {
    let mut panicked = Vec::new();
    for (name, bytes) in inputs(target) {
        if catch_unwind(AssertUnwindSafe(|| one(&bytes))).is_err() {
            panicked.push(name);
        }
    }
    assert!(panicked.is_empty(), "{target}: these inputs panicked: {panicked:?}");
}

#[test]
fn offload_records_inputs_do_not_panic() {
    replay("offload_records", offload_records);
}

#[test]
fn intercept_mcp_inputs_do_not_panic() {
    replay("intercept_mcp", intercept_mcp);
}

#[test]
fn filter_input_inputs_do_not_panic() {
    replay("filter_input", filter_input);
}

#[test]
fn extract_file_inputs_do_not_panic() {
    replay("extract_file", extract_file);
}
