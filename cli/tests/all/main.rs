//! The Rust integration tests, as one binary (each binary links wasmtime again: build time and
//! disk). They drive the component through the `lro-host` library and the `lro` command as a
//! user meets them. Shared cases and their expected outputs are in `tests/cases/`;
//! `LRO_BLESS=1 cargo test -p lro-cli --test all shared_cases` rewrites the expected files.

mod api;
mod cli;
mod common;
mod corpus;
mod extract;
mod fuzz_calls;
mod fuzz_replay;
mod jq_cases;
mod jq_upstream;
mod mcp_cases;
mod proxy;
mod recipes_jq;
mod rmcp_server;
mod rmcp_store;
mod robustness;
mod shared_cases;
mod sweep;
mod vendor;
