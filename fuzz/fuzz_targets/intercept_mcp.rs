//! `lro_core::mcp::intercept` over a fuzzed `CallToolResult`, for a memory tool with records
//! (`recall_memories`), inject (`inject_context`) and a generic tool (`search_repos`), each at
//! threshold 0 (everything non-empty is offloaded) and 50 tokens.
//!
//! The whole input, as UTF-8, is the result JSON.
//! Replayed by `core/tests/fuzz_replay.rs` (tests/fuzz/intercept_mcp/).
#![no_main]

// The call itself is shared with the replay test (core/tests/fuzz_replay.rs), so every finding
// replays exactly as it was found.
#[path = "../../core/tests/fuzz_calls/mod.rs"]
mod fuzz_calls;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_calls::intercept_mcp(data));
