//! `lro bench`'s offload section: writing result sets of each size and detail, through the
//! component and as machine code.

use super::*;

pub(super) fn section(s: &Setup<'_>, out: &mut String, targets: &mut Vec<Target>) -> anyhow::Result<()> {
    let Setup {
        runtime,
        config,
        machine,
        sizes,
        work,
        quick,
        ..
    } = *s;
    writeln!(
        out,
        "## Offload\n\nFull-detail records (`lro sample`), operation `recall`, threshold 1,600 tokens, full \
     descriptor. *Component*: `Runtime::offload` in the Rust host: calls of at most 1 MiB of \
     records (500) run in the instance it keeps, larger ones in a fresh Store and instance each. \
     *Machine code*: the same code (`lro-core`) compiled for this machine and called directly. \
     Each call writes a new file; files are deleted between calls, outside the timing.\n"
    )?;
    writeln!(
        out,
        "| records | input | component | MB/s | machine code | MB/s | component / machine code |\n|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    for &n in sizes {
        let input = records(Detail::Full, n);
        let req = request(Detail::Full, &input);
        let machine_req = lro_core::offload::Request {
            operation: lro_core::Operation::Recall,
            query: Some("caching"),
            detail: Some(lro_core::Detail::Full),
            records: &input,
            text: None,
        };
        let reps = if quick { 3 } else { reps_for(n) };
        let (mut wasm, mut nat) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            let start = Instant::now();
            let outcome = runtime.offload(config, &req)?;
            wasm.push(start.elapsed());
            if !matches!(outcome, Outcome::Offloaded(_)) {
                bail!("{n} records were not offloaded");
            }
            remove_all_in(work)?;
            let start = Instant::now();
            let outcome = lro_core::offload::offload(machine, &machine_req, &mut |_| {})?;
            nat.push(start.elapsed());
            if !matches!(outcome, lro_core::Outcome::Offloaded { .. }) {
                bail!("{n} records were not offloaded by the machine code");
            }
            remove_all_in(work)?;
        }
        let (w, v) = (median(wasm), median(nat));
        let ratio = w.as_secs_f64() / v.as_secs_f64();
        writeln!(
            out,
            "| {n} | {:.1} KB | {} | {:.0} | {} | {:.0} | {ratio:.2}× |",
            input.len() as f64 / 1e3,
            ms(w),
            mb_per_s(input.len(), w),
            ms(v),
            mb_per_s(input.len(), v)
        )?;
        if n == 500 {
            targets.push(Target {
                what: "offload of 500 full-detail records, median, Rust host".into(),
                figure: format!("{} (target ≤ 1.5 ms; the paper: 23.9 ms)", ms(w)),
                met: w <= Duration::from_micros(1500),
            });
        }
        if n == 50_000 {
            let (component, machine) = (mb_per_s(input.len(), w), mb_per_s(input.len(), v));
            targets.push(Target {
                what: "offload at 50,000 records: throughput of the component".into(),
                figure: format!("{component:.0} MB/s (target ≥ 600 MB/s)"),
                met: component >= 600.0,
            });
            targets.push(Target {
                what: "offload at 50,000 records: throughput of the machine code".into(),
                figure: format!("{machine:.0} MB/s (target ≥ 1000 MB/s)"),
                met: machine >= 1000.0,
            });
            targets.push(Target {
                what: "offload at 50,000 records: component / machine code".into(),
                figure: format!("{ratio:.2}× (target ≤ 1.5×)"),
                met: ratio <= 1.5,
            });
        }
    }
    Ok(())
}
