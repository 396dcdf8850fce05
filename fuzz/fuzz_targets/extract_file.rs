//! `lro_core::extract` and `lro_core::sweep` over a fuzzed offload file: header and record-line
//! parsing, recipes and a custom query.
//!
//! Byte 0 picks the request: 0 to 9 (mod 12) recipe 1 to 10, 10 the query `.`, 11 the query `.`
//! with slurp. The rest is the content of `atlatl-recall-01J0000000000000000000000A.jsonl` in a
//! fresh temporary directory. `now` is 2026-11-23T00:00:01Z, so a header stamped
//! 2026-11-23T00:00:00.000Z is live (ttl 1 h); the sweeps run at `now` and a day later.
//! Replayed by lro-core's unit tests (`core/src/fuzz_replay/`, tests/fuzz/extract_file/).
#![no_main]

// The call itself is shared with the replay in lro-core's unit tests (core/src/fuzz_replay/),
// so every finding replays exactly as it was found.
#[path = "../../core/src/fuzz_replay/calls.rs"]
mod fuzz_calls;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_calls::extract_file(data));
