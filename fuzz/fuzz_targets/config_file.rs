//! `lro_core::layers::load` (the component's `configuration.load`) over a fuzzed TOML file, and
//! the same text as JSON arguments, as the value of each `ATLATL_PROMPT__OFFLOAD__*` variable,
//! as each key's flag and as each key's JSON value.
//!
//! The whole input, as UTF-8, is the file, the variable value and the flag value.
//! Replayed by `cli/tests/all/fuzz_replay.rs` (tests/fuzz/config_file/).
#![no_main]

// The call itself is shared with the replay test (cli/tests/all/fuzz_replay.rs), so every
// finding replays exactly as it was found.
#[path = "../../cli/tests/all/fuzz_calls/mod.rs"]
mod fuzz_calls;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_calls::config_file(data));
