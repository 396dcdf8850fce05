//! Replays the fuzz findings and seeds in `tests/fuzz/config_file/` through the code path of the
//! `config_file` fuzz target (`fuzz/fuzz_targets/config_file.rs`), without libFuzzer: each file
//! as a TOML config file, as JSON arguments, as the value of each `ATLATL_PROMPT__OFFLOAD__*`
//! variable and as each flag. Every file must give `Ok` or an `InvalidConfig` error; a panic
//! fails the test, which names every file that panicked.
//!
//! `cargo test -p lro-cli --test all fuzz_replay`. See docs/FUZZING.md.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use crate::fuzz_calls::config_file;

#[test]
fn config_file_inputs_do_not_panic() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fuzz/config_file");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no inputs in {}", dir.display());
    let mut panicked = Vec::new();
    for path in files {
        let bytes = fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        if catch_unwind(AssertUnwindSafe(|| config_file(&bytes))).is_err() {
            panicked.push(path.file_name().expect("a file name").to_string_lossy().into_owned());
        }
    }
    assert!(panicked.is_empty(), "config_file: these inputs panicked: {panicked:?}");
}
