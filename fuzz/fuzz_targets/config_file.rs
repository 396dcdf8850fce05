//! `lro_host::Settings::load` and `.config()` over a fuzzed TOML file, and the same text as the
//! value of each `ATLATL_PROMPT__OFFLOAD__*` variable.
//!
//! The whole input, as UTF-8, is the file and the variable value.
//! Replayed by `host/tests/fuzz_replay.rs` (tests/fuzz/config_file/).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lro_host::{Overrides, Settings};

const KEYS: [&str; 9] = [
    "ENABLED",
    "THRESHOLD_TOKENS",
    "TTL_SECONDS",
    "OUTPUT_DIR",
    "PREFIX",
    "DESCRIPTOR",
    "SCHEMA_VERSION",
    "NATIVE",
    "RECIPES",
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("lro.toml");
    std::fs::write(&file, text).expect("writing the file");
    // Ok or a typed Err are both fine; only a panic is a finding.
    if let Ok(settings) = Settings::load(Some(&file), &|_| None, &Overrides::default()) {
        let _ = settings.config();
    }
    for key in KEYS {
        let var = format!("ATLATL_PROMPT__OFFLOAD__{key}");
        let env = |name: &str| (name == var).then(|| text.to_owned());
        if let Ok(settings) = Settings::load(None, &env, &Overrides::default()) {
            let _ = settings.config();
        }
    }
});
