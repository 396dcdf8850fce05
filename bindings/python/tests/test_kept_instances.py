"""The calls that run no user filter reuse a store and instance their thread kept from an
earlier call (docs/HOSTS.md, step 2): a directory replaced at the same path gets the next file,
a trap drops the instance it happened in, and calls with large arguments or user filters are
never kept. That a kept instance answers as a fresh one is what test_cases.py checks: every
shared case runs through one `Lro`."""

import json
import os

import pytest

from lro_wasm import Lro, LroError


def records(n, content=""):
    return [{"id": f"m{i}", "namespace": "_semantic/kept", "title": f"Record {i}", "content": content}
            for i in range(n)]


def test_a_directory_replaced_at_its_path_gets_the_next_file(wasm, tmp_path):
    lro = Lro(wasm)
    dir = tmp_path / "offload"
    cfg = lro.config(output_dir=str(dir), threshold_tokens=100)
    first = lro.offload(cfg, {"operation": "list", "records": records(50)})
    assert first["kind"] == "offloaded", first
    # The kept store still has the old directory open: the next call must not write there.
    os.rename(dir, tmp_path / "moved")
    os.mkdir(dir, 0o700)
    second = lro.offload(cfg, {"operation": "list", "records": records(60)})
    assert second["kind"] == "offloaded", second
    assert os.path.dirname(second["path"]) == str(dir)
    with open(second["path"]) as f:
        assert sum(1 for _ in f) == 61  # the header and the records
    assert sorted(os.listdir(tmp_path / "moved")) == [os.path.basename(first["path"])]


def test_a_directory_made_read_only_then_writable_is_mounted_as_it_is_at_each_call(wasm, tmp_path):
    lro = Lro(wasm)
    dir = tmp_path / "modes"
    cfg = lro.config(output_dir=str(dir), threshold_tokens=100)
    assert lro.offload(cfg, {"operation": "list", "records": records(50)})["kind"] == "offloaded"
    os.chmod(dir, 0o500)
    assert lro.offload(cfg, {"operation": "list", "records": records(50)})["kind"] == "degraded"
    os.chmod(dir, 0o700)
    out = lro.offload(cfg, {"operation": "list", "records": records(70)})
    assert out["kind"] == "offloaded", out
    with open(out["path"]) as f:
        assert sum(1 for _ in f) == 71


def test_a_trap_in_a_kept_instance_drops_it_and_the_next_call_works(wasm, tmp_path):
    # 2 MiB is enough for small calls and too little for 2,000 records of 200 characters
    # (0.66 MB of arguments: small enough to run in the kept instance).
    lro = Lro(wasm, memory=2 << 20)
    cfg = lro.config(output_dir=str(tmp_path), threshold_tokens=100)
    assert lro.offload(cfg, {"operation": "list", "records": records(3)})["kind"] == "inline"
    assert len(lro._sandbox._kept()) == 1
    with pytest.raises(LroError) as caught:
        lro.offload(cfg, {"operation": "list", "records": records(2000, "x" * 200)})
    assert caught.value.kind == "memory-limit" and "2 MiB memory limit" in caught.value.message, caught.value
    assert lro._sandbox._kept() == {}
    out = lro.offload(cfg, {"operation": "list", "records": records(200)})
    assert out["kind"] == "offloaded" and out["count"] == 200, out
    assert [n for n in os.listdir(tmp_path) if n.endswith(".jsonl")] == [os.path.basename(out["path"])]


def test_large_arguments_and_user_filters_run_in_fresh_instances(wasm, tmp_path):
    lro = Lro(wasm)
    cfg = lro.config(output_dir=str(tmp_path), threshold_tokens=100)
    text = json.dumps(records(4000, "x" * 250))
    assert len(text) > 1 << 20
    out = lro.offload(cfg, {"operation": "list", "records": text})
    assert out["kind"] == "offloaded", out
    # Its instance, grown to several times its arguments, was not kept.
    assert lro._sandbox._kept() == {}
    assert lro.extract(cfg, {"path": out["path"], "query": "length", "slurp": True})["values"] == ["4000"]
    assert lro.query(".a", '{"a": 1}')["values"] == ["1"]
    assert lro._sandbox._kept() == {}
    assert lro.offload(cfg, {"operation": "list", "records": records(3)})["kind"] == "inline"
    assert len(lro._sandbox._kept()) == 1
