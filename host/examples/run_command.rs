//! Runs a WebAssembly command component (a `wasm32-wasip2` program with a `main`) under
//! wasmtime with its standard output and error, its arguments, and the directory of its first
//! argument preopened read-only at the same path: for measuring code in the component as the
//! lro host runs it (`tools/structural-bound` says how).
//!
//! ```sh
//! cargo run --release -p lro-host --example run_command -- PROGRAM.wasm FILE [ARGS...]
//! ```

use anyhow::{Context, Result, anyhow, bail};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::p2::bindings::sync::Command;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [program, file, ..] = &args[..] else {
        bail!("usage: run_command PROGRAM.wasm FILE [ARGS...]");
    };
    let file = std::path::absolute(file).with_context(|| format!("resolving {file}"))?;
    let dir = file.parent().context("the file has no directory")?;
    let engine = Engine::default();
    let component = Component::from_file(&engine, program).map_err(|e| anyhow!("loading {program}: {e:#}"))?;
    let mut linker = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    let mut wasi = WasiCtxBuilder::new();
    wasi.inherit_stdout()
        .inherit_stderr()
        .arg(program)
        .arg(file.to_string_lossy());
    for arg in &args[2..] {
        wasi.arg(arg);
    }
    let dir = dir.to_string_lossy();
    wasi.preopened_dir(&*dir, &*dir, FsPerms::ReadOnly)
        .map_err(|e| anyhow!("preopening {dir}: {e:#}"))?;
    let mut store = Store::new(
        &engine,
        State {
            wasi: wasi.build(),
            table: ResourceTable::new(),
        },
    );
    let command = Command::instantiate(&mut store, &component, &linker)?;
    if command.wasi_cli_run().call_run(&mut store)?.is_err() {
        bail!("{program} exited with an error");
    }
    Ok(())
}
