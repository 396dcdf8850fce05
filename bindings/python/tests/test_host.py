"""The host duties of docs/HOSTS.md that the shared cases cannot see (modes, events, the cache)
and the Python API's handling of bad arguments."""

import json
import os
import stat
import subprocess
import sys
import threading
import time

import pytest
import wasmtime
import wasmtime.component

import lro_wasm
from conftest import HOST_DIR
from lro_wasm import Lro, LroError

RECORDS = [{"id": f"m{i}", "namespace": "_semantic/x", "title": f"Title {i}"} for i in range(100)]


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_missing_directory_is_created_0700_and_new_files_are_0600(lro, tmp_path):
    dir = tmp_path / "a" / "b"
    old = os.umask(0)  # without the host's chmod the files would come out world-readable
    try:
        out = lro.offload(lro.config(output_dir=str(dir), threshold_tokens=100), {"operation": "list", "records": RECORDS})
        tool = lro.intercept(lro.config(output_dir=str(dir), threshold_tokens=100), {"tool": "t", "result": {"content": [
            {"type": "text", "text": json.dumps({"rows": RECORDS})}]}})
    finally:
        os.umask(old)
    assert out["kind"] == "offloaded" and tool["kind"] == "offloaded", (out, tool)
    assert mode(dir) == 0o700 and mode(tmp_path / "a") == 0o700
    assert os.path.dirname(out["path"]) == os.path.realpath(dir)
    assert [mode(p) for p in [out["path"], *tool["files"]]] == [0o600] * (1 + len(tool["files"]))


def test_a_file_that_was_there_before_keeps_its_mode(lro, tmp_path):
    theirs = tmp_path / "notes.txt"
    theirs.write_text("not ours")
    theirs.chmod(0o644)
    lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    assert mode(theirs) == 0o644


def test_the_directory_is_preopened_at_its_canonical_path(lro, tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    out = lro.offload(lro.config(output_dir=str(link) + "/./", threshold_tokens=100), {"operation": "list", "records": RECORDS})
    assert out["path"].startswith(os.path.realpath(real) + "/"), out["path"]
    assert f'"file_path":"{out["path"]}"' in out["descriptor"]


def test_events_arrive_in_order_before_the_call_returns(wasm, tmp_path):
    seen = []
    lro = Lro(wasm, on_event=seen.append)
    first = lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    assert [e["kind"] for e in seen] == ["offload-created"] and seen[0]["path"] == first["path"]
    swept = lro.sweep(lro.config(output_dir=str(tmp_path), ttl_seconds=0), 2**53)
    assert swept["deleted"] == [first["path"]]
    assert [e["kind"] for e in seen] == ["offload-created", "offload-file-expired"]
    assert set(seen[1]) == {"kind", "path", "created", "expired"}


def test_a_failing_event_callback_does_not_fail_the_call(wasm, tmp_path, caplog):
    def broken(_event):
        raise ValueError("sink is down")

    lro = Lro(wasm, on_event=broken)
    out = lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    assert out["kind"] == "offloaded"
    assert "sink is down" in caplog.text


@pytest.mark.parametrize(
    "cfg, request_, kind, text",
    [
        ({"threshold_tokens": "big"}, {"operation": "list", "records": []}, "invalid-config", "config.threshold_tokens"),
        ({"treshold": 5}, {"operation": "list", "records": []}, "invalid-config", "treshold"),
        ({"descriptor": "huge"}, {"operation": "list", "records": []}, "invalid-config", "config.descriptor"),
        ({}, {"operation": "fetch", "records": []}, "invalid-input", "request.operation"),
        ({}, {"operation": "list"}, "invalid-input", "request.records"),
        ({}, {"operation": "list", "records": "[1,"}, "invalid-input", "not valid JSON"),
        ({"prefix": "../evil"}, {"operation": "list", "records": []}, "invalid-config", "prefix"),
        ({"dir": "/x", "native": True}, {"operation": "list", "records": []}, "invalid-config",
         "config: unknown field(s) dir (now output_dir), native (now extract_tool)"),
    ],
)
def test_bad_arguments_raise_lro_errors_naming_the_field(lro, tmp_path, cfg, request_, kind, text):
    with pytest.raises(LroError) as caught:
        lro.offload({**lro.config(output_dir=str(tmp_path)), **cfg}, request_)
    assert caught.value.kind == kind and text in caught.value.message, caught.value


# ---- an unusable offload directory ------------------------------------------------------------


def unusable_dir(tmp_path, kind):
    """(the `output_dir` to configure, the reason the host must give, a check that nothing was left)."""
    if kind == "regular-file":
        file = tmp_path / "file"
        file.write_text("theirs")
        return str(file), "not a directory", lambda: file.read_text() == "theirs" and os.listdir(tmp_path) == ["file"]
    if kind == "parent-is-a-file":
        (tmp_path / "file").write_text("theirs")
        return str(tmp_path / "file" / "sub"), "cannot create it: Not a directory (os error 20)", \
            lambda: os.listdir(tmp_path) == ["file"]
    if kind in ("world-writable", "group-writable"):
        dir = tmp_path / "shared"
        dir.mkdir()
        dir.chmod(0o777 if kind == "world-writable" else 0o770)
        who = "everyone (mode 777)" if kind == "world-writable" else "its group (mode 770)"
        return str(dir), f"writable by {who}; refusing to use it: make it 0700", lambda: os.listdir(dir) == []
    if kind in ("world-readable", "group-readable", "world-searchable"):
        # Issue 34, item 7: another user who can enter the directory could open a file while it
        # is being written, so reading or entering is refused like writing.
        mode = {"world-readable": 0o755, "group-readable": 0o750, "world-searchable": 0o711}[kind]
        dir = tmp_path / "open"
        dir.mkdir()
        dir.chmod(mode)
        what = {"world-readable": "readable by everyone", "group-readable": "readable by its group",
                "world-searchable": "searchable by everyone"}[kind]
        return str(dir), f"{what} (mode {mode:o}); refusing to use it: make it 0700", lambda: os.listdir(dir) == []
    if kind == "owned-by-another-user":
        me = os.geteuid()
        if me == 0:  # root can give a directory away
            dir = tmp_path / "theirs"
            dir.mkdir(mode=0o700)
            os.chown(dir, 65534, -1)
            other = 65534
        else:  # anyone else finds one owned by root
            dir, other = "/", 0
        return str(dir), f"owned by uid {other}, not by this user (uid {me}); refusing to use it", \
            lambda: not [n for n in os.listdir(dir) if n.startswith("atlatl-")]
    raise AssertionError(kind)


UNUSABLE = ["regular-file", "parent-is-a-file", "world-writable", "group-writable", "world-readable", "group-readable",
            "world-searchable", "owned-by-another-user"]


@pytest.mark.parametrize("kind", UNUSABLE)
def test_an_unusable_directory_degrades_offload_and_intercept_with_the_reason(wasm, tmp_path, kind):
    dir, reason, nothing_left = unusable_dir(tmp_path, kind)
    seen = []
    lro = Lro(wasm, on_event=seen.append)
    out = lro.offload(lro.config(output_dir=dir, threshold_tokens=100), {"operation": "list", "records": RECORDS})
    assert out["kind"] == "degraded", out
    assert f"offload directory {dir}: {reason}" in out["warning"], out["warning"]
    [event] = seen
    assert event["kind"] == "offload-write-failed" and reason in event["error"], event
    assert event["path"].startswith(os.path.abspath(dir) + "/"), event
    memory = lro.intercept(lro.config(output_dir=dir, threshold_tokens=100), {"tool": "recall_memories", "result": {"content": [
        {"type": "text", "text": json.dumps(RECORDS)}]}})
    assert memory["kind"] == "degraded" and reason in memory["warning"], memory
    # A generic tool's result degrades too. (Its warning does not give the host's reason yet:
    # the component's generic profile tries the write without consulting `dir_problem`.)
    generic = lro.intercept(lro.config(output_dir=dir, threshold_tokens=100), {"tool": "t", "result": {"content": [
        {"type": "text", "text": json.dumps({"rows": RECORDS})}]}})
    assert generic["kind"] == "degraded", generic
    assert [e["kind"] for e in seen] == ["offload-write-failed"] * 3
    assert nothing_left()


def test_an_unusable_relative_directory_is_reported_as_an_absolute_path(lro, tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.chdir(tmp_path)
    out = lro.offload(lro.config(output_dir="file", threshold_tokens=100), {"operation": "list", "records": RECORDS})
    assert out["kind"] == "degraded" and f"{tmp_path}/file/atlatl-list-" in out["warning"], out


def test_a_read_only_directory_degrades_even_for_root(wasm, tmp_path):
    seen = []
    lro = Lro(wasm, on_event=seen.append)
    tmp_path.chmod(0o500)  # root could write into it, but the host mounts it read-only
    try:
        out = lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    finally:
        tmp_path.chmod(0o700)
    assert out["kind"] == "degraded", out
    assert [e["kind"] for e in seen] == ["offload-write-failed"], seen
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kind", UNUSABLE)
def test_extract_call_tool_and_sweep_refuse_an_unusable_directory(lro, tmp_path, kind):
    dir, reason, _ = unusable_dir(tmp_path, kind)
    calls = {
        "extract": lambda: lro.extract(lro.config(output_dir=dir), {"path": f"{dir}/x.jsonl", "query": "."}),
        "call_tool": lambda: lro.call_tool(lro.config(output_dir=dir), {"file_path": f"{dir}/x.jsonl", "query": "."}),
        "sweep": lambda: lro.sweep(lro.config(output_dir=dir), 0),
    }
    for name, run in calls.items():
        with pytest.raises(LroError) as caught:
            run()
        assert caught.value.kind == "directory", f"{name}: {caught.value}"
        if kind == "parent-is-a-file":  # nothing is created for these calls: it just does not exist
            assert caught.value.message == f"offload directory {dir}: Not a directory (os error 20)", name
        else:
            assert caught.value.message == f"offload directory {dir}: {reason}", f"{name}: {caught.value}"
    with pytest.raises(LroError) as caught:
        lro.extract({"output_dir": str(tmp_path / "missing")}, {"path": "/x", "query": "."})
    assert caught.value.kind == "directory" and "No such file or directory" in caught.value.message


def test_a_directory_wasmtime_cannot_open_degrades_too(lro, tmp_path, monkeypatch):
    # Root opens any directory, so the failure is injected where wasmtime opens it.
    def refuse(*_args, **_kwargs):
        raise wasmtime.WasmtimeError("failed to add preopen dir")

    monkeypatch.setattr(wasmtime.WasiConfig, "preopen_dir", refuse)
    out = lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    assert out["kind"] == "degraded" and f"offload directory {tmp_path}: cannot open it" in out["warning"], out
    with pytest.raises(LroError) as caught:
        lro.extract(lro.config(output_dir=str(tmp_path)), {"path": f"{tmp_path}/x.jsonl", "query": "."})
    assert caught.value.kind == "directory" and "cannot open it" in caught.value.message, caught.value
    assert os.listdir(tmp_path) == []


def test_dir_problem_is_set_by_the_host_only(lro, tmp_path):
    with pytest.raises(LroError) as caught:
        lro.offload({**lro.config(output_dir=str(tmp_path)), "dir_problem": "mine"}, {"operation": "list", "records": []})
    assert caught.value.kind == "invalid-config" and "dir_problem" in caught.value.message


# ---- files are private, links and FIFOs are left alone -----------------------------------------


def test_a_planted_symlink_is_not_followed_by_the_chmod(lro, tmp_path):
    dir = tmp_path / "offload"
    dir.mkdir(mode=0o700)
    target = tmp_path / "outside.txt"
    target.write_text("not ours")
    target.chmod(0o644)
    os.symlink(target, dir / "atlatl-list-01JDEF7X2K0000000000000000.jsonl")
    out = lro.offload(lro.config(output_dir=str(dir), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    assert out["kind"] == "offloaded" and mode(out["path"]) == 0o600
    assert mode(target) == 0o644
    # The narrowing step itself, handed a link or a FIFO at a file's name: neither is changed
    # (a chmod through the path would follow the link; an open without O_NONBLOCK would hang).
    fifo = dir / "atlatl-list-01JDEF7X2K0000000000000001.jsonl"
    os.mkfifo(fifo, 0o644)
    for planted in (dir / "atlatl-list-01JDEF7X2K0000000000000000.jsonl", fifo):
        lro_wasm._directory.owner_only(str(dir), str(planted))
    assert mode(target) == 0o644 and mode(fifo) == 0o644


def test_a_fifo_with_an_lro_name_is_refused_promptly(lro, tmp_path):
    fifo = tmp_path / "atlatl-recall-01JDEF7X2K0000000000000000.jsonl"
    os.mkfifo(fifo, 0o600)
    outcome = {}

    def extract():
        start = time.monotonic()
        try:
            lro.extract(lro.config(output_dir=str(tmp_path)), {"path": str(fifo), "recipe": 1})
        except LroError as e:
            outcome["error"] = e
        outcome["took"] = time.monotonic() - start

    worker = threading.Thread(target=extract, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():  # blocked opening the FIFO: release it, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("extract blocked on a FIFO")
    error = outcome.get("error")
    assert error is not None and error.kind == "not-lro-file", outcome
    assert outcome["took"] < 0.3, outcome  # the filter deadline is 1 s: this is not a timeout
    # The next call works.
    out = lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    assert len(lro.extract(lro.config(output_dir=str(tmp_path)), {"path": out["path"], "recipe": 4})["values"]) == len(RECORDS)


# ---- faults ---------------------------------------------------------------------------------


def test_a_directory_deleted_between_offload_and_extract_is_an_error_naming_it(lro, tmp_path):
    dir = tmp_path / "offload"
    out = lro.offload(lro.config(output_dir=str(dir), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    for name in os.listdir(dir):
        os.unlink(dir / name)
    dir.rmdir()
    with pytest.raises(LroError) as caught:
        lro.extract(lro.config(output_dir=str(dir)), {"path": out["path"], "recipe": 1})
    assert caught.value.kind == "directory" and str(dir) in caught.value.message, caught.value
    with pytest.raises(LroError) as caught:
        lro.call_tool(lro.config(output_dir=str(dir)), {"file_path": out["path"], "recipe": 1})
    assert caught.value.kind == "directory" and str(dir) in caught.value.message, caught.value


def test_a_file_truncated_mid_record_is_corrupt_naming_the_line(lro, tmp_path):
    out = lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    with open(out["path"], "rb") as f:
        data = f.read()
    # Cut the file in the middle of its last record (line len(RECORDS) + 1, after the header).
    last = data.rstrip(b"\n").rindex(b"\n") + 1
    with open(out["path"], "wb") as f:
        f.write(data[: last + 10])
    with pytest.raises(LroError) as caught:
        lro.extract(lro.config(output_dir=str(tmp_path)), {"path": out["path"], "query": ".id"})
    assert caught.value.kind == "corrupt", caught.value
    assert f"line {len(RECORDS) + 1}" in caught.value.message, caught.value


# ---- the functions added with the lro_extract tool ------------------------------------------


def test_tool_definition_call_tool_and_rewrite_tools(lro, tmp_path):
    definition = json.loads(lro.tool_definition())
    assert definition["name"] == "lro_extract" and "file_path" in definition["inputSchema"]["properties"]
    out = lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100), {"operation": "list", "records": RECORDS})
    # Arguments as an object or as JSON text, exactly as a tools/call request carries them.
    for arguments in ({"file_path": out["path"], "query": "length", "slurp": True},
                      json.dumps({"file_path": out["path"], "recipe": 4})):
        result = lro.call_tool(lro.config(output_dir=str(tmp_path)), arguments)
        assert result["values"] == [str(len(RECORDS))] or len(result["values"]) == len(RECORDS), result
    with pytest.raises(LroError) as caught:
        lro.call_tool(lro.config(output_dir=str(tmp_path)), {"file_path": out["path"], "recipe": 1, "bogus": 2})
    assert caught.value.kind == "invalid-request" and "bogus" in caught.value.message
    tools = [{"name": "search", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]
    rewritten = json.loads(lro.rewrite_tools(lro.config(output_dir=str(tmp_path), extract_tool=True), tools))
    assert rewritten == [{"name": "search", "inputSchema": {"type": "object"}}, definition]
    assert json.loads(lro.rewrite_tools(lro.config(output_dir=str(tmp_path)), json.dumps(tools))) == rewritten[:1]


def test_files_evicted_for_max_files_arrive_as_events(wasm, tmp_path):
    seen = []
    lro = Lro(wasm, on_event=seen.append)
    # ttl 0: each file has expired once written, so the next may evict it.
    cfg = lro.config(output_dir=str(tmp_path), threshold_tokens=100, max_files=1, ttl_seconds=0)
    first = lro.offload(cfg, {"operation": "list", "records": RECORDS})
    second = lro.offload(cfg, {"operation": "list", "records": RECORDS})
    assert [e["kind"] for e in seen] == ["offload-created", "offload-file-evicted", "offload-created"], seen
    assert seen[1] == {"kind": "offload-file-evicted", "path": first["path"], "bytes": first["bytes"], "cap": "max-files"}
    assert os.listdir(tmp_path) == [os.path.basename(second["path"])]
    # A file within the expiry it recorded is never evicted: the next write degrades instead.
    os.remove(second["path"])
    kept = lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100, max_files=1), {"operation": "list", "records": RECORDS})
    third = lro.offload(cfg, {"operation": "list", "records": RECORDS})
    assert third["kind"] == "degraded" and "(max_files) is taken by files that have not expired" in third["warning"], third
    assert os.listdir(tmp_path) == [os.path.basename(kept["path"])]


def test_values_in_the_json_form(lro, tmp_path):
    assert lro.estimate("hello world") == 3
    recipes = lro.recipes(lro.config(output_dir=str(tmp_path)), "medium", "/f.jsonl")
    assert [r["number"] for r in recipes] == list(range(1, 11))
    assert set(recipes[1]) == {"number", "description", "program", "slurp", "raw", "params", "command"}
    assert recipes[1]["params"] == [{"name": "namespace", "default": "_semantic"}]
    out = lro.intercept(lro.config(output_dir=str(tmp_path)), {"tool": "t", "result": {"content": [{"type": "text", "text": "hi"}]}})
    assert out == {"kind": "unchanged", "reason": "under-threshold", "tokens": out["tokens"]}
    with pytest.raises(LroError) as caught:
        lro.extract(lro.config(output_dir=str(tmp_path)), {"path": str(tmp_path / "atlatl-recall-01JDEF7X2K0000000000000000.jsonl"), "recipe": 1})
    assert caught.value.kind == "not-found"


def test_the_compiled_component_is_cached_privately(wasm, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("LRO_CACHE_DIR", str(cache))
    compiled = []
    compile = lro_wasm._cache.compile_component
    monkeypatch.setattr(lro_wasm._cache, "compile_component", lambda *args: compiled.append(1) or compile(*args))
    Lro(wasm)
    assert len(compiled) == 1
    [artifact] = os.listdir(cache)
    assert artifact.startswith("lro-py-") and artifact.endswith(".cwasm")
    assert mode(cache) == 0o700 and mode(cache / artifact) == 0o600
    assert Lro(wasm).estimate("abcd") == 1
    assert len(compiled) == 1, "the second load compiled the component again: the cache missed"
    (cache / artifact).write_bytes(b"garbage")  # a broken artifact is compiled again, not trusted
    assert Lro(wasm).estimate("abcd") == 1
    assert len(compiled) == 2
    assert Lro(wasm).estimate("abcd") == 1  # and replaced in the cache by a good one
    assert len(compiled) == 2 and os.listdir(cache) == [artifact]


def test_a_read_only_file_system_degrades_naming_it(wasm, tmp_path):
    """A tmpfs mounted read-only in a private mount namespace (`unshare`, as root or in a user
    namespace): wasmtime reports its writes as a bare I/O error, so the host names the cause."""
    mount = tmp_path / "ro"
    mount.mkdir()
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(HOST_DIR)!r})\n"
        "from lro_wasm import Lro\n"
        f"lro = Lro({wasm!r})\n"
        f"out = lro.offload(lro.config(output_dir={str(mount)!r}, threshold_tokens=100), "
        f"{{'operation': 'list', 'records': {RECORDS!r}}})\n"
        "print(json.dumps(out))\n"
    )
    namespace = "-m" if os.geteuid() == 0 else "-rm"
    run = subprocess.run(
        ["unshare", namespace, "sh", "-c",
         f"mount -t tmpfs -o size=1m,mode=0700,ro tmpfs '{mount}' && exec '{sys.executable}' -c \"$0\"", script],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0 and "mount:" not in run.stderr, run.stderr
    out = json.loads(run.stdout)
    assert out["kind"] == "degraded", out
    assert "on a read-only file system" in out["warning"], out["warning"]


# ---- configuration: the component's defaults, the spec's names, the default directory --------


def test_defaults_come_from_the_component_and_config_layers_over_them(lro):
    defaults = lro.defaults()
    assert set(defaults) == {"enabled", "threshold_tokens", "ttl_seconds", "output_dir", "prefix", "descriptor",
                             "extract_tool", "schema_version", "recipes", "tools", "max_bytes", "max_files"}
    assert defaults["threshold_tokens"] == 1600 and defaults["output_dir"] == "" and defaults["tools"] == []
    defaults["tools"].append({"name": "mine"})
    assert lro.defaults()["tools"] == [], "defaults() must hand out a copy"
    tools = [{"name": "search", "threshold_tokens": 10}]
    cfg = lro.config(threshold_tokens=5, extract_tool=True, tools=tools)
    assert cfg == {**lro.defaults(), "threshold_tokens": 5, "extract_tool": True, "tools": tools}
    for overrides, text in [
        ({"threshold": 5}, "config: unknown field(s) threshold (now threshold_tokens)"),
        ({"colour": "red"}, "config: unknown field(s) colour"),
        ({"ttl_seconds": -1}, "config.ttl_seconds: expected an integer"),
        ({"tools": [{"name": "t", "threshold": 3}]}, "config.tools[0]: unknown field(s) threshold (now threshold_tokens)"),
        ({"dir_problem": "mine"}, "config.dir_problem: set by the host"),
    ]:
        with pytest.raises(LroError) as caught:
            lro.config(**overrides)
        assert caught.value.kind == "invalid-config" and text in caught.value.message, caught.value


def test_an_empty_or_omitted_output_dir_is_the_default_directory(lro, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the default directory is lro-{uid} in $TMPDIR
    default = tmp_path / f"lro-{os.geteuid()}"
    assert lro_wasm.default_output_dir() == str(default)
    out = lro.offload({"threshold_tokens": 100}, {"operation": "list", "records": RECORDS})
    assert out["kind"] == "offloaded" and os.path.dirname(out["path"]) == os.path.realpath(default), out
    assert mode(default) == 0o700 and mode(out["path"]) == 0o600
    for cfg in ({}, lro.config(), {"output_dir": ""}):
        assert len(lro.extract(cfg, {"path": out["path"], "recipe": 4})["values"]) == len(RECORDS)
    # Calls that mount nothing get the same absolute path (the component refuses a relative one).
    assert len(lro.recipes({}, "light")) == 10
    assert json.loads(lro.rewrite_tools({"extract_tool": True}, []))[0]["name"] == "lro_extract"
    # An unusable default directory degrades naming it, like any other.
    for name in os.listdir(default):
        os.unlink(default / name)
    default.rmdir()
    default.write_text("theirs")
    degraded = lro.offload({"threshold_tokens": 100}, {"operation": "list", "records": RECORDS})
    assert degraded["kind"] == "degraded", degraded
    assert f"offload directory {default}: not a directory" in degraded["warning"], degraded["warning"]
    with pytest.raises(LroError) as caught:
        lro.sweep({}, 0)
    assert caught.value.kind == "directory" and caught.value.message == f"offload directory {default}: not a directory"


def test_each_json_input_is_a_string_the_component_takes(lro):
    """JSON_INPUTS is the one list the component's types cannot give (a `json` alias is a plain
    string to wasmtime-py): each name in it must still be a string field or parameter."""
    strings = set()

    def walk(name, ty):
        if isinstance(ty, wasmtime.component.String):
            strings.add(name)
        elif isinstance(ty, wasmtime.component.RecordType):
            for field, field_type in ty.fields:
                walk(field.replace("-", "_"), field_type)
        elif isinstance(ty, (wasmtime.component.OptionType, wasmtime.component.ListType)):
            walk(name, ty.payload if isinstance(ty, wasmtime.component.OptionType) else ty.element)

    for function in lro._sandbox.functions.values():
        for name, ty in function.params:
            walk(name.replace("-", "_"), ty)
    assert lro_wasm._convert.JSON_INPUTS <= strings, lro_wasm._convert.JSON_INPUTS - strings


def test_a_file_that_is_not_a_component_fails_to_load_naming_it(tmp_path):
    bogus = tmp_path / "lro.wasm"
    bogus.write_bytes(b"\0asm not really")
    for path, text in [(bogus, "not a component wasmtime can load"), (tmp_path / "missing.wasm", "cannot read")]:
        with pytest.raises(LroError) as caught:
            Lro(str(path), cache_dir=None)
        assert caught.value.kind == "load" and caught.value.message.startswith(f"{path}: {text}"), caught.value
