"""The host duties of docs/HOSTS.md that the shared cases cannot see (modes, events, the cache)
and the Python API's handling of bad arguments."""

import os
import stat

import pytest

from lro_wasm import Lro, LroError, config

RECORDS = [{"id": f"m{i}", "namespace": "_semantic/x", "title": f"Title {i}"} for i in range(100)]


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_missing_directory_is_created_0700_and_new_files_are_0600(lro, tmp_path):
    dir = tmp_path / "a" / "b"
    old = os.umask(0)  # without the host's chmod the file would come out world-readable
    try:
        out = lro.offload(config(str(dir), threshold=100), {"operation": "list", "records": RECORDS})
    finally:
        os.umask(old)
    assert out["kind"] == "offloaded"
    assert mode(dir) == 0o700 and mode(tmp_path / "a") == 0o700
    assert os.path.dirname(out["path"]) == os.path.realpath(dir)
    assert mode(out["path"]) == 0o600


def test_a_file_that_was_there_before_keeps_its_mode(lro, tmp_path):
    theirs = tmp_path / "notes.txt"
    theirs.write_text("not ours")
    theirs.chmod(0o644)
    lro.offload(config(str(tmp_path), threshold=100), {"operation": "list", "records": RECORDS})
    assert mode(theirs) == 0o644


def test_the_directory_is_preopened_at_its_canonical_path(lro, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    out = lro.offload(config(str(link) + "/./", threshold=100), {"operation": "list", "records": RECORDS})
    assert out["path"].startswith(os.path.realpath(real) + "/"), out["path"]
    assert f'"file_path":"{out["path"]}"' in out["descriptor"]


def test_a_read_only_directory_degrades_even_for_root(lro, tmp_path):
    tmp_path.chmod(0o500)
    try:
        out = lro.offload(config(str(tmp_path), threshold=100), {"operation": "list", "records": RECORDS})
    finally:
        tmp_path.chmod(0o700)
    assert out["kind"] == "degraded", out
    assert os.listdir(tmp_path) == []


def test_events_arrive_in_order_before_the_call_returns(wasm, tmp_path):
    seen = []
    lro = Lro(wasm, on_event=seen.append)
    first = lro.offload(config(str(tmp_path), threshold=100), {"operation": "list", "records": RECORDS})
    assert [e["kind"] for e in seen] == ["offload-created"] and seen[0]["path"] == first["path"]
    swept = lro.sweep(config(str(tmp_path), ttl=0), 2**53)
    assert swept["deleted"] == [first["path"]]
    assert [e["kind"] for e in seen] == ["offload-created", "offload-file-expired"]
    assert set(seen[1]) == {"kind", "path", "created", "expired"}


def test_a_failing_event_callback_does_not_fail_the_call(wasm, tmp_path, caplog):
    def broken(_event):
        raise ValueError("sink is down")

    lro = Lro(wasm, on_event=broken)
    out = lro.offload(config(str(tmp_path), threshold=100), {"operation": "list", "records": RECORDS})
    assert out["kind"] == "offloaded"
    assert "sink is down" in caplog.text


@pytest.mark.parametrize(
    "cfg, request_, kind, text",
    [
        ({"threshold": "big"}, {"operation": "list", "records": []}, "invalid-config", "config.threshold"),
        ({"treshold": 5}, {"operation": "list", "records": []}, "invalid-config", "treshold"),
        ({"descriptor": "huge"}, {"operation": "list", "records": []}, "invalid-config", "config.descriptor"),
        ({}, {"operation": "fetch", "records": []}, "invalid-input", "request.operation"),
        ({}, {"operation": "list"}, "invalid-input", "request.records"),
        ({}, {"operation": "list", "records": "[1,"}, "invalid-input", "not valid JSON"),
        ({"prefix": "../evil"}, {"operation": "list", "records": []}, "invalid-config", "prefix"),
    ],
)
def test_bad_arguments_raise_lro_errors_naming_the_field(lro, tmp_path, cfg, request_, kind, text):
    with pytest.raises(LroError) as caught:
        lro.offload({**config(str(tmp_path)), **cfg}, request_)
    assert caught.value.kind == kind and text in caught.value.message, caught.value


def test_a_directory_that_is_not_one_is_a_directory_error(lro, tmp_path):
    file = tmp_path / "file"
    file.write_text("")
    with pytest.raises(LroError) as caught:
        lro.offload(config(str(file)), {"operation": "list", "records": []})
    assert caught.value.kind == "directory" and "not a directory" in caught.value.message
    with pytest.raises(LroError) as caught:
        lro.extract({"dir": str(tmp_path / "missing")}, {"path": "/x", "query": "."})
    assert caught.value.kind == "directory"


def test_values_in_the_json_form(lro, tmp_path):
    assert lro.estimate("hello world") == 3
    recipes = lro.recipes(config(str(tmp_path)), "medium", "/f.jsonl")
    assert [r["number"] for r in recipes] == list(range(1, 11))
    assert set(recipes[1]) == {"number", "description", "program", "slurp", "raw", "params", "command"}
    assert recipes[1]["params"] == [{"name": "namespace", "default": "_semantic"}]
    out = lro.intercept(config(str(tmp_path)), {"tool": "t", "result": {"content": [{"type": "text", "text": "hi"}]}})
    assert out == {"kind": "unchanged", "reason": "under-threshold", "tokens": out["tokens"]}
    with pytest.raises(LroError) as caught:
        lro.extract(config(str(tmp_path)), {"path": str(tmp_path / "atlatl-recall-01JDEF7X2K0000000000000000.jsonl"), "recipe": 1})
    assert caught.value.kind == "not-found"


def test_the_compiled_component_is_cached_privately(wasm, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("LRO_CACHE_DIR", str(cache))
    Lro(wasm)
    [artifact] = os.listdir(cache)
    assert artifact.startswith("lro-py-") and artifact.endswith(".cwasm")
    assert mode(cache) == 0o700 and mode(cache / artifact) == 0o600
    assert Lro(wasm).estimate("abcd") == 1  # loaded from the cache
    (cache / artifact).write_bytes(b"garbage")  # a broken artifact is compiled again, not trusted
    assert Lro(wasm).estimate("abcd") == 1
