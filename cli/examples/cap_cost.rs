//! What the storage caps cost an offload: 500 records offloaded into a directory that already
//! holds 0, 100 or 1,000 LRO files, with no cap, `max_files` only, and both caps (the default).
//! `max_files` needs the directory's names; `max_bytes` also one `stat` per LRO file.
//!
//!     cargo run --release -p lro-cli --example cap_cost

use lro_host::{Config, Operation, Options, Request, Runtime};

fn request(records: &str) -> Request {
    Request {
        operation: Operation::Recall,
        query: None,
        detail: None,
        records: records.into(),
        text: None,
    }
}

/// The median time of 31 offloads of `records` into a directory holding `existing` LRO files.
fn median_ms(runtime: &Runtime, base: &Config, existing: usize, records: &str) -> f64 {
    // 0700: a directory others can enter is refused.
    let dir = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .expect("a temporary directory");
    let config = Config {
        output_dir: dir.path().to_str().expect("UTF-8").to_owned(),
        ..base.clone()
    };
    let one = r#"[{"id":"a","namespace":"n","title":"a title long enough to be offloaded at this threshold"}]"#;
    for _ in 0..existing {
        runtime.offload(&config, &request(one)).expect("offload");
    }
    let mut times: Vec<f64> = (0..31)
        .map(|_| {
            let start = std::time::Instant::now();
            let outcome = runtime.offload(&config, &request(records)).expect("offload");
            assert!(matches!(outcome, lro_host::Outcome::Offloaded(_)), "{outcome:?}");
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[15]
}

fn main() {
    let runtime = Runtime::new(Options {
        cache_dir: Options::default_cache_dir(),
        ..Options::default()
    })
    .expect("the component loads");
    let records: Vec<serde_json::Value> = (0..500)
        .map(|i| serde_json::json!({"id": format!("m{i}"), "namespace": "_semantic/x", "title": format!("Title {i} ").repeat(5)}))
        .collect();
    let records = serde_json::to_string(&records).expect("JSON");
    let mut base = runtime.defaults().expect("defaults");
    base.threshold_tokens = 10;
    base.max_files = 5000; // above every count here: measure the check, not evictions
    let settings = [
        ("no cap", 0, 0),
        ("max_files only", 0, 5000),
        ("both caps", base.max_bytes, 5000),
    ];
    println!("| LRO files in the directory | no cap | max_files only | both caps |\n|---:|---:|---:|---:|");
    for existing in [0, 100, 1000] {
        let cells: Vec<String> = settings
            .iter()
            .map(|&(_, max_bytes, max_files)| {
                let config = Config {
                    max_bytes,
                    max_files,
                    ..base.clone()
                };
                format!("{:.2} ms", median_ms(&runtime, &config, existing, &records))
            })
            .collect();
        println!("| {existing} | {} |", cells.join(" | "));
    }
}
