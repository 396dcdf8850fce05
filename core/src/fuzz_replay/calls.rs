//! What each lro-core fuzz target runs on one input, shared by the targets
//! (`fuzz/fuzz_targets/*.rs`, under libFuzzer) and by the replay in lro-core's unit tests
//! (`core/src/fuzz_replay/mod.rs`: every file of `tests/fuzz/<target>/`), so a finding replays
//! exactly as found. Both compile this file as a module of their own crate, so it names lro-core
//! `lro_core` and uses nothing else of either crate.
//! Each function returns normally for `Ok` or a typed `Err`; a panic is a finding.

#![allow(dead_code, reason = "each fuzz target uses one of these")]

use std::fs;

use lro_core::json_text::{Valid, parse};
use lro_core::mcp::{ToolCall, intercept};
use lro_core::offload::Request;
use lro_core::{Config, DescriptorStyle, Detail, Error, ExtractRequest, Operation, RecipeLibrary};

/// An `Err` must be one of the crate's typed errors with a message.
fn typed<T>(result: Result<T, Error>) {
    if let Err(e) = result {
        assert!(!e.to_string().is_empty(), "an error without a message: {e:?}");
    }
}

fn temp_config(dir: &tempfile::TempDir) -> Config {
    Config {
        output_dir: dir.path().to_str().expect("a UTF-8 temporary path").to_owned(),
        ..Config::default()
    }
}

/// fuzz/fuzz_targets/offload_records.rs
pub fn offload_records(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(records) = std::str::from_utf8(rest) else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = Config {
        threshold_tokens: u32::from(flags & 0x3f) * 4,
        descriptor: if flags & 0x40 != 0 {
            DescriptorStyle::Bare
        } else {
            DescriptorStyle::Full
        },
        recipes: if flags & 0x80 != 0 {
            RecipeLibrary::V1
        } else {
            RecipeLibrary::V2
        },
        extract_tool: flags & 0x80 != 0,
        ..temp_config(&dir)
    };
    for operation in [Operation::Recall, Operation::Search, Operation::List, Operation::Inject] {
        for detail in [None, Some(Detail::Light), Some(Detail::Medium), Some(Detail::Full)] {
            let request = Request {
                operation,
                query: Some("fuzz query"),
                detail,
                records,
                text: (operation == Operation::Inject).then_some("budgeted context"),
            };
            typed(lro_core::offload(&config, &request, &mut |_| {}));
        }
    }
}

/// fuzz/fuzz_targets/intercept_mcp.rs
pub fn intercept_mcp(data: &[u8]) {
    let Ok(result) = std::str::from_utf8(data) else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    for threshold in [0, 50] {
        let config = Config {
            threshold_tokens: threshold,
            ..temp_config(&dir)
        };
        for tool in ["recall_memories", "inject_context", "search_repos"] {
            let call = ToolCall {
                tool,
                arguments: "{}",
                result: result.into(),
                meta: None,
            };
            let outcome = intercept(&config, call, &mut |_| {});
            // What is forwarded is JSON, and every line written is one lro_extract reads: data
            // copied as text must stay valid.
            if let Ok(lro_core::mcp::ToolOutcome::Offloaded { result, files, .. }) = &outcome {
                parse::<Valid>(result, lro_core::mcp::RESULT_DEPTH).expect("the forwarded result is JSON");
                for file in files {
                    let text = fs::read_to_string(file).expect("an offloaded file");
                    for line in text.lines() {
                        parse::<Valid>(line, lro_core::jq::MAX_DEPTH)
                            .unwrap_or_else(|e| panic!("{file}: a line that is not JSON ({e}): {line}"));
                    }
                }
            }
            typed(outcome);
        }
    }
}

/// Words that let a filter recurse, loop or grow without bound; such inputs are skipped.
const UNBOUNDED: [&str; 17] = [
    "def",
    "recurse",
    "repeat",
    "while",
    "until",
    "range",
    "limit",
    "..",
    "input",
    "splits",
    "walk",
    "env",
    "$__loc__",
    "getpath",
    "paths",
    "combinations",
    "@base32d",
];

/// fuzz/fuzz_targets/filter_input.rs
pub fn filter_input(data: &[u8]) {
    let Some(nul) = data.iter().position(|&b| b == 0) else {
        return;
    };
    let (Ok(filter), Ok(input)) = (std::str::from_utf8(&data[..nul]), std::str::from_utf8(&data[nul + 1..])) else {
        return;
    };
    if filter.len() > 200 || input.len() > 4096 || UNBOUNDED.iter().any(|w| filter.contains(w)) {
        return;
    }
    for (slurp, raw) in [(false, false), (true, true)] {
        typed(lro_core::query(filter, input, slurp, raw, Some(200)));
    }
}

/// A name the custodian recognises as an offload file.
const EXTRACT_NAME: &str = "atlatl-recall-01J0000000000000000000000A.jsonl";
/// 2026-11-23T00:00:01Z.
const NOW_MS: u64 = 1_795_392_001_000;

/// fuzz/fuzz_targets/extract_file.rs
pub fn extract_file(data: &[u8]) {
    let Some((&pick, content)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join(EXTRACT_NAME);
    fs::write(&path, content).expect("writing the file");
    let config = temp_config(&dir);
    let path = path.to_str().expect("a UTF-8 temporary path");
    let pick = pick % 12;
    let request = match pick {
        0..=9 => ExtractRequest {
            path,
            recipe: Some(u32::from(pick) + 1),
            ..Default::default()
        },
        _ => ExtractRequest {
            path,
            query: Some("."),
            slurp: pick == 11,
            ..Default::default()
        },
    };
    typed(lro_core::extract(&config, &request, NOW_MS));
    typed(lro_core::sweep(&config, NOW_MS, &mut |_| {}));
    typed(lro_core::sweep(&config, NOW_MS + 86_400_000, &mut |_| {}));
}
