//! `lro_core::query` (the `lro query` path): a jq filter over JSON input text.
//!
//! The input is split at its first NUL byte: the filter before it, the JSON input after it. Each
//! is run plain and with slurp + raw output, capped at 200 estimated tokens.
//!
//! A native run has no time or stack limit (the component is stopped by the host), so filters
//! that can run without bound are skipped: see `UNBOUNDED` in the shared call.
//! Replayed by lro-core's unit tests (`core/src/fuzz_replay/`, tests/fuzz/filter_input/).
#![no_main]

// The call itself is shared with the replay in lro-core's unit tests (core/src/fuzz_replay/),
// so every finding replays exactly as it was found.
#[path = "../../core/src/fuzz_replay/calls.rs"]
mod fuzz_calls;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_calls::filter_input(data));
