"""Shared fixtures: the component from $LRO_WASM, loaded once per test session."""

import json
import os
import re
import sys
from pathlib import Path

import pytest

HOST_DIR = Path(__file__).resolve().parent.parent
REPO = HOST_DIR.parent.parent
CASES = REPO / "tests" / "cases"
sys.path.insert(0, str(HOST_DIR))

import lro_wasm  # noqa: E402


def wasm_or_fail() -> str:
    """The component's path; fails the test (never skips) when LRO_WASM is unset or missing. The
    suite never falls back to a component bundled in the source tree by an earlier wheel build:
    that copy may be older than the sources."""
    if not os.environ.get("LRO_WASM"):
        pytest.fail("LRO_WASM is not set: point it at the component (`lro component -o lro.wasm`)", pytrace=False)
    try:
        return lro_wasm.wasm_path()
    except lro_wasm.LroError as e:
        pytest.fail(e.message, pytrace=False)


@pytest.fixture(scope="session")
def wasm() -> str:
    return wasm_or_fail()


@pytest.fixture(scope="session")
def lro(wasm) -> lro_wasm.Lro:
    return lro_wasm.Lro(wasm)


@pytest.fixture(scope="session")
def lro_public(wasm) -> lro_wasm.Lro:
    """The component called through wasmtime-py's public API rather than its C API (`_capi`):
    the path taken with a wasmtime-py the fast path was not written for."""
    return lro_wasm.Lro(wasm, _fast=False)


def guidance_calls(guidance: str) -> list:
    """The arguments of every `lro_extract(name=VALUE, ...)` in a descriptor's guidance text,
    VALUE being JSON, as a model would read them off."""
    decoder = json.JSONDecoder()
    calls = []
    for match in re.finditer(r"lro_extract\(", guidance):
        i, arguments = match.end(), {}
        while guidance[i] != ")":
            name = re.match(r"\s*(\w+)=", guidance[i:])
            assert name, f"cannot read the call at {guidance[match.start():match.start() + 120]!r}"
            value, i = decoder.raw_decode(guidance, i + name.end())
            arguments[name.group(1)] = value
            i += len(guidance[i:]) - len(guidance[i:].lstrip(", "))
        calls.append(arguments)
    return calls
