"""The build backend of the `lro-wasm` package: setuptools, after putting the component in place.

`pip wheel bindings/python` (or any PEP 517 front end) builds a pure wheel holding
`lro_wasm/lro.wasm`, which is never committed. Before a wheel or sdist is built, the component
is taken from, in order:

1. `$LRO_WASM`, when it is set (a component from `lro component -o lro.wasm`);
2. the repository this package sits in (two levels up): `cargo build -p lro-guest --target
   wasm32-wasip2 --release --target-dir <repo>/target/guest`, a no-op when it is up to date;
3. outside a repository (building from the sdist), the component the sdist already holds.

When none works the build stops with a message naming what is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 - every other hook is setuptools' own

HERE = Path(__file__).resolve().parent.parent  # bindings/python
COMPONENT = HERE / "lro_wasm" / "lro.wasm"
REPO = HERE.parent.parent
BUILT = REPO / "target" / "guest" / "wasm32-wasip2" / "release" / "lro_guest.wasm"
CARGO_COMMAND = "cargo build -p lro-guest --target wasm32-wasip2 --release --target-dir <repo>/target/guest"
OR_LRO_WASM = "or set LRO_WASM to a built component (`lro component -o lro.wasm`)"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _put_component()
    _clean_build_lib()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    _put_component()
    return _setuptools.build_sdist(sdist_directory, config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _put_component()
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)


def _fail(message: str) -> NoReturn:
    # A message, not a traceback: the front end prints what the backend wrote to stderr.
    print(f"lro-wasm: {message}", file=sys.stderr)
    raise SystemExit(1)


def _is_component(data: bytes) -> bool:
    # `\0asm`, then the component encoding's version and layer (a core module has layer 0).
    return data[:4] == b"\0asm" and data[6:8] == b"\x01\x00"


def _copy(source: Path, origin: str) -> None:
    try:
        data = source.read_bytes()
    except OSError as e:
        _fail(f"{origin}: cannot read {source}: {e.strerror}")
    if not _is_component(data):
        _fail(f"{origin}: {source} is not a WebAssembly component")
    if not COMPONENT.is_file() or COMPONENT.read_bytes() != data:
        tmp = COMPONENT.with_name(f".lro.wasm.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, COMPONENT)
    print(f"lro-wasm: bundling {source} ({len(data):,} bytes, from {origin})", file=sys.stderr)


def _put_component() -> None:
    given = os.environ.get("LRO_WASM")
    if given:
        _copy(Path(given), "LRO_WASM")
        return
    if not (REPO / "guest" / "Cargo.toml").is_file() or not (REPO / "wit").is_dir():
        if COMPONENT.is_file():  # an sdist: it holds the component
            return
        _fail(f"no component to bundle: {HERE} is not inside the lro repository and holds no "
              f"lro_wasm/lro.wasm; {OR_LRO_WASM}")
    cargo = shutil.which("cargo")
    if cargo is None:
        _fail("building the component needs cargo, which is not on PATH: install Rust (https://rustup.rs; "
              "the repository's rust-toolchain.toml then brings the wasm32-wasip2 target), "
              f"{OR_LRO_WASM}")
    env = dict(os.environ)
    # Flags and wrappers meant for another build must not reach the guest (as host/build.rs),
    # but for clippy-driver when LRO_LINT_GUEST=1 asks for it: .ci/run's one linted guest build.
    for name in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER",
                 "CARGO_TARGET_DIR", "CARGO_MAKEFLAGS", "MAKEFLAGS", "MFLAGS"):
        if not (name == "RUSTC_WORKSPACE_WRAPPER" and env.get("LRO_LINT_GUEST") == "1"):
            env.pop(name, None)
    # As host/build.rs (remap_cargo_home): cargo's home reads `cargo` in the component's panic
    # locations, which a package would otherwise publish.
    env["CARGO_ENCODED_RUSTFLAGS"] = f"--remap-path-prefix={os.environ.get('CARGO_HOME') or Path.home() / '.cargo'}=cargo"
    command = [cargo, "build", "-p", "lro-guest", "--target", "wasm32-wasip2", "--release",
               "--target-dir", str(REPO / "target" / "guest")]
    print(f"lro-wasm: {CARGO_COMMAND}", file=sys.stderr)
    run = subprocess.run(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        tail = "\n".join(run.stderr.strip().splitlines()[-20:])
        target = ""
        if "wasm32-wasip2" in run.stderr and ("may not be installed" in run.stderr or "can't find crate" in run.stderr):
            target = " The wasm32-wasip2 target is missing: `rustup target add wasm32-wasip2`."
        _fail(f"`{CARGO_COMMAND}` failed (exit status {run.returncode}).{target} {OR_LRO_WASM}.\n{tail}")
    if not BUILT.is_file():
        _fail(f"cargo succeeded but wrote no {BUILT}")
    _copy(BUILT, "cargo")


def _clean_build_lib() -> None:
    # setuptools copies the package into build/lib and never deletes what an earlier build put
    # there, so a module since removed from lro_wasm/ would ship on in the wheel.
    shutil.rmtree(HERE / "build" / "lib", ignore_errors=True)
