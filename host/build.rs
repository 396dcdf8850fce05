//! Builds the guest for wasm32-wasip2 and hands the component to `include_bytes!`, so
//! `cargo build`, `cargo run -p lro-cli` and `cargo test` need no separate step. Built from its
//! package instead, the crate uses the component the package carries (`lro.wasm`).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("lro.wasm");
    let root = manifest
        .parent()
        .expect("a crate's directory has a parent")
        .to_path_buf();
    if !root.join("guest/Cargo.toml").is_file() {
        // Built from the packaged crate (crates.io, `cargo install lro-cli`, `cargo package`'s
        // verification): the guest's sources and the wasm target are not there, so the package
        // carries the component, put in by packaging/build before `cargo package`.
        let packaged = manifest.join("lro.wasm");
        println!("cargo:rerun-if-changed={}", packaged.display());
        if let Err(e) = std::fs::copy(&packaged, &out) {
            panic!(
                "lro-host: {} is missing ({e}): a packaged lro-host carries the component, and a checkout \
                 builds it from guest/, which is not beside this crate",
                packaged.display()
            );
        }
        return;
    }
    // vendor/ holds the jq engine the guest compiles in (jaq with lro's changes).
    for input in ["guest", "core", "vendor", "wit", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(input).display());
    }

    // A separate target directory: the outer cargo holds the lock on the normal one.
    let target_dir = env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("guest");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    // Flags and wrappers meant for the host build (clippy, coverage) must not reach the guest,
    // unless LRO_LINT_GUEST=1 asks for clippy-driver (RUSTC_WORKSPACE_WRAPPER with its
    // CLIPPY_ARGS) on the guest too: .ci/run lints the guest for wasm32-wasip2 as it builds it.
    println!("cargo:rerun-if-env-changed=LRO_LINT_GUEST");
    if env::var_os("LRO_LINT_GUEST").is_none_or(|v| v != "1") {
        command.env_remove("RUSTC_WORKSPACE_WRAPPER");
    }
    let output = command
        .current_dir(&root)
        .args([
            "build",
            "--package",
            "lro-guest",
            "--target",
            "wasm32-wasip2",
            "--release",
            "--target-dir",
        ])
        .arg(&target_dir)
        .env_remove("RUSTFLAGS")
        .env("CARGO_ENCODED_RUSTFLAGS", remap_cargo_home())
        .env_remove("RUSTC_WRAPPER")
        .env_remove("CARGO_TARGET_DIR")
        // The outer build's jobserver descriptors are not this process's to hand on: the nested
        // cargo makes its own.
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        // rustc probes the target by reading a program from stdin: never hand it ours.
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running cargo to build the guest component");
    if !output.status.success() {
        panic!(
            "building the guest component (cargo build -p lro-guest --target wasm32-wasip2 --release) failed.\n\
             If the target is missing, run `rustup target add wasm32-wasip2`.\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let built = target_dir.join("wasm32-wasip2/release/lro_guest.wasm");
    std::fs::copy(&built, &out).unwrap_or_else(|e| panic!("copying {}: {e}", built.display()));
}

/// The one flag the guest is built with. Panic locations in dependencies name their sources under
/// cargo's home (`/home/someone/.cargo/registry/src/...`), and the component ships in packages
/// (lro-host's crate, the lro-wasm wheel and npm package): so cargo's home reads `cargo` there.
/// The Python and Node packages' builds pass the same flag (bindings/python/_backend,
/// bindings/node/scripts/component.js), so that the three share one build of the guest.
fn remap_cargo_home() -> String {
    let home = env::var_os("CARGO_HOME").map(PathBuf::from).or_else(|| {
        env::var_os("HOME")
            .or_else(|| env::var_os("USERPROFILE"))
            .map(|home| PathBuf::from(home).join(".cargo"))
    });
    home.map_or_else(String::new, |home| {
        format!("--remap-path-prefix={}=cargo", home.display())
    })
}
