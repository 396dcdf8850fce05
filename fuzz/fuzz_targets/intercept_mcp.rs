//! `lro_core::mcp::intercept` over a fuzzed `CallToolResult`, for a memory tool with records
//! (`recall_memories`), inject (`inject_context`) and a generic tool (`search_repos`), each at
//! threshold 0 (everything non-empty is offloaded) and 50 tokens.
//!
//! The whole input, as UTF-8, is the result JSON.
//! Replayed by lro-core's unit tests (`core/src/fuzz_replay/`, tests/fuzz/intercept_mcp/).
#![no_main]

// The call itself is shared with the replay in lro-core's unit tests (core/src/fuzz_replay/),
// so every finding replays exactly as it was found.
#[path = "../../core/src/fuzz_replay/calls.rs"]
mod fuzz_calls;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_calls::intercept_mcp(data));
