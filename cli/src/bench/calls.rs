//! `lro bench`'s per-call section: the cost of a call with a fresh or kept instance, and of
//! loading the component (compiling it, or reading the precompiled artifact from the cache).

use super::*;

pub(super) fn section(s: &Setup<'_>, out: &mut String, targets: &mut Vec<Target>) -> anyhow::Result<()> {
    let Setup {
        runtime,
        dir,
        options,
        quick,
        ..
    } = *s;
    writeln!(out, "\n## Per call and loading\n")?;
    writeln!(out, "| what | median |\n|---|---:|")?;
    let reps = if quick { 200 } else { 2_000 };
    let fresh = runtime.with_options(Options {
        kept_instances: 0,
        ..options.clone()
    });
    let time_calls = |runtime: &Runtime| -> anyhow::Result<Duration> {
        let mut calls = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = Instant::now();
            runtime.estimate("")?;
            calls.push(start.elapsed());
        }
        Ok(median(calls))
    };
    let per_call = time_calls(&fresh)?;
    let kept = time_calls(runtime)?;
    writeln!(
        out,
        "| a call: fresh Store + instantiation + `estimate(\"\")` | {} |",
        ms(per_call)
    )?;
    writeln!(
        out,
        "| a call in a kept instance (`Options::kept_instances`): `estimate(\"\")` | {} |",
        ms(kept)
    )?;
    targets.push(Target {
        what: "per-call Store + instantiation (with an empty call)".into(),
        figure: format!("{} (target ≤ 50 µs)", ms(per_call)),
        met: per_call <= Duration::from_micros(50),
    });
    let mut compile = Vec::new();
    let mut cached = Vec::new();
    let fresh_cache = dir.join("cache-bench");
    for i in 0..if quick { 2 } else { 5 } {
        let start = Instant::now();
        Runtime::new(Options {
            cache_dir: None,
            ..options.clone()
        })?;
        compile.push(start.elapsed());
        if i == 0 {
            // Fills the cache the loads below read.
            Runtime::new(Options {
                cache_dir: Some(fresh_cache.clone()),
                ..options.clone()
            })?;
        }
        for _ in 0..10 {
            let start = Instant::now();
            Runtime::new(Options {
                cache_dir: Some(fresh_cache.clone()),
                ..options.clone()
            })?;
            cached.push(start.elapsed());
        }
    }
    let (compile, cached) = (median(compile), median(cached));
    writeln!(out, "| load: compile the component (no cache) | {} |", ms(compile))?;
    writeln!(
        out,
        "| load: precompiled artifact from the disk cache | {} |",
        ms(cached)
    )?;
    let _ = std::fs::remove_dir_all(&fresh_cache);
    targets.push(Target {
        what: "loading a cached precompiled component".into(),
        figure: format!("{} (target ≤ 5 ms; compiling: {})", ms(cached), ms(compile)),
        met: cached <= Duration::from_millis(5),
    });
    Ok(())
}
