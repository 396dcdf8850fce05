//! `lro bench`'s store section (`--store s3://...`): a tool result offloaded through
//! [`Offloader::intercept`] to the offload directory alone and written through to the store,
//! and the first extraction on another replica, whose cache does not have the file yet.

use std::sync::Arc;

use lro_host::mcp::{Offloader, Stored};
use lro_host::store::Store;
use lro_host::{ToolCall, ToolOutcome};

use super::*;

pub(super) fn section(s: &Setup<'_>, out: &mut String, url: &str) -> anyhow::Result<()> {
    let Setup {
        runtime,
        config,
        work,
        quick,
        ..
    } = *s;
    // Two clients of the store, as two replicas have.
    let (store_a, store_b) = (Store::new(url, 4 << 30, 100_000)?, Store::new(url, 4 << 30, 100_000)?);
    store_a.check()?;
    let offloader = |name: &str, store: Option<Store>| -> anyhow::Result<Offloader> {
        let dir = work.join(name);
        std::fs::create_dir_all(&dir)?;
        // An offload directory others can enter is refused (docs/SECURITY.md).
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        let mut config = config.clone();
        config.output_dir = dir.to_str().context("the bench directory must be UTF-8")?.to_owned();
        let prepared = Offloader::prepare(runtime.clone(), config)?;
        Ok(Offloader {
            handles: true,
            store: store.map(|store| Stored {
                store: Arc::new(store),
                scope: "bench".to_owned(),
                sweeps: false,
            }),
            ..prepared
        })
    };
    let (local, a, b) = (
        offloader("local", None)?,
        offloader("a", Some(store_a))?,
        offloader("b", Some(store_b))?,
    );
    writeln!(
        out,
        "## Store\n\nA `recall_memories` result of full-detail records offloaded by `Offloader::intercept` (what \
         `lro proxy` and `WithLro` call) to the offload directory alone, and to the directory and the \
         store `{url}` (the PUT included; multipart above 8 MiB). Then the first `lro_extract` of its \
         handle (`length`, slurped) on another replica whose cache does not hold it (the GET included), \
         and the same extraction again there, from its cache.\n"
    )?;
    writeln!(
        out,
        "| records | file | offload, directory | offload, directory and store | store / directory | extraction, cold cache | extraction, warm | cold / warm |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    let sizes: &[usize] = if quick { &[500] } else { &[500, 50_000] };
    for &n in sizes {
        let text = records(Detail::Full, n);
        let call = ToolCall {
            tool: "recall_memories".into(),
            arguments: r#"{"query":"caching"}"#.into(),
            result: serde_json::json!({"content": [{"type": "text", "text": text}]}).to_string(),
            meta: None,
        };
        let reps = if quick || n > 5_000 { 3 } else { 9 };
        let (mut direct, mut stored, mut cold, mut warm, mut bytes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), 0);
        for _ in 0..reps {
            let start = Instant::now();
            let outcome = local.intercept(&call)?;
            direct.push(start.elapsed());
            offloaded_files(&outcome, n)?;
            remove_all_in(Path::new(&local.config.output_dir))?;

            let start = Instant::now();
            let outcome = a.intercept(&call)?;
            stored.push(start.elapsed());
            let files = offloaded_files(&outcome, n)?;
            let file = files.first().context("an offload without a file")?;
            bytes = std::fs::metadata(file)?.len();
            let handle = lro_host::mcp::handles::handle_of(file).context("a file without a name")?;
            let arguments = serde_json::json!({"file_path": handle, "query": "length", "slurp": true}).to_string();
            for samples in [&mut cold, &mut warm] {
                let start = Instant::now();
                let answer = b.extract(&arguments);
                samples.push(start.elapsed());
                if answer.is_error || answer.text != n.to_string() {
                    bail!("the extraction on the other replica answered {:?}", answer.text);
                }
            }
            if let Some(stored) = &a.store {
                stored.store.delete(&stored.scope, &files);
            }
            remove_all_in(Path::new(&a.config.output_dir))?;
            remove_all_in(Path::new(&b.config.output_dir))?;
        }
        let (d, st, c, w) = (median(direct), median(stored), median(cold), median(warm));
        writeln!(
            out,
            "| {n} | {:.1} MB | {} | {} | {:.2}× | {} | {} | {:.2}× |",
            bytes as f64 / 1e6,
            ms(d),
            ms(st),
            st.as_secs_f64() / d.as_secs_f64(),
            ms(c),
            ms(w),
            c.as_secs_f64() / w.as_secs_f64()
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// The files of an offloaded outcome; an error for any other (a degraded one names why).
fn offloaded_files(outcome: &ToolOutcome, n: usize) -> anyhow::Result<Vec<String>> {
    match outcome {
        ToolOutcome::Offloaded(offloaded) => Ok(offloaded.files.clone()),
        ToolOutcome::Degraded(degraded) => bail!("{n} records degraded: {}", degraded.warning),
        ToolOutcome::Unchanged(_) => bail!("{n} records were not offloaded"),
    }
}
