"""The fast path (`_capi`: the component called through wasmtime's C API, values written and read
directly) beside wasmtime-py's public API, its fallback: the same results, events and errors,
large and non-ASCII strings intact, and a plain fallback on a wasmtime-py it was not written for.
The shared cases (test_cases.py) run through both paths as well."""

import importlib.metadata
import json
import re

import pytest

from lro_wasm import Lro, LroError, _capi, _sandbox

# Non-ASCII in every UTF-8 length (é: 2 bytes, ✓: 3, 😀: 4), JSON escapes, and a NUL.
MIXED = 'é ✓ 😀 "quoted" \\ tab\t newline\n nul\x00 end'
RECORDS = [{"id": f"m{i}", "title": f"Title {i} {MIXED}", "tags": ["ü", "∑"]} for i in range(200)]


def outcome(call, host):
    """What `call(host)` gives: ("ok", result) or ("raised", type, kind, message)."""
    try:
        return ("ok", call(host))
    except Exception as e:  # noqa: BLE001 (compared, whatever it is)
        return ("raised", type(e), getattr(e, "kind", None), str(e))


def test_the_fast_path_is_taken_with_the_wasmtime_py_it_was_written_for(lro):
    version = importlib.metadata.version("wasmtime")
    assert version.startswith(_capi.SERIES), f"wasmtime-py {version}: pyproject.toml pins {_capi.SERIES}x"
    assert _capi.AVAILABLE, _capi.REASON
    assert lro._sandbox.fast


def test_another_wasmtime_py_falls_back_to_the_public_api(wasm, monkeypatch):
    monkeypatch.setattr(_capi, "_version", lambda: "51.0.0")
    reason = _capi.unavailable()
    assert reason == "wasmtime-py 51.0.0 is not the 50.x series the fast path was written against"
    monkeypatch.setattr(_capi, "AVAILABLE", False)
    monkeypatch.setattr(_capi, "REASON", reason)
    lro = Lro(wasm)
    assert not lro._sandbox.fast
    assert lro.estimate("abcd" * 10) == 10
    with pytest.raises(LroError) as caught:
        Lro(wasm, _fast=True)
    assert caught.value.kind == "load" and caught.value.message == f"lro_wasm's fast path is unavailable: {reason}"


def test_the_c_api_layout_is_the_one_written(monkeypatch):
    assert _capi._layout_problem() is None
    from wasmtime import _ffi

    monkeypatch.setattr(_ffi, "WASMTIME_COMPONENT_STRING", type(_ffi.WASMTIME_COMPONENT_STRING)(99))
    assert _capi._layout_problem() == "WASMTIME_COMPONENT_STRING is 99, not 12"


@pytest.mark.parametrize("text", [
    "",
    "plain ASCII " * 100_000,
    "".join(f"line {i}: {MIXED}\n" for i in range(20_000)),  # about 1 MB, most of it not ASCII
], ids=["empty", "ascii-1MB", "mixed-1MB"])
def test_large_and_non_ascii_strings_round_trip_on_both_paths(lro, lro_public, text):
    for host in (lro, lro_public):
        out = host.query(".", json.dumps(text, ensure_ascii=False), raw=True)
        assert out["values"] == [text] and out["text"] == text
        out = host.query(".", json.dumps(text).encode(), raw=True)  # JSON bytes, escaped to ASCII
        assert out["values"] == [text]
    assert lro.estimate(text) == lro_public.estimate(text)


@pytest.mark.parametrize("form", ["objects", "str", "bytes"])
def test_offloaded_files_are_the_same_on_both_paths(lro, lro_public, tmp_path, form):
    records = {"objects": RECORDS, "str": json.dumps(RECORDS, ensure_ascii=False),
               "bytes": json.dumps(RECORDS, ensure_ascii=False).encode()}[form]
    files, events = [], []
    for name, host in (("fast", lro), ("public", lro_public)):
        dir = tmp_path / name
        seen = []
        host.on_event = seen.append
        try:
            out = host.offload(host.config(output_dir=str(dir), threshold_tokens=100),
                               {"operation": "list", "query": MIXED, "records": records})
        finally:
            host.on_event = None
        assert out["kind"] == "offloaded" and out["count"] == len(RECORDS), out
        with open(out["path"], encoding="utf-8") as f:
            lines = f.read().splitlines()
        assert [json.loads(line) for line in lines[1:]] == RECORDS
        files.append([json.loads(line) for line in lines[1:]])
        events.append([{**e, "path": "-"} for e in seen])
        assert [e["path"] for e in seen] == [out["path"]]
    assert files[0] == files[1] and events[0] == events[1]


def test_bad_arguments_fail_the_same_on_both_paths(lro, lro_public, tmp_path):
    cfg = {"output_dir": str(tmp_path)}
    calls = [
        lambda h: h.config(threshold_tokens=-1),
        lambda h: h.config(threshold_tokens=True),
        lambda h: h.config(threshold_tokens=2**32),
        lambda h: h.config(max_bytes=2**64),
        lambda h: h.config(enabled=1),
        lambda h: h.config(descriptor="huge"),
        lambda h: h.config(descriptor=["full"]),
        lambda h: h.config(prefix=None),
        lambda h: h.config(tools="t"),
        lambda h: h.config(tools=[{"name": 1}]),
        lambda h: h.config(tools=[{"name": "t", "sections": "a"}]),
        lambda h: h.config(tools=[{"name": "t", "sections": ["a", 2]}]),
        lambda h: h.config(tools=[{"name": "t", "bogus": 1}]),
        lambda h: h.config(tools=[{"name": "t", "threshold_tokens": -5}]),
        lambda h: h.offload(cfg, ["not", "an", "object"]),
        lambda h: h.offload(cfg, {"operation": "fetch", "records": "[]"}),
        lambda h: h.offload(cfg, {"operation": "list"}),
        lambda h: h.offload(cfg, {"operation": "list", "records": "[]", "extra": 1}),
        lambda h: h.offload(cfg, {"operation": "list", "records": b'[{"a": "\xff"}]'}),
        lambda h: h.offload(cfg, {"operation": "list", "records": [{"tags": {"a"}}]}),
        lambda h: h.offload(cfg, {"operation": "list", "records": "[1,"}),
        lambda h: h.offload(cfg, {"operation": "list", "detail": "all", "records": "[]"}),
        lambda h: h.intercept(cfg, {"tool": "t"}),
        lambda h: h.query(1, "1"),
        lambda h: h.query(".", "1", limit=-1),
        lambda h: h.query(".[", "1"),
        lambda h: h.recipes(cfg, "everything"),
        lambda h: h.estimate(None),
        lambda h: h.estimate(b"bytes"),
        lambda h: h.sweep(cfg, -1),
        lambda h: h.extract(cfg, {"path": 5}),
        lambda h: h.extract(cfg, {"path": "/nowhere.jsonl", "recipe": "one"}),
        # A str wasmtime cannot take as UTF-8: UnicodeEncodeError on both paths, no crash.
        lambda h: h.estimate("lone \ud800 surrogate"),
    ]
    for i, call in enumerate(calls):
        fast, public = outcome(call, lro), outcome(call, lro_public)
        assert fast == public, f"call {i}"
        assert fast[0] == "raised", f"call {i}: {fast}"


def test_results_of_every_function_are_the_same_on_both_paths(lro, lro_public, tmp_path):
    def normalised(value, dir):
        text = json.dumps(value).replace(dir, "<DIR>")
        return json.loads(re.sub(r"-[0-9A-HJKMNP-TV-Z]{26}\.jsonl", "-<ULID>.jsonl", text))

    results = []
    for name, host in (("fast", lro), ("public", lro_public)):
        dir = str(tmp_path / name)
        cfg = host.config(output_dir=dir, threshold_tokens=100, extract_tool=True)
        out = host.offload(cfg, {"operation": "recall", "query": "q", "detail": "full", "records": RECORDS})
        tool = host.intercept(cfg, {"tool": "t", "result": {"content": [{"type": "text", "text": json.dumps({"rows": RECORDS})}]}})
        got = [
            host.defaults(),
            host.recipes(cfg, "full", out["path"]),
            host.extract(cfg, {"path": out["path"], "query": ".title", "limit": 3}),
            host.call_tool(cfg, {"file_path": out["path"], "query": "length", "slurp": True}),
            host.query(".[] | .a", '[{"a": 1}, {"a": "é"}]', slurp=False, raw=True, limit=1),
            host.tool_definition(),
            host.rewrite_tools(cfg, [{"name": "t", "outputSchema": {}}]),
            host.estimate(MIXED),
            sorted(host.sweep(host.config(output_dir=dir, ttl_seconds=0), 2**53)["deleted"]),
            sorted([out["path"], *tool["files"]]),
            {k: v for k, v in out.items() if k not in ("path", "descriptor")},
        ]
        results.append(normalised(got, dir))
    assert results[0] == results[1]


def test_an_import_callback_that_raises_fails_the_call_as_a_trap(wasm, tmp_path, monkeypatch):
    """Nothing in lro_wasm's own callback raises; were it to, the call fails cleanly."""
    def collector(_local):
        def broken(_event):
            raise ValueError("no room for events")
        return broken

    monkeypatch.setattr(_sandbox, "_collector", collector)
    lro = Lro(wasm)
    with pytest.raises(LroError) as caught:
        lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    assert caught.value.kind == "trap" and "emit: ValueError: no room for events" in caught.value.message, caught.value
    assert lro.estimate("abcd") == 1  # and the next call works


def test_the_public_api_still_reads_a_functions_type_on_every_call(lro_public, monkeypatch):
    """The reason the fast path exists, checked on the pinned wasmtime-py: `Func.__call__` asks
    the C API for the function's type and rebuilds it on every call (docs/UPSTREAM.md). When this
    fails, wasmtime-py caches the type: measure the public path again, and drop `_capi` if the
    difference is gone."""
    from wasmtime.component import _func

    asked = []
    real = _func.ffi.wasmtime_component_func_type
    monkeypatch.setattr(_func.ffi, "wasmtime_component_func_type", lambda *a: asked.append(1) or real(*a))
    for _ in range(3):
        assert lro_public.estimate("abcd" * 10) == 10
    assert len(asked) == 3
