"""The package as a user gets it: the real wheel, built by `pip wheel` from this tree, installed
with its `mcp` extra into a fresh virtualenv with no Rust toolchain on PATH, running the README's
server (three lines of lro) over stdio, driven by the MCP SDK's own client.

The wheel bundles $LRO_WASM when it is set, so this test needs no cargo; without it the build
backend builds the component with cargo. Installing needs PyPI or a pip cache (wasmtime, mcp).
`pytest -s` is not needed to see the wheel's size and the time from `pip install` to the first
offloaded result: they are printed either way."""

import asyncio
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import lro_wasm
from conftest import HOST_DIR, REPO, guidance_calls
from lro_wasm.mcp import LroExtension

README = HOST_DIR / "README.md"
TTL = 6  # the server's ttl_seconds: its files expire during the test, swept every TTL / 2


def readme_server() -> str:
    """The README's first Python block: the complete server it tells users to write."""
    match = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert match, "bindings/python/README.md has no ```python block"
    return match.group(1)


def without_rust(path: str) -> str:
    """PATH without any directory holding a Rust toolchain (~/.cargo/bin and the like)."""
    kept = [d for d in path.split(os.pathsep)
            if d and not any(os.path.exists(os.path.join(d, tool)) for tool in ("cargo", "rustc", "rustup"))]
    stripped = os.pathsep.join(kept)
    assert shutil.which("cargo", path=stripped) is None
    return stripped


def run(command, *, env=None, timeout=600, what):
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        pytest.fail(f"{what} failed (exit status {done.returncode}): {' '.join(map(str, command))}\n"
                    f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}", pytrace=False)
    return done


def test_the_package_version_is_the_project_version():
    pyproject = tomllib.loads((HOST_DIR / "pyproject.toml").read_text())
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())
    assert pyproject["project"]["version"] == cargo["workspace"]["package"]["version"] == lro_wasm.__version__


def test_lro_loads_its_path_else_LRO_WASM_else_the_bundled_component(wasm, tmp_path, monkeypatch):
    bundled = tmp_path / "lro.wasm"
    monkeypatch.setattr(lro_wasm, "BUNDLED", str(bundled))
    monkeypatch.delenv("LRO_WASM")
    with pytest.raises(lro_wasm.LroError) as caught:
        lro_wasm.Lro()
    assert caught.value.kind == "load" and caught.value.message.startswith(
        f"no component: LRO_WASM is not set and none is bundled at {bundled}"), caught.value
    shutil.copy(wasm, bundled)
    assert lro_wasm.wasm_path() == str(bundled) and lro_wasm.Lro().estimate("abcd") == 1
    monkeypatch.setenv("LRO_WASM", str(tmp_path / "missing.wasm"))
    with pytest.raises(lro_wasm.LroError) as caught:
        lro_wasm.Lro()
    assert caught.value.message == f"LRO_WASM={tmp_path / 'missing.wasm'}: no such file (build it with " \
        f"`lro component -o {tmp_path / 'missing.wasm'}`)"
    monkeypatch.setenv("LRO_WASM", wasm)
    assert lro_wasm.wasm_path() == wasm
    with pytest.raises(lro_wasm.LroError) as caught:
        lro_wasm.Lro(tmp_path / "given.wasm")  # an explicit path beats both
    assert caught.value.message.startswith(f"{tmp_path / 'given.wasm'}: cannot read the component")


def test_the_readme_server_adds_lro_in_three_lines():
    lines = [line for line in readme_server().splitlines() if "lro" in line.lower()]
    assert len(lines) <= 3, lines
    assert any("LroExtension(" in line for line in lines) and any("MCPServer(" in line for line in lines), lines


def build_wheel(out: Path) -> Path:
    env = dict(os.environ)
    if not env.get("LRO_WASM"):
        env.pop("LRO_WASM", None)  # an empty one is unset to the backend too: cargo builds it
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-w", str(out), str(HOST_DIR)],
        env=env, what="building the wheel (`pip wheel --no-deps bindings/python`)")
    [wheel] = out.glob("lro_wasm-*-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        names = {n for n in z.namelist() if not n.startswith(f"lro_wasm-{lro_wasm.__version__}.dist-info/")}
        sources = {f"lro_wasm/{p.name}" for p in (HOST_DIR / "lro_wasm").glob("*.py")}
        assert names == sources | {"lro_wasm/lro.wasm"}, names ^ (sources | {"lro_wasm/lro.wasm"})
        if os.environ.get("LRO_WASM"):
            assert z.read("lro_wasm/lro.wasm") == Path(os.environ["LRO_WASM"]).read_bytes(), \
                "the wheel bundles another component than $LRO_WASM"
        # Nothing of the builder's machine, which a registry would publish: the checkout, or
        # cargo's home (host/build.rs remaps it in the component's panic locations).
        machine = [str(REPO), os.environ.get("CARGO_HOME") or str(Path.home() / ".cargo")]
        for name in z.namelist():
            data = z.read(name)
            assert not [m for m in machine if m.encode() in data], f"{name} names a path of the machine that built it"
    return wheel


def expected(tmp_path, monkeypatch) -> tuple:
    """What the README server's tool returns, and its tools as the SDK lists them without lro,
    from the same code run in this process (on a throwaway offload directory)."""
    monkeypatch.setenv("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", str(tmp_path / "in-process"))
    module = tmp_path / "readme_server_in_process.py"
    module.write_text(readme_server())
    namespace = runpy.run_path(str(module), run_name="readme_server")
    for value in namespace.values():
        if isinstance(value, LroExtension):
            value.close()
    search_notes, server = namespace["search_notes"], namespace["server"]
    schemas = {t.name: t.output_schema for t in asyncio.run(server.list_tools())}
    return search_notes(), search_notes(count=3), schemas


async def drive(params, started, definition, large, small, offload_dir):
    """The README server through the SDK's client; returns the seconds from `started` (the
    start of `pip install`) to the first offloaded result."""
    async with Client(params, read_timeout_seconds=120) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"search_notes", "lro_extract"}, set(tools)
        assert tools["search_notes"].output_schema is None, "an offloadable tool kept its outputSchema"
        assert tools["lro_extract"].model_dump(by_alias=True, exclude_none=True, mode="json") == definition

        result = await client.call_tool("search_notes", {})
        first_offload = time.monotonic() - started
        assert not result.is_error, result.content
        descriptor = json.loads(result.content[0].text)
        assert descriptor["offloaded"] is True, descriptor
        [path] = descriptor["files"].values()
        assert os.path.dirname(path) == os.path.realpath(offload_dir), path
        records = json.loads(large)
        with open(path) as f:
            header, *data = [json.loads(line) for line in f]
        assert header["type"] == "lro_header" and data == records

        # The guidance's own calls, exactly as printed: all run, the count and the first ten
        # answer what the result held.
        calls = guidance_calls(descriptor["guidance"])
        assert len(calls) >= 2, descriptor["guidance"]
        for call in calls:
            answer = await client.call_tool("lro_extract", call)
            assert not answer.is_error, (call, answer.content)
            text = answer.content[0].text
            if call["query"] == "length":
                assert text == str(len(records)), text
            if call["query"] == ".[:10][]":
                assert [json.loads(v) for v in text.split("\n")] == records[:10], text[:300]
        assert {"length", ".[:10][]"} <= {c["query"] for c in calls}, descriptor["guidance"]

        small_result = await client.call_tool("search_notes", {"count": 3})
        assert [c.text for c in small_result.content] == [small]
        assert small_result.structured_content == {"result": small}

        # Expired after TTL seconds, deleted by the periodic sweep (every TTL / 2) while the
        # server runs: the sweep at start found an empty directory.
        deadline = time.monotonic() + TTL + TTL / 2 + 15
        while os.path.exists(path) and time.monotonic() < deadline:
            await asyncio.sleep(0.25)
        assert not os.path.exists(path), f"{path} was not swept within {TTL * 1.5 + 15:.0f} s of its creation"
        return first_offload


def test_the_wheel_in_a_fresh_virtualenv_serves_the_readme_server(tmp_path, monkeypatch, capsys):
    wheel = build_wheel(tmp_path / "wheels")
    large, small, schemas = expected(tmp_path, monkeypatch)
    assert schemas["search_notes"] is not None, "the SDK no longer gives a -> str tool an outputSchema"
    definition = json.loads(lro_wasm.Lro().tool_definition())

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], what="creating a virtualenv")
    python = venv / "bin" / "python"
    path = without_rust(os.environ.get("PATH", os.defpath))
    # A user's environment: no LRO_WASM (the bundled component is used), no Rust.
    env = {k: v for k, v in os.environ.items() if k != "LRO_WASM" and not k.startswith(("PYTHON", "ATLATL_"))}
    env["PATH"] = path
    started = time.monotonic()
    run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", f"{wheel}[mcp]"],
        env=env, what="installing the wheel with its mcp extra")

    server = tmp_path / "server.py"
    server.write_text(readme_server())
    offload_dir = tmp_path / "offload"
    params = StdioServerParameters(command=str(python), args=[str(server)], cwd=str(tmp_path), env={
        "PATH": path,
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(offload_dir),
        "ATLATL_PROMPT__OFFLOAD__TTL_SECONDS": str(TTL),
        "LRO_CACHE_DIR": str(tmp_path / "cache"),  # a new user's: the component is compiled once
    })
    first_offload = asyncio.run(asyncio.wait_for(drive(params, started, definition, large, small, offload_dir), 300))
    with capsys.disabled():
        print(f"\nlro-wasm: wheel {wheel.name} {wheel.stat().st_size:,} bytes; "
              f"{first_offload:.1f} s from `pip install` to the first offloaded result")
