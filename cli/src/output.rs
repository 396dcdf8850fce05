//! What the commands print: input read whole, values one per line, events as JSON lines.

use std::io::{Read, Write};
use std::path::Path;

use anyhow::Context;
use lro_host::{Event, ExtractResult};
use serde_json::{Value, json};

pub fn read_input(path: Option<&Path>) -> anyhow::Result<String> {
    match path {
        Some(p) if p != Path::new("-") => {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
        }
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading standard input")?;
            Ok(text)
        }
    }
}

pub fn print_line(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes()).context("writing standard output")?;
    stdout.write_all(b"\n").context("writing standard output")?;
    stdout.flush().context("writing standard output")
}

/// Values on stdout, one per line.
pub fn print_values(result: &ExtractResult) -> anyhow::Result<()> {
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    for value in &result.values {
        stdout.write_all(value.as_bytes()).context("writing standard output")?;
        stdout.write_all(b"\n").context("writing standard output")?;
    }
    stdout.flush().context("writing standard output")
}

/// Events as JSON lines, named as in the spec (`OffloadCreated`, ...).
pub fn event_json(event: &Event) -> Value {
    match event {
        Event::OffloadCreated(e) => json!({"event": "OffloadCreated", "path": e.path, "operation": e.operation,
            "count": e.count, "tokens": e.tokens, "bytes": e.bytes}),
        Event::OffloadWriteFailed(e) => json!({"event": "OffloadWriteFailed", "path": e.path, "operation": e.operation,
            "error": e.error, "total": e.total, "returned": e.returned}),
        Event::OffloadFileExpired(e) => json!({"event": "OffloadFileExpired", "path": e.path,
            "created": lro_core::time::format_rfc3339_ms(e.created), "expired": lro_core::time::format_rfc3339_ms(e.expired)}),
        Event::OffloadFileEvicted(e) => json!({"event": "OffloadFileEvicted", "path": e.path,
            "bytes": e.bytes, "cap": e.cap}),
    }
}

/// Writes `path` through a temporary file in the same directory, so a reader never sees half.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
