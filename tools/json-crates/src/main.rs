//! Whether a well-kept SIMD JSON crate would make lro's offload pass faster, measured rather
//! than guessed: lro's one pass (`lro_core::json_text::split_array`: validates the array, splits
//! it into records, counts each record's characters and finds its `memory`, `score` and
//! `namespace` members) beside what serde_json, simd-json and sonic-rs do with the same text,
//! natively and in a WebAssembly component.
//!
//! The crates do less than lro's pass in every line but the DOM ones: serde_json and sonic-rs
//! split the array into raw records (validating them) without the per-record scan, which lro's
//! pass fuses in; simd-json must parse a mutable copy (it unescapes in place) into its tape or
//! a borrowed DOM. Each figure is the median of seven runs in one process.
//!
//! ```sh
//! cd tools/json-crates
//! cargo run --release -- FILE                          # machine code (x86-64 baseline)
//! RUSTFLAGS="-C target-feature=+simd128" cargo build --release --target wasm32-wasip2
//! cd ../.. && cargo run --release -p lro-host --example run_command -- \
//!     tools/json-crates/target/wasm32-wasip2/release/json-crates.wasm FILE
//! ```
//!
//! FILE: a JSON array of records, such as `lro sample --count 50000 > records.json`.

use std::time::Instant;

use serde_json::value::RawValue;
use simd_json::prelude::ValueAsArray as _;
use sonic_rs::{JsonContainerTrait as _, LazyValue};

/// Runs `f` seven times and prints its median time and throughput over `bytes`; `f` returns the
/// number of records it found, printed to show that every way saw the same array.
fn measure(name: &str, bytes: usize, mut f: impl FnMut() -> usize) {
    const REPS: usize = 7;
    let mut times = Vec::with_capacity(REPS);
    let mut records = 0;
    for _ in 0..REPS {
        let start = Instant::now();
        records = f();
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let median = times[REPS / 2];
    println!(
        "{name:<44} {:>8.1} ms {:>6.0} MB/s  {records} records",
        median * 1e3,
        bytes as f64 / 1e6 / median
    );
}

fn main() {
    let Some(file) = std::env::args().nth(1) else {
        eprintln!("usage: json-crates FILE (a JSON array of records)");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("json-crates: reading {file}: {e}");
            std::process::exit(1);
        }
    };
    let n = text.len();
    measure("lro's pass (split_array)", n, || {
        lro_core::json_text::split_array(&text).map_or(0, |records| records.len())
    });
    measure("serde_json: Vec<&RawValue>", n, || {
        serde_json::from_str::<Vec<&RawValue>>(&text).map_or(0, |records| records.len())
    });
    measure("sonic-rs: Vec<LazyValue>", n, || {
        sonic_rs::from_str::<Vec<LazyValue>>(&text).map_or(0, |records| records.len())
    });
    measure("sonic-rs: Value (a DOM)", n, || {
        sonic_rs::from_str::<sonic_rs::Value>(&text)
            .ok()
            .and_then(|v| v.as_array().map(|records| records.len()))
            .unwrap_or(0)
    });
    measure("simd-json: tape (and the copy it needs)", n, || {
        let mut copy = text.as_bytes().to_vec();
        simd_json::to_tape(&mut copy)
            .ok()
            .and_then(|tape| tape.as_value().as_array().map(|records| records.len()))
            .unwrap_or(0)
    });
    measure("simd-json: borrowed DOM (and the copy)", n, || {
        let mut copy = text.as_bytes().to_vec();
        simd_json::to_borrowed_value(&mut copy)
            .ok()
            .and_then(|v| v.as_array().map(|records| records.len()))
            .unwrap_or(0)
    });
}
