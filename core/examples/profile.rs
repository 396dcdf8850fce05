//! Runs lro-core's offload and extraction in a loop, outside the component, for `perf record`:
//! `cargo build --release -p lro-core --features sample --example profile && perf record -g target/release/examples/profile offload`;
//! `... profile extract N RECIPE` extracts recipe RECIPE (default 2) from one file of N records;
//! `... profile extract N FILTER` runs the jq filter over the slurped records.

use lro_core::{Config, Detail, Operation};

fn main() {
    let what = std::env::args().nth(1).unwrap_or_else(|| "offload".into());
    let n: usize = std::env::args().nth(2).map_or(500, |s| s.parse().unwrap());
    // A number is a recipe; anything else a query over the slurped records.
    let which = std::env::args().nth(3).unwrap_or_else(|| "2".into());
    let recipe: Option<u32> = which.parse().ok();
    let dir = std::env::temp_dir().join(format!("lro-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = Config {
        output_dir: dir.to_str().unwrap().to_owned(),
        ..Config::default()
    };
    let records = serde_json::to_string(&lro_core::sample::records(Detail::Full, n, 42, false)).unwrap();
    let request = lro_core::offload::Request {
        operation: Operation::Recall,
        query: Some("caching"),
        detail: Some(Detail::Full),
        records: &records,
        text: None,
    };
    let offload = || match lro_core::offload::offload(&config, &request, &mut |_| {}).unwrap() {
        lro_core::Outcome::Offloaded { path, .. } => path,
        _ => panic!("the sample is large enough to offload"),
    };
    // LRO_REPS sets the repetitions, e.g. enough for the loop to outweigh building the records.
    let reps = std::env::var("LRO_REPS").map_or(20_000 / n.max(1) + 1, |r| r.parse().unwrap());
    let start = std::time::Instant::now();
    if what == "extract" {
        let path = offload();
        let req = lro_core::ExtractRequest {
            path: &path,
            recipe,
            query: recipe.is_none().then_some(which.as_str()),
            params: None,
            slurp: recipe.is_none(),
            limit: Some(u32::MAX),
        };
        // Extraction is slower per record than offload: more reps so that it dominates the profile.
        for _ in 0..reps * 10 {
            lro_core::extract(&config, &req, 0).unwrap();
        }
    } else {
        for _ in 0..reps {
            std::fs::remove_file(offload()).unwrap();
        }
    }
    let reps = if what == "extract" { reps * 10 } else { reps };
    eprintln!("{what} {n}: {:?} per rep", start.elapsed() / reps as u32);
    std::fs::remove_dir_all(dir).unwrap();
}
