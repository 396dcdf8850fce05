//! `lro_core::extract` and `lro_core::sweep` over a fuzzed offload file: header and record-line
//! parsing, recipes and a custom query.
//!
//! Byte 0 picks the request: 0 to 9 (mod 12) recipe 1 to 10, 10 the query `.`, 11 the query `.`
//! with slurp. The rest is the content of `atlatl-recall-01J0000000000000000000000A.jsonl` in a
//! fresh temporary directory. `now` is 2026-11-23T00:00:01Z, so a header stamped
//! 2026-11-23T00:00:00.000Z is live (ttl 1 h); the sweeps run at `now` and a day later.
//! Replayed by `core/tests/fuzz_replay.rs` (tests/fuzz/extract_file/).
#![no_main]

// The call itself is shared with the replay test (core/tests/fuzz_replay.rs), so every finding
// replays exactly as it was found.
#[path = "../../core/tests/fuzz_calls/mod.rs"]
mod fuzz_calls;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_calls::extract_file(data));
