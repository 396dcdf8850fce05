//! `lro_core::offload` over fuzzed `records` JSON: every operation and detail level, with a small
//! threshold so most inputs are written to a file (in a fresh temporary directory).
//!
//! Byte 0 picks the config: bits 0-5 the threshold (0, 4, ..., 252 tokens), bit 6 the bare
//! descriptor, bit 7 the v1 recipe library and `extract_tool`. The rest, as UTF-8, is the records.
//! Replayed by lro-core's unit tests (`core/src/fuzz_replay/`, tests/fuzz/offload_records/).
#![no_main]

// The call itself is shared with the replay in lro-core's unit tests (core/src/fuzz_replay/),
// so every finding replays exactly as it was found.
#[path = "../../core/src/fuzz_replay/calls.rs"]
mod fuzz_calls;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_calls::offload_records(data));
