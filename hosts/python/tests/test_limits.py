"""Limits and the sandbox: runaway filters stop in about a second with a clear LroError and the
same Lro keeps working; extraction refuses every path leading out of the offload directory."""

import os
import shutil
import time

import pytest

from lro_wasm import Lro, LroError, config

LIMIT_KINDS = {"timeout", "memory-limit", "stack-overflow"}


def records(n, detail_text=""):
    return [
        {"id": f"m{i}", "memory_type": "semantic", "namespace": "_semantic/decisions",
         "title": f"Decision {i}", "tags": ["cache"] if i % 2 else [], "content": detail_text}
        for i in range(n)
    ]


@pytest.fixture
def offloaded(lro, tmp_path):
    dir = tmp_path / "offload"
    out = lro.offload(config(str(dir), threshold=100), {"operation": "recall", "detail": "light", "records": records(50)})
    assert out["kind"] == "offloaded", out
    return str(dir), out["path"]


def assert_still_works(lro, dir, path):
    assert lro.query(".a", '{"a": 1}')["values"] == ["1"]
    assert len(lro.extract(config(dir), {"path": path, "recipe": 1})["values"]) == 50


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "filter, input, kinds",
    [
        ("def f: f; f", "1", {"timeout"}),
        ("repeat(1)", "null", {"timeout"}),
        ("last(range(1e18))", "null", {"timeout"}),
        # Grows a list fast: whichever limit it reaches first.
        ("[range(1e12)] | length", "1", {"timeout", "memory-limit"}),
        # Doubles a string: past the 512 MiB filter cap within a fraction of a second on an idle
        # machine; on a loaded one, growing linear memory is slow enough for the deadline to win.
        ('reduce range(40) as $i ("x"; . + .) | length', "null", {"timeout", "memory-limit"}),
        ("def f: [f]; f", "null", {"stack-overflow"}),
        ("(" * 100_000 + "." + ")" * 100_000, "null", LIMIT_KINDS | {"invalid-filter"}),
        (".", DEEP, {"invalid-input"}),
    ],
    ids=["recursion", "repeat", "range-1e18", "range-list", "string-bomb", "deep-recursion", "deep-filter", "deep-input"],
)
def test_runaway_filter_stops_within_two_seconds_and_the_next_call_works(lro, offloaded, filter, input, kinds):
    start = time.monotonic()
    with pytest.raises(LroError) as caught:
        lro.query(filter, input)
    took = time.monotonic() - start
    error = caught.value
    assert took < 2.0, f"took {took:.2f} s: {error}"
    assert error.kind in kinds, f"{error.kind}: {error.message}"
    assert "backtrace" not in error.message and "Caused by" not in error.message, error.message
    if error.kind in LIMIT_KINDS:
        assert error.message.startswith("limit exceeded: "), error.message
    assert_still_works(lro, *offloaded)


def test_a_runaway_filter_inside_an_extraction_stops_too(lro, offloaded):
    dir, path = offloaded
    start = time.monotonic()
    with pytest.raises(LroError) as caught:
        lro.extract(config(dir), {"path": path, "query": "repeat(.)"})
    assert caught.value.kind == "timeout" and time.monotonic() - start < 2.0, caught.value
    assert_still_works(lro, dir, path)


def test_offload_limits_are_configurable_and_named(wasm, tmp_path):
    big = {"operation": "recall", "detail": "full", "records": records(20_000, "x" * 200)}
    small = Lro(wasm, memory=8 << 20)
    with pytest.raises(LroError) as caught:
        small.offload(config(str(tmp_path)), big)
    assert caught.value.kind == "memory-limit" and "8 MiB memory limit" in caught.value.message, caught.value
    hasty = Lro(wasm, deadline=0.001)
    with pytest.raises(LroError) as caught:
        hasty.offload(config(str(tmp_path)), big)
    assert caught.value.kind == "timeout", caught.value
    # Both keep working, and nothing half-written is left behind.
    assert small.offload(config(str(tmp_path)), {"operation": "recall", "records": records(3)})["kind"] == "inline"
    assert [n for n in os.listdir(tmp_path) if n.endswith(".jsonl")] == []


def test_extract_refuses_paths_leading_out_of_the_directory(lro, offloaded, tmp_path):
    dir, inside = offloaded
    name = os.path.basename(inside)
    outside = tmp_path / "outside"
    outside.mkdir()
    # A valid LRO file outside: reading it would succeed, so a refusal proves it was not read.
    shutil.copy(inside, outside / name)
    link = os.path.join(dir, name.replace(name[-10:-6], "ZZZZ"))
    os.symlink(outside / name, link)
    for path in [f"{dir}/../outside/{name}", str(outside / name), link, f"{dir}/../etc/passwd", "/etc/passwd"]:
        with pytest.raises(LroError) as caught:
            lro.extract(config(dir), {"path": path, "query": "."})
        assert caught.value.kind == "outside-directory", f"{path}: {caught.value}"
        assert path in caught.value.message, f"{path}: {caught.value}"
    with pytest.raises(LroError) as caught:
        lro.extract(config(dir), {"path": "etc/passwd", "query": "."})
    assert caught.value.kind == "outside-directory" and "relative" in caught.value.message
    # The real file inside still works.
    assert len(lro.extract(config(dir), {"path": inside, "recipe": 4})["values"]) == 50
