//! `lro_host::Settings::load` and `.config()` over a fuzzed TOML file, and the same text as the
//! value of each `ATLATL_PROMPT__OFFLOAD__*` variable.
//!
//! The whole input, as UTF-8, is the file and the variable value.
//! Replayed by `host/tests/fuzz_replay.rs` (tests/fuzz/config_file/).
#![no_main]

// The call itself is shared with the replay test (host/tests/fuzz_replay.rs), so every finding
// replays exactly as it was found.
#[path = "../../host/tests/fuzz_calls/mod.rs"]
mod fuzz_calls;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_calls::config_file(data));
