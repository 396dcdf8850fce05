//! Runs one extraction (or offload) in a given component many times, for `perf record` with
//! function names: build the guest without stripping its name section, then
//! `LRO_PERF_MAP=1 perf record target/release/examples/profile GUEST.wasm DIR FILE RECIPE [REPS]`.
//!
//! ```sh
//! CARGO_PROFILE_RELEASE_STRIP=false cargo build -p lro-guest --target wasm32-wasip2 --release \
//!     --target-dir target/prof-guest
//! cargo build --release -p lro-host --example profile
//! ```

use anyhow::{Context, Result};
use lro_host::{ExtractRequest, Options, Runtime, Settings};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [wasm, dir, file, recipe, rest @ ..] = &args[..] else {
        anyhow::bail!("usage: profile GUEST.wasm DIR FILE RECIPE [REPS]");
    };
    let reps: u32 = rest.first().map_or(Ok(5), |s| s.parse())?;
    let bytes = std::fs::read(wasm).with_context(|| format!("reading {wasm}"))?;
    let runtime = Runtime::from_bytes(
        &bytes,
        Options {
            deadline: std::time::Duration::from_secs(60),
            filter_deadline: std::time::Duration::from_secs(60),
            ..Options::default()
        },
    )?;
    let config = Settings::default().with_output_dir(dir).config()?;
    let request = ExtractRequest {
        path: file.clone(),
        recipe: Some(recipe.parse()?),
        query: None,
        params: None,
        slurp: false,
        limit: Some(u32::MAX),
    };
    let start = std::time::Instant::now();
    for _ in 0..reps {
        runtime.extract(&config, &request)?;
    }
    eprintln!("{:?} per extraction", start.elapsed() / reps);
    Ok(())
}
