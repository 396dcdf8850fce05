//! Builds the guest for wasm32-wasip2 and hands the component to `include_bytes!`, so
//! `cargo build`, `cargo run -p lro-cli` and `cargo test` need no separate step.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.parent().expect("host/ sits in the workspace").to_path_buf();
    // vendor/ holds the jq engine the guest compiles in (jaq with lro's changes).
    for input in ["guest", "core", "vendor", "wit", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(input).display());
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("lro.wasm");

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
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
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
