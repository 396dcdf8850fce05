"""Shared fixtures: the component from $LRO_WASM, loaded once per test session."""

import os
import sys
from pathlib import Path

import pytest

HOST_DIR = Path(__file__).resolve().parent.parent
REPO = HOST_DIR.parent.parent
CASES = REPO / "tests" / "cases"
sys.path.insert(0, str(HOST_DIR))

import lro_wasm  # noqa: E402


def wasm_or_fail() -> str:
    """The component's path; fails the test (never skips) when LRO_WASM is unset or missing."""
    try:
        return lro_wasm.wasm_path()
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def wasm() -> str:
    return wasm_or_fail()


@pytest.fixture(scope="session")
def lro(wasm) -> lro_wasm.Lro:
    return lro_wasm.Lro(wasm)
