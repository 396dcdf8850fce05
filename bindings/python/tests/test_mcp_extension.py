"""`lro_wasm.mcp.LroExtension` in process, driven by the SDK's client connected to the server
object: sweeping (at start, then every ttl/2), component calls off the event loop, a failing
intercept forwarding the result, misconfigurations reported, configuration read like the
command's. (Over stdio: test_mcp_example.py and test_package.py.)"""

import asyncio
import gc
import json
import logging
import os
import threading
import time

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from lro_wasm import Lro, LroError
from lro_wasm.mcp import EXTRACT_TOOL, LroExtension

ROWS = [{"id": i, "title": f"Row {i}", "body": "lorem ipsum " * 5} for i in range(200)]


@pytest.fixture
def make(wasm, tmp_path, monkeypatch):
    """Builds extensions on `tmp_path/offload` (no ATLATL_* variables of the caller's) and
    closes them after the test."""
    for name in list(os.environ):
        if name.startswith("ATLATL_PROMPT__OFFLOAD__"):
            monkeypatch.delenv(name)
    made = []

    def build(**kwargs):
        kwargs.setdefault("output_dir", str(tmp_path / "offload"))
        extension = LroExtension(lro=kwargs.pop("lro", None) or Lro(wasm), **kwargs)
        made.append(extension)
        return extension

    yield build
    for extension in made:
        extension.close()


def server_with(extension, middleware=True, extensions=True):
    server = MCPServer("t", extensions=[extension] if extensions else [],
                       middleware=[extension.middleware] if middleware else [])

    @server.tool(structured_output=False)
    def rows(count: int = 200) -> str:
        return json.dumps(ROWS[:count])

    return server


def run(server, body):
    async def session():
        async with Client(server) as client:
            return await body(client)
    return asyncio.run(asyncio.wait_for(session(), 60))


def expired_file(lro, dir):
    """An LRO file in `dir` created two hours ago with a ttl of an hour (its header and
    modification time say so): it expired an hour ago."""
    out = lro.offload(lro.config(output_dir=str(dir), threshold_tokens=10), {"operation": "list", "records": ROWS})
    with open(out["path"]) as f:
        header, rest = f.readline(), f.read()
    header = json.loads(header)
    header["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 7200))
    header["expires_at"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 3600))
    with open(out["path"], "w") as f:
        f.write(json.dumps(header) + "\n" + rest)
    os.utime(out["path"], (time.time() - 7200, time.time() - 7200))
    return out["path"]


def wait_until(condition, seconds):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def test_expired_files_are_swept_at_start(make, wasm, tmp_path):
    lro = Lro(wasm)
    old = expired_file(lro, tmp_path / "offload")
    fresh = lro.offload(lro.config(output_dir=str(tmp_path / "offload"), threshold_tokens=10),
                        {"operation": "list", "records": ROWS})["path"]
    extension = make(lro=lro)
    assert extension.sweep_interval == 1800  # the next sweep is half an hour away
    assert wait_until(lambda: not os.path.exists(old), 10), "the sweep at start did not delete the expired file"
    assert os.path.exists(fresh)


def test_expired_files_are_swept_periodically(make, wasm, tmp_path):
    extension = make(ttl_seconds=2)
    assert extension.sweep_interval == 1
    time.sleep(0.5)  # past the sweep at start
    old = expired_file(Lro(wasm), tmp_path / "offload")
    assert wait_until(lambda: not os.path.exists(old), 10), "no periodic sweep deleted the expired file"


@pytest.mark.parametrize("ttl, interval", [(0, 1), (1, 1), (7, 3.5), (3600, 1800), (7200, 3600), (10**9, 3600)])
def test_the_sweep_interval_is_half_the_ttl_from_a_second_to_an_hour(make, ttl, interval):
    assert make(ttl_seconds=ttl).sweep_interval == interval


def sweepers():
    return [t for t in threading.enumerate() if t.name == "lro-sweep"]


def test_the_sweeper_ends_with_close_and_with_the_extension(make, wasm, tmp_path):
    before = set(sweepers())  # other tests' extensions may not be collected yet
    extension = make()
    [thread] = set(sweepers()) - before
    extension.close()
    assert not thread.is_alive()
    extension = LroExtension(lro=Lro(wasm), output_dir=str(tmp_path))
    [thread] = set(sweepers()) - before
    del extension
    gc.collect()
    thread.join(5)
    assert not thread.is_alive(), "the sweeper outlived its extension"


def test_component_calls_run_off_the_event_loop(make):
    extension = make()
    threads = {}
    for name in ("intercept", "call_tool", "rewrite_tools"):
        def spy(*args, _name=name, _real=getattr(extension.lro, name)):
            threads[_name] = threading.current_thread()
            return _real(*args)
        setattr(extension.lro, name, spy)

    async def body(client):
        await client.list_tools()
        descriptor = json.loads((await client.call_tool("rows", {})).content[0].text)
        [path] = descriptor["files"].values()
        answer = await client.call_tool(EXTRACT_TOOL, {"file_path": path, "query": "length", "slurp": True})
        assert answer.content[0].text == "200"
        return threading.current_thread()

    loop_thread = run(server_with(extension), body)
    assert set(threads) == {"intercept", "call_tool", "rewrite_tools"}
    assert all(thread is not loop_thread for thread in threads.values()), threads


@pytest.mark.parametrize("failure", [LroError("timeout", "limit exceeded: ..."), RuntimeError("a bug")])
def test_a_failing_intercept_forwards_the_result_unchanged(make, caplog, failure):
    extension = make()

    def broken(*_args):
        raise failure

    extension.lro.intercept = broken
    result = run(server_with(extension), lambda client: client.call_tool("rows", {}))
    assert not result.is_error and json.loads(result.content[0].text) == ROWS
    assert any(r.levelno >= logging.WARNING and "forwarding its result unchanged" in r.getMessage() for r in caplog.records)


def test_a_server_with_its_own_lro_extract_fails_tools_list_saying_so(make):
    extension = make()
    server = server_with(extension)

    @server.tool(name=EXTRACT_TOOL)
    def mine() -> str:
        return "mine"

    with pytest.raises(Exception) as caught:
        run(server, lambda client: client.list_tools())
    # In process, the server's error reaches the client inside the SDK's task group.
    found, pending = [], [caught.value]
    while pending:
        error = pending.pop()
        pending.extend(getattr(error, "exceptions", []))
        found += [error] if isinstance(error, MCPError) else []
    assert [e.message for e in found] == [
        "lro: invalid-input: the server already has a tool named lro_extract; lro cannot add its own under that name"]


def errors(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "lro_wasm.mcp" and r.levelno == logging.ERROR]


def test_a_missing_middleware_is_reported_once(make, caplog):
    extension = make()

    async def body(client):
        tools = {t.name for t in (await client.list_tools()).tools}
        await client.call_tool("rows", {})
        await client.call_tool("rows", {"count": 1})
        return tools

    assert run(server_with(extension, middleware=False), body) == {"rows"}  # no lro_extract listed
    assert [e for e in errors(caplog) if "middleware is not installed" in e] == [
        "LroExtension: its middleware is not installed, so tools/list neither lists lro_extract nor drops the "
        "outputSchema of tools whose results may be offloaded: create the server with MCPServer(..., "
        "extensions=[lro], middleware=[lro.middleware])"]


def test_a_missing_extension_is_reported(make, caplog):
    extension = make()
    result = run(server_with(extension, extensions=False), lambda client: client.call_tool("rows", {}))
    assert json.loads(result.content[0].text) == ROWS  # not offloaded: nothing intercepts
    assert [e for e in errors(caplog) if "the extension is not" in e] == [
        "LroExtension: its middleware is installed but the extension is not, so no result is offloaded and "
        "lro_extract cannot be called: create the server with MCPServer(..., extensions=[lro], "
        "middleware=[lro.middleware])"]
    assert run(server_with(make()), lambda client: client.list_tools()) and \
        len([e for e in errors(caplog) if "the extension is not" in e]) == 1, "reported for a complete server"


def test_configuration_comes_from_arguments_environment_and_file(make, tmp_path, monkeypatch):
    file = tmp_path / "lro.toml"
    file.write_text("[prompt.offload]\nthreshold_tokens = 100\nttl_seconds = 60\n[prompt.offload.tools.rows]\nthreshold_tokens = 7\n")
    monkeypatch.setenv("ATLATL_PROMPT__OFFLOAD__TTL_SECONDS", "90")
    extension = make(config_file=file, prefix="mine")
    c = extension.config
    assert (c["threshold_tokens"], c["ttl_seconds"], c["prefix"], c["extract_tool"]) == (100, 90, "mine", True)
    assert c["tools"] == [{"name": "rows", "enabled": None, "threshold_tokens": 7, "sections": None, "inline_keys": None}]
    assert extension.settings() == {"output_dir": str(tmp_path / "offload"), "threshold_tokens": 100, "extract_tool": True}
    descriptor = json.loads(run(server_with(extension), lambda client: client.call_tool("rows", {"count": 3})).content[0].text)
    assert descriptor["offloaded"] is True, "the tool's own threshold (7 tokens) was not applied"
    assert os.path.basename(descriptor["files"]["results"]).startswith("mine-")


def test_extract_tool_can_be_turned_off_like_any_key(make, monkeypatch):
    monkeypatch.setenv("ATLATL_PROMPT__OFFLOAD__EXTRACT_TOOL", "false")
    extension = make()
    assert extension.config["extract_tool"] is False

    async def body(client):
        tools = {t.name for t in (await client.list_tools()).tools}
        descriptor = json.loads((await client.call_tool("rows", {})).content[0].text)
        return tools, descriptor

    tools, descriptor = run(server_with(extension), body)
    assert tools == {"rows"} and "lro_extract(" not in descriptor["guidance"], descriptor["guidance"]
    assert make(extract_tool=True).config["extract_tool"] is True  # an argument beats the environment


def test_a_bad_setting_raises_naming_the_key_and_its_source(make, monkeypatch):
    with pytest.raises(LroError) as caught:
        make(threshold_tokens="lots")
    assert caught.value.message == ('prompt.offload.threshold_tokens (from the arguments of LroExtension): '
                                    'expected a whole number from 0 to 4294967295, got "lots"')
    with pytest.raises(LroError) as caught:
        make(threshold=5)
    assert caught.value.message.startswith("unknown key prompt.offload.threshold in the arguments of LroExtension (now threshold_tokens)")
    monkeypatch.setenv("ATLATL_PROMPT__OFFLOAD__MAX_FILES", "-1")
    with pytest.raises(LroError) as caught:
        make()
    assert caught.value.message == ("prompt.offload.max_files (from ATLATL_PROMPT__OFFLOAD__MAX_FILES): "
                                    'expected a whole number from 0 to 4294967295, got "-1"')
