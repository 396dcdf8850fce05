"""Limits and the sandbox: runaway filters stop in about a second with a clear LroError and the
same Lro keeps working; extraction refuses every path leading out of the offload directory."""

import gc
import os
import shutil
import time

import pytest

from lro_wasm import Lro, LroError

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
    out = lro.offload(lro.config(output_dir=str(dir), threshold_tokens=100), {"operation": "recall", "detail": "light", "records": records(50)})
    assert out["kind"] == "offloaded", out
    return str(dir), out["path"]


def assert_still_works(lro, dir, path):
    assert lro.query(".a", '{"a": 1}')["values"] == ["1"]
    assert len(lro.extract(lro.config(output_dir=dir), {"path": path, "recipe": 1})["values"]) == 50


DEEP = "[" * 100_000 + "]" * 100_000
# One allocation of 1e9 bytes: past the 512 MiB filter cap at once, whatever the load.
STRING_BOMB = '("x" * 1000000000) | length'
# Filters that fill memory step by step: which limit they reach first depends on how fast the
# machine is, so they are tested below under a deadline they cannot reach.
GROWING_BOMBS = {
    "range-list": ("[range(1e12)] | length", "1"),
    "string-doubling": ('reduce range(40) as $i ("x"; . + .) | length', "null"),
}


@pytest.mark.parametrize(
    "filter, input, kind",
    [
        ("def f: f; f", "1", "timeout"),
        ("repeat(1)", "null", "timeout"),
        ("last(range(1e18))", "null", "timeout"),
        (STRING_BOMB, "null", "memory-limit"),
        ("def f: [f]; f", "null", "stack-overflow"),
        ("(" * 100_000 + "." + ")" * 100_000, "null", "stack-overflow"),
        (".", DEEP, "invalid-input"),
    ],
    ids=["recursion", "repeat", "range-1e18", "string-bomb", "deep-recursion", "deep-filter", "deep-input"],
)
def test_runaway_filter_stops_within_two_seconds_and_the_next_call_works(lro, offloaded, filter, input, kind):
    start = time.monotonic()
    with pytest.raises(LroError) as caught:
        lro.query(filter, input)
    took = time.monotonic() - start
    error = caught.value
    assert took < 2.0, f"took {took:.2f} s: {error}"
    assert error.kind == kind, f"{error.kind}: {error.message}"
    assert "backtrace" not in error.message and "Caused by" not in error.message, error.message
    if error.kind in LIMIT_KINDS:
        assert error.message.startswith("limit exceeded: "), error.message
    assert_still_works(lro, *offloaded)


def test_a_memory_bomb_in_an_extraction_hits_the_memory_limit(lro, offloaded):
    dir, path = offloaded
    with pytest.raises(LroError) as caught:
        lro.extract(lro.config(output_dir=dir), {"path": path, "query": STRING_BOMB})
    assert caught.value.kind == "memory-limit", caught.value
    assert "512 MiB memory limit" in caught.value.message, caught.value
    assert_still_works(lro, dir, path)


@pytest.mark.parametrize("bomb", sorted(GROWING_BOMBS))
def test_filters_that_fill_memory_hit_the_memory_limit(wasm, offloaded, bomb):
    # A long deadline, so that only the memory cap can stop them.
    patient = Lro(wasm, filter_deadline=30)
    filter, input = GROWING_BOMBS[bomb]
    with pytest.raises(LroError) as caught:
        patient.query(filter, input)
    assert caught.value.kind == "memory-limit", caught.value
    assert_still_works(patient, *offloaded)


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_memory_stays_flat_across_failing_extractions(wasm, offloaded):
    """A trapped call's store (and its linear memory, up to the cap) is freed when the call
    returns, not when the cycle collector next runs: collection is off during the test."""
    dir, path = offloaded
    # 128 MiB per store, filled by the doubling string well before a deadline it cannot reach.
    lro = Lro(wasm, filter_memory=128 << 20, filter_deadline=30)
    bomb = {"path": path, "query": GROWING_BOMBS["string-doubling"][0]}
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(LroError):
            lro.extract(lro.config(output_dir=dir), bomb)  # warm-up: allocator arenas, code pages
        before = rss_mb()
        for _ in range(8):
            with pytest.raises(LroError) as caught:
                lro.extract(lro.config(output_dir=dir), bomb)
            assert caught.value.kind == "memory-limit", caught.value
        grown = rss_mb() - before
    finally:
        if was_enabled:
            gc.enable()
    assert grown < 150, f"resident memory grew by {grown:.0f} MB across 8 failing calls"


def test_a_runaway_filter_inside_an_extraction_stops_too(lro, offloaded):
    dir, path = offloaded
    start = time.monotonic()
    with pytest.raises(LroError) as caught:
        # Without output: `repeat(.)` alone is stopped by the output cap (issue 34, item 14).
        lro.extract(lro.config(output_dir=dir), {"path": path, "query": "last(repeat(.))"})
    assert caught.value.kind == "timeout" and time.monotonic() - start < 2.0, caught.value
    # Which limit, and how to raise it (issue 34, item 14).
    assert "1s time limit" in caught.value.message and "Lro(filter_deadline=SECONDS)" in caught.value.message, caught.value
    assert_still_works(lro, dir, path)


def test_offload_limits_are_configurable_and_named(wasm, tmp_path):
    big = {"operation": "recall", "detail": "full", "records": records(20_000, "x" * 200)}
    small = Lro(wasm, memory=8 << 20)
    cfg = small.config(output_dir=str(tmp_path))
    with pytest.raises(LroError) as caught:
        small.offload(cfg, big)
    assert caught.value.kind == "memory-limit" and "8 MiB memory limit" in caught.value.message, caught.value
    assert "Lro(memory=BYTES)" in caught.value.message, caught.value
    hasty = Lro(wasm, deadline=0.001)
    with pytest.raises(LroError) as caught:
        hasty.offload(cfg, big)
    assert caught.value.kind == "timeout", caught.value
    # Both keep working, and nothing half-written is left behind.
    assert small.offload(cfg, {"operation": "recall", "records": records(3)})["kind"] == "inline"
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
            lro.extract(lro.config(output_dir=dir), {"path": path, "query": "."})
        assert caught.value.kind == "outside-directory", f"{path}: {caught.value}"
        assert path in caught.value.message, f"{path}: {caught.value}"
    with pytest.raises(LroError) as caught:
        lro.extract(lro.config(output_dir=dir), {"path": "etc/passwd", "query": "."})
    assert caught.value.kind == "outside-directory" and "relative" in caught.value.message
    # The real file inside still works.
    assert len(lro.extract(lro.config(output_dir=dir), {"path": inside, "recipe": 4})["values"]) == 50
