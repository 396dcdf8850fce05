//! `lro component`: the embedded `.wasm`, for the Python and Node bindings and other hosts.

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, bail};

pub fn run(output: Option<&Path>) -> anyhow::Result<()> {
    match output {
        Some(path) => {
            let tmp = path.with_extension("wasm.tmp");
            std::fs::write(&tmp, lro_host::COMPONENT)
                .and_then(|()| std::fs::rename(&tmp, path))
                .with_context(|| format!("writing {}", path.display()))
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            if stdout.is_terminal() {
                bail!("refusing to write binary WebAssembly to a terminal; use -o FILE or a redirect");
            }
            stdout
                .write_all(lro_host::COMPONENT)
                .context("writing standard output")?;
            stdout.flush().context("writing standard output")
        }
    }
}
