//! The proxy section of `lro bench`: what `lro proxy` adds to a `tools/call`, as a user meets it.
//! The same MCP client (rmcp) calls the same server, `lro sample --serve` as a child process,
//! once directly and once through `lro proxy` (a second child), over real pipes; calls
//! alternate between the two, so a slow patch of the machine hits both alike.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use lro_cli::sample_server::RECALL;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::session::{Session, connect, text};

use super::{Target, median, ms, remove_all_in};

/// Memories the server holds; the large call asks for all of them.
const MEMORIES: usize = 500;
const SMALL: u64 = 3;

async fn recall(session: &Session, limit: u64) -> anyhow::Result<(Duration, CallToolResult)> {
    let start = Instant::now();
    let result = session.call(RECALL, json!({"query": "", "limit": limit})).await?;
    Ok((start.elapsed(), result))
}

/// Runs the section; `work` receives the proxy's files.
pub fn section(out: &mut String, targets: &mut Vec<Target>, work: &Path, quick: bool) -> anyhow::Result<()> {
    let work = work.to_str().context("the bench directory must be UTF-8")?.to_owned();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    tokio.block_on(measure(out, targets, &work, quick))
}

async fn measure(out: &mut String, targets: &mut Vec<Target>, work: &str, quick: bool) -> anyhow::Result<()> {
    let exe = crate::session::exe()?;
    let server: Vec<String> = ["sample", "--serve", "--count", &MEMORIES.to_string()]
        .map(str::to_owned)
        .to_vec();
    let mut proxied_args: Vec<String> = ["proxy", "--threshold", "1600", "--output-dir", work, "--", &exe]
        .map(str::to_owned)
        .to_vec();
    proxied_args.extend(server.iter().cloned());
    let direct = connect(&server).await?;
    let proxied = connect(&proxied_args).await?;

    writeln!(
        out,
        "\n## Proxy\n\nA `tools/call` of `{RECALL}` from rmcp's client to `lro sample --serve` (rmcp's \
         server, {MEMORIES} full-detail memories), over the stdio pipes of child processes: *direct*, \
         and *through the proxy* (`lro proxy --threshold 1600 -- lro sample --serve`, one more process \
         and two more pipes). Calls alternate between the two. The small call is forwarded as it \
         came; the large one is offloaded by the proxy, so its client receives a descriptor instead \
         of the records.\n"
    )?;
    writeln!(
        out,
        "| call | the client receives (direct → through the proxy) | direct | through the proxy | added |\n\
         |---|---:|---:|---:|---:|"
    )?;
    for (what, limit, reps) in [
        ("small: 3 memories", SMALL, if quick { 40 } else { 400 }),
        ("large: all 500 memories", MEMORIES as u64, if quick { 5 } else { 40 }),
    ] {
        // The first calls load code and fill caches on both sides.
        for _ in 0..3 {
            recall(&direct, limit).await?;
            recall(&proxied, limit).await?;
        }
        let (mut straight, mut through) = (Vec::new(), Vec::new());
        let (mut straight_bytes, mut through_bytes) = (0, 0);
        for _ in 0..reps {
            let (d, result) = recall(&direct, limit).await?;
            straight.push(d);
            straight_bytes = text(&result).len();
            let (d, result) = recall(&proxied, limit).await?;
            through.push(d);
            through_bytes = text(&result).len();
            let offloaded = serde_json::from_str::<Value>(text(&result))
                .ok()
                .is_some_and(|v| v.get("jq_recipes").is_some());
            if offloaded != (limit == MEMORIES as u64) {
                bail!("{what}: offloaded is {offloaded} through the proxy");
            }
        }
        remove_all_in(Path::new(work))?;
        let (d, p) = (median(straight), median(through));
        let added = p.as_secs_f64() - d.as_secs_f64();
        writeln!(
            out,
            "| {what} | {:.1} KB → {:.1} KB | {} | {} | {} |",
            straight_bytes as f64 / 1e3,
            through_bytes as f64 / 1e3,
            ms(d),
            ms(p),
            signed_ms(added)
        )?;
        if limit == SMALL {
            targets.push(Target {
                what: "proxy: added latency of a small tools/call, median".into(),
                figure: format!("{} (target ≤ 1 ms; direct: {})", signed_ms(added), ms(d)),
                met: added <= 1e-3,
            });
        } else {
            targets.push(Target {
                what: "proxy: added latency of an offloaded tools/call (500 memories), median".into(),
                figure: format!("{} (no target; direct: {})", signed_ms(added), ms(d)),
                met: true,
            });
        }
    }
    // The result as the server sends it (its text content and its structured content, which
    // holds the same records), per memory: what the proxy reads.
    let (memory_bytes, message_bytes) = {
        let (_, all) = recall(&direct, MEMORIES as u64).await?;
        (
            text(&all).len() / MEMORIES,
            serde_json::to_string(&all).map_or(0, |s| s.len()) / MEMORIES,
        )
    };
    direct.client.cancel().await.ok();
    proxied.client.cancel().await.ok();
    peak_memory(out, targets, work, quick, memory_bytes, message_bytes).await
}

/// The proxy's peak resident memory while it takes one large result (`VmHWM` of the proxy
/// process), a fresh proxy and server for each size.
async fn peak_memory(
    out: &mut String,
    targets: &mut Vec<Target>,
    work: &str,
    quick: bool,
    memory_bytes: usize,
    message_bytes: usize,
) -> anyhow::Result<()> {
    let exe = crate::session::exe()?;
    writeln!(
        out,
        "\nThe proxy's peak memory (`VmHWM`) with one large result: `lro proxy --output-dir DIR -- lro \
         sample --serve --count N` (the default threshold and limits), one `recall_memories` of all N \
         memories (about {memory_bytes} bytes each in the text; the result, which holds them in its text \
         and its structured content, about {message_bytes} bytes a memory: *result* is its size). *Before*: its peak after `initialize` and a `tools/list` (the \
         compiled component and the runtime, whatever the result). *Growth*: peak minus before, what the \
         result costs; the target is on it.\n\n\
         | result | the client receives | before | peak | growth / result | peak / result |\n|---:|---|---:|---:|---:|---:|"
    )?;
    let sizes: &[usize] = if quick { &[10] } else { &[10, 100, 250] };
    for &mb in sizes {
        let count = (mb << 20) / message_bytes.max(1);
        let args: Vec<String> = [
            "proxy",
            "--output-dir",
            work,
            "--",
            &exe,
            "sample",
            "--serve",
            "--count",
        ]
        .map(str::to_owned)
        .into_iter()
        .chain([count.to_string()])
        .collect();
        let session = connect(&args).await?;
        let pid = session.pid().context("the proxy's process id")?;
        // The session's start done first (the proxy's own check of the tools and the client's
        // listing call the component), so that only the result counts as growth.
        session.client.peer().list_all_tools().await.context("tools/list")?;
        let before = peak_kib(pid)?;
        let (_, result) = recall(&session, 0).await?;
        let peak = peak_kib(pid)?;
        let received = text(&result);
        let what = match serde_json::from_str::<Value>(received) {
            Ok(v) if v.get("jq_recipes").is_some() => "a descriptor",
            Ok(v) if v.get("truncated").is_some() => "a cut result",
            _ => "the whole result",
        };
        session.client.cancel().await.ok();
        remove_all_in(Path::new(work))?;
        let size = (count * message_bytes) as f64;
        let ratio = peak as f64 * 1024.0 / size;
        let growth = peak.saturating_sub(before) as f64 * 1024.0 / size;
        writeln!(
            out,
            "| {:.0} MB | {what} | {:.0} MB | {:.0} MB | {growth:.2}x | {ratio:.1}x |",
            size / 1e6,
            before as f64 * 1024.0 / 1e6,
            peak as f64 * 1024.0 / 1e6
        )?;
        targets.push(Target {
            what: format!("proxy: peak memory with a {mb} MB result"),
            figure: format!("grew by {growth:.2}x the result, {what} (target ≤ 1.5x)"),
            met: growth <= 1.5,
        });
    }
    Ok(())
}

/// `VmHWM` of process `pid`, in KiB.
fn peak_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).context("reading the proxy's memory use")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .context("no VmHWM in /proc/PID/status")
}

fn signed_ms(seconds: f64) -> String {
    let sign = if seconds < 0.0 { "−" } else { "+" };
    format!("{sign}{}", ms(Duration::from_secs_f64(seconds.abs())))
}
