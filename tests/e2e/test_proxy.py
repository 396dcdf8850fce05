"""`lro proxy` end to end: the real binary, driven by clients nobody here wrote (the Python SDK's
`Client` and the MCP Inspector CLI), in front of real servers from the registries
(server-filesystem and server-everything, over stdio and streamable HTTP) and a Python SDK
memory server (memory_server.py).

Run by `bash tests/run` after `npm install` in tests/e2e (the pinned lockfile); LRO_BIN names
the `lro` binary (default target/debug/lro).
"""

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LRO = os.environ.get("LRO_BIN", str(ROOT / "target" / "debug" / "lro"))
BIN = HERE / "node_modules" / ".bin"
INSPECTOR = BIN / "mcp-inspector"
FILESYSTEM = BIN / "mcp-server-filesystem"
EVERYTHING = BIN / "mcp-server-everything"
MEMORY = [sys.executable, str(HERE / "memory_server.py")]
MODES = ["legacy", "2026-07-28"]


def proxy(out: Path, upstream: list[str], threshold: int = 500) -> list[str]:
    return [LRO, "proxy", "--output-dir", str(out), "--threshold", str(threshold), "--", *upstream]


def client(command: list[str], mode: str = "legacy", **kwargs) -> Client:
    return Client(StdioServerParameters(command=command[0], args=command[1:]), mode=mode, **kwargs)


def run(coroutine):
    return asyncio.run(coroutine)


def records(path: str) -> list[dict]:
    lines = Path(path).read_text().splitlines()
    assert json.loads(lines[0]).get("_lro_header") or "lro" in lines[0], "line 1 is the header"
    return [json.loads(line) for line in lines[1:]]


def messages(error: BaseException) -> str:
    """The messages of an error and, for an exception group (anyio's), of everything in it."""
    if isinstance(error, BaseExceptionGroup):
        return " | ".join(messages(e) for e in error.exceptions)
    return str(error)


def printed_call(guidance: str) -> dict:
    """The `lro_extract(...)` call the guidance prints, as the arguments a model would send."""
    match = re.search(r"lro_extract\((.*?)\)(?:,|\.|\s|$)", guidance)
    assert match, f"the guidance shows an lro_extract call: {guidance}"
    arguments = {}
    for key, value in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,\s)]+)', match.group(1)):
        arguments[key] = json.loads(value)
    return arguments


# --- the Python SDK client -------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_memory_results_become_descriptors_holding_the_servers_records(tmp_path, mode):
    async def main():
        async with client(MEMORY, "legacy") as direct:
            answer = await direct.call_tool("recall_memories", {"query": "caching", "limit": 400})
            expected = json.loads(answer.content[0].text)
        async with client(proxy(tmp_path, MEMORY), mode) as session:
            tools = await session.list_tools()
            assert [t.name for t in tools.tools][-1] == "lro_extract"
            result = await session.call_tool("recall_memories", {"query": "caching", "limit": 400})
            descriptor = json.loads(result.content[0].text)
            assert descriptor["offloaded"] is True
            assert records(descriptor["file_path"]) == expected["memories"], "the file holds exactly the server's records"
            # The model's next step, exactly as the guidance prints it.
            arguments = printed_call(descriptor["guidance"])
            extracted = await session.call_tool("lro_extract", arguments)
            assert not extracted.is_error, extracted.content[0].text
            assert extracted.content[0].text.strip()
            counted = await session.call_tool("lro_extract", {"file_path": descriptor["file_path"], "query": "length", "slurp": True})
            assert counted.content[0].text == "400"

    run(main())


@pytest.mark.parametrize("mode", MODES)
def test_small_results_are_identical_to_a_direct_connection(tmp_path, mode):
    async def main():
        async with client(MEMORY, "legacy") as direct:
            want = await direct.call_tool("recall_memories", {"query": "auth", "limit": 2})
        async with client(proxy(tmp_path, MEMORY), mode) as session:
            got = await session.call_tool("recall_memories", {"query": "auth", "limit": 2})
        assert got.content == want.content and got.structured_content == want.structured_content
        assert got.is_error == want.is_error

    run(main())


@pytest.mark.parametrize("mode", MODES)
def test_progress_arrives(tmp_path, mode):
    async def main():
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total))

        async with client(proxy(tmp_path, MEMORY), mode) as session:
            result = await session.call_tool("reindex", {"steps": 3}, progress_callback=on_progress)
        assert result.content[0].text == "reindexed in 3 steps"
        assert seen == [(1, 3), (2, 3), (3, 3)]

    run(main())


def test_a_crashing_upstream_fails_the_call_within_seconds(tmp_path):
    async def main():
        async with client(proxy(tmp_path, MEMORY)) as session:
            started = time.monotonic()
            with pytest.raises(Exception) as failure:
                await session.call_tool("crash", {}, read_timeout_seconds=30)
            assert time.monotonic() - started < 5
            assert "upstream server exited" in messages(failure.value), messages(failure.value)

    run(main())


# --- the MCP Inspector CLI -------------------------------------------------------------------


def inspector(config: Path, server: str, method: str, *args: str, era: str | None = None) -> dict:
    command = [str(INSPECTOR), "--cli", "--format", "json", "-q", "--config", str(config), "--server", server, "--method", method, *args]
    if era:
        command += ["--protocol-era", era]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.stdout, f"the Inspector printed nothing: {done.stderr[-2000:]}"
    return json.loads(done.stdout)


def inspector_all(calls: list[tuple[tuple, str | None]]) -> list[dict]:
    """`inspector(*args, era=era)` for each `(args, era)`, four at a time: each is a process of its
    own (the Inspector, the proxy, the server)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda call: inspector(*call[0], era=call[1]), calls))


def servers(tmp_path: Path, name: str, upstream: list[str], threshold: int = 500) -> Path:
    config = tmp_path / "mcp.json"
    entries = {
        "proxied": {"command": LRO, "args": proxy(tmp_path / "out", upstream, threshold)[1:]},
        "direct": {"command": upstream[0], "args": upstream[1:]},
    }
    config.write_text(json.dumps({"mcpServers": entries}))
    return config


@pytest.fixture
def project(tmp_path):
    data = tmp_path / "project"
    data.mkdir()
    for i in range(400):
        (data / f"note_{i:03d}.txt").write_text(f"note {i}\n")
    shutil.copy(ROOT / "docs" / "ARCHITECTURE.md", data / "ARCHITECTURE.md")
    # A PNG: a 1x1 image, for read_media_file.
    (data / "pixel.png").write_bytes(bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100ffff03000006000557bfab"
        "d40000000049454e44ae426082"))
    return data


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_filesystem_over_stdio(tmp_path, project, era):
    config = servers(tmp_path, "fs", [str(FILESYSTEM), str(project)])
    tools = inspector(config, "proxied", "tools/list", era=era)["result"]["tools"]
    assert tools[-1]["name"] == "lro_extract"
    assert not any("outputSchema" in t for t in tools), "no tool keeps a schema a descriptor would break"

    listing = inspector(config, "proxied", "tools/call", "--tool-name", "list_directory", "--tool-args-json", json.dumps({"path": str(project)}), era=era)["result"]
    descriptor = json.loads(listing["content"][0]["text"])
    direct = inspector(config, "direct", "tools/call", "--tool-name", "list_directory", "--tool-args-json", json.dumps({"path": str(project)}))["result"]
    file = descriptor["files"]["lines"]
    assert [r["text"] for r in records(file)] == direct["content"][0]["text"].split("\n"), "one record per line, as the server sent them"

    arguments = printed_call(descriptor["guidance"])
    extracted = inspector(config, "proxied", "tools/call", "--tool-name", "lro_extract", "--tool-args-json", json.dumps(arguments), era=era)
    assert "result" in extracted and not extracted["result"].get("isError"), extracted

    calls = [
        ("list_allowed_directories", {}),
        ("read_text_file", {"path": str(project / "note_007.txt")}),
        ("read_media_file", {"path": str(project / "pixel.png")}),
        ("read_text_file", {"path": str(project / "missing.txt")}),
    ]
    argv = [["--tool-name", tool, "--tool-args-json", json.dumps(arguments)] for tool, arguments in calls]
    # A direct connection to this server speaks the older protocol only.
    answers = inspector_all([((config, "proxied", "tools/call", *args), era) for args in argv]
                            + [((config, "direct", "tools/call", *args), None) for args in argv])
    for i, (tool, _) in enumerate(calls):
        got, want = answers[i], answers[len(calls) + i]
        if era == "modern":
            # The proxy answers a 2026-07-28 client for a server of the older protocol; the
            # client's own fields aside, the result is the server's.
            for answer in (got, want):
                answer.get("result", {}).pop("resultType", None)
        assert got == want, tool


def test_inspector_everything_over_stdio(tmp_path):
    config = servers(tmp_path, "ev", [str(EVERYTHING)])
    argv = [
        ["tools/call", "--tool-name", "echo", "--tool-args-json", '{"message": "hi"}'],
        ["tools/call", "--tool-name", "get-tiny-image"],
        ["tools/call", "--tool-name", "get-annotated-message", "--tool-args-json", '{"messageType": "error"}'],
        ["resources/read", "--uri", "demo://resource/static/document/architecture.md"],
        ["prompts/list"],
    ]
    # One at a time: server-everything started several times at once took twice as long in all.
    for args in argv:
        assert inspector(config, "proxied", *args) == inspector(config, "direct", *args), args
    resources = inspector(config, "proxied", "resources/templates/list")["result"]["resourceTemplates"]
    assert resources[-1]["uriTemplate"] == "lro://offload/{file}{?from,to}"


# --- streamable HTTP -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_everything(port: int) -> subprocess.Popen:
    server = subprocess.Popen([str(EVERYTHING), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return server
        time.sleep(0.1)
    server.kill()
    raise AssertionError("server-everything did not start listening")


# server-everything speaks the older protocol only: a client pinned to 2026-07-28 cannot talk to
# it directly or through the proxy; "auto" discovers, and the proxy bridges it.
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_everything_over_http_with_a_restart(tmp_path, mode):
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = start_everything(port)

    async def main():
        nonlocal server
        command = [LRO, "proxy", "--output-dir", str(tmp_path / "out"), "--url", url]
        async with client(command, mode) as session:
            echo = await session.call_tool("echo", {"message": "hello"})
            assert echo.content[0].text == "Echo: hello"
            seen = []

            async def on_progress(progress, total, message):
                seen.append(progress)

            done = await session.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 2}, progress_callback=on_progress)
            assert not done.is_error
            assert len(seen) == 2, seen

            server.kill()
            server.wait()
            started = time.monotonic()
            failed = await session.call_tool("echo", {"message": "anyone?"}, read_timeout_seconds=30)
            assert False, f"the call should fail while the server is down: {failed}"

    async def while_down():
        with pytest.raises(Exception) as failure:
            await main()
        return failure

    failure = run(while_down())
    assert "could not be reached" in messages(failure.value), messages(failure.value)
    server = start_everything(port)
    try:
        async def after():
            command = [LRO, "proxy", "--output-dir", str(tmp_path / "out"), "--url", url]
            async with client(command, mode) as session:
                assert (await session.call_tool("echo", {"message": "back"})).content[0].text == "Echo: back"
        run(after())
    finally:
        server.kill()
        server.wait()
