//! `lro bench`: runs the benchmark (`crate::bench`) and prints or writes its report.

use std::time::Instant;

use anyhow::Context;

use crate::bench;
use crate::flags::BenchArgs;
use crate::output::write_atomically;

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!("lro bench: this is a debug build; run `cargo run --release -p lro-cli -- bench` for real figures");
    }
    let dir = args.dir.clone().unwrap_or_else(bench::default_dir);
    let started = Instant::now();
    let result = bench::run(&dir, args.quick, args.only.as_deref(), args.store.as_deref());
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let figures = result?;
    let command = if args.quick {
        "cargo run --release -p lro-cli -- bench --quick"
    } else {
        "cargo run --release -p lro-cli -- bench --write BENCHMARKS.md"
    };
    let report = format!(
        "# Benchmarks\n\nProduced by `{command}` in {:.0} s on {}. Medians; ratios come from one run, \
         so they hold on a noisy machine where absolute times drift. Regenerate rather than edit; \
         the notes at the end come from `docs/BENCH-NOTES.md`.\n\n{}\n{}",
        started.elapsed().as_secs_f64(),
        bench::environment(),
        figures.markdown,
        include_str!("../../BENCH-NOTES.md")
    );
    print!("{report}");
    if let Some(path) = &args.write {
        write_atomically(path, report.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    if figures.misses > 0 {
        eprintln!("lro bench: {} target(s) missed (see the Targets table)", figures.misses);
    }
    Ok(())
}
