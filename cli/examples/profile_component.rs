//! Runs one extraction (a recipe number, or a query) or offload in a given component many times,
//! for `perf record` with
//! function names: build the guest without stripping its name section, then
//! `LRO_PERF_MAP=1 perf record target/release/examples/profile_component GUEST.wasm DIR FILE RECIPE [REPS]`.
//! With `offload` for RECIPE, FILE is a JSON array of full-detail records (`lro sample`) to offload;
//! with `estimate`, FILE's text is passed to `interceptor.estimate`, which measures what carrying
//! a large argument into a fresh instance costs (compare `estimate` in the Python binding).
//! `LRO_KEPT_INSTANCES=0` gives every call a fresh instance (`Options::kept_instances`).
//! `LRO_MACHINE=1` runs the same extraction as machine code (`lro_core::extractor::extract`)
//! instead, so the two profiles can be set side by side function by function.
//!
//! ```sh
//! CARGO_PROFILE_RELEASE_STRIP=false cargo build -p lro-guest --target wasm32-wasip2 --release \
//!     --target-dir target/prof-guest
//! cargo build --release -p lro-cli --example profile_component
//! ```

use anyhow::{Context, Result};
use lro_host::{Config, Detail, ExtractRequest, Operation, Options, Outcome, Request, Runtime};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [wasm, dir, file, recipe, rest @ ..] = &args[..] else {
        anyhow::bail!("usage: profile_component GUEST.wasm DIR FILE RECIPE [REPS]");
    };
    let reps: u32 = rest.first().map_or(Ok(5), |s| s.parse())?;
    let bytes = std::fs::read(wasm).with_context(|| format!("reading {wasm}"))?;
    let runtime = Runtime::from_bytes(
        &bytes,
        Options {
            deadline: std::time::Duration::from_secs(60),
            filter_deadline: std::time::Duration::from_secs(60),
            // LRO_KEPT_INSTANCES=0 gives every call a fresh instance, to compare.
            kept_instances: match std::env::var("LRO_KEPT_INSTANCES") {
                Ok(n) => n.parse().context("LRO_KEPT_INSTANCES")?,
                Err(_) => Options::default().kept_instances,
            },
            ..Options::default()
        },
    )?;
    let config = Config {
        output_dir: dir.clone(),
        ..runtime.defaults()?
    };
    if recipe == "estimate" {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
        let start = std::time::Instant::now();
        for _ in 0..reps {
            runtime.estimate(&text)?;
        }
        eprintln!("{:?} per estimate", start.elapsed() / reps);
        return Ok(());
    }
    if recipe == "offload" {
        let request = Request {
            operation: Operation::Recall,
            query: None,
            detail: Some(Detail::Full),
            records: std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?,
            text: None,
        };
        let start = std::time::Instant::now();
        for _ in 0..reps {
            if let Outcome::Offloaded(o) = runtime.offload(&config, &request)? {
                std::fs::remove_file(o.path)?;
            }
        }
        eprintln!("{:?} per offload", start.elapsed() / reps);
        return Ok(());
    }
    // A number is a recipe; anything else a query, run with the default output cap.
    let (number, query, limit) = match recipe.parse::<u32>() {
        Ok(n) => (Some(n), None, Some(u32::MAX)),
        Err(_) => (None, Some(recipe.clone()), None),
    };
    let request = ExtractRequest {
        path: file.clone(),
        recipe: number,
        query,
        params: None,
        slurp: false,
        limit,
    };
    let start = std::time::Instant::now();
    if std::env::var_os("LRO_MACHINE").is_some() {
        let machine = lro_core::Config {
            output_dir: config.output_dir.clone(),
            ..lro_core::Config::default()
        };
        let request = lro_core::extractor::ExtractRequest {
            path: &request.path,
            recipe: request.recipe,
            query: request.query.as_deref(),
            params: None,
            slurp: false,
            limit: request.limit,
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_millis() as u64;
        for _ in 0..reps {
            lro_core::extractor::extract(&machine, &request, now)?;
        }
    } else {
        for _ in 0..reps {
            runtime.extract(&config, &request)?;
        }
    }
    eprintln!("{:?} per extraction", start.elapsed() / reps);
    Ok(())
}
