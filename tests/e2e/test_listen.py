"""`lro proxy --listen`: the proxy as a streamable HTTP server for many remote clients, driven
by the Python SDK's own client (both protocol generations) and by plain HTTP where a test needs
a request no SDK would send. The upstream is the Python SDK memory server (memory_server.py),
one child per session.

Run by `bash tests/run`; LRO_BIN names the `lro` binary (default target/debug/lro).
"""

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LRO = os.environ.get("LRO_BIN", str(ROOT / "target" / "debug" / "lro"))
MEMORY = [sys.executable, str(HERE / "memory_server.py")]
MODES = ["legacy", "2026-07-28"]
ALICE = "a" * 40
BOB = "b" * 40
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def listening(command: list[str], env: dict | None = None) -> tuple[subprocess.Popen, list[str], str]:
    """Starts an `lro proxy --listen` command: the process, the lines it writes to stderr (kept
    up to date), and the URL it serves once it says so."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    ready = threading.Event()

    def read():
        for line in process.stderr:
            lines.append(line)
            if "serving MCP at" in line:
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    ready.wait(30)
    found = [re.search(r"serving MCP at (http://\S+/mcp)", line) for line in lines]
    url = next((m.group(1) for m in found if m), None)
    assert url, f"the proxy did not start: {''.join(lines)}"
    return process, lines, url


def stop(process: subprocess.Popen):
    """SIGTERM, as a service manager stops the proxy; SIGKILL if it has not exited in 15 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Proxy:
    """`lro proxy --listen 127.0.0.1:0` in front of the memory server, and what it says."""

    def __init__(self, tmp_path: Path, *flags: str, threshold: int = 500):
        self.out = tmp_path / "out"
        command = [LRO, "proxy", "--listen", "127.0.0.1:0", "--output-dir", str(self.out),
                   "--threshold", str(threshold), *flags, "--", *MEMORY]
        self.process, self.lines, self.url = listening(command)

    def children(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout
        return [int(pid) for pid in out.split()]

    def stop(self):
        stop(self.process)


@pytest.fixture
def started(tmp_path):
    proxies = []

    def start(*flags, **kwargs) -> Proxy:
        proxy = Proxy(tmp_path, *flags, **kwargs)
        proxies.append(proxy)
        return proxy

    yield start
    for proxy in proxies:
        proxy.stop()


def client(url: str, mode: str, token: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    return Client(transport, mode=mode)


def run(coroutine):
    return asyncio.run(coroutine)


def messages(error: BaseException) -> str:
    """The messages of an error and, for an exception group (anyio's), of everything in it."""
    if isinstance(error, BaseExceptionGroup):
        return " | ".join(messages(e) for e in error.exceptions)
    return str(error)


def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"# who may call\nalice {ALICE}\nbob {BOB}\n")
    return path


async def offload(session, query: str = "q", limit: int = 200) -> dict:
    result = await session.call_tool("recall_memories", {"query": query, "limit": limit})
    descriptor = json.loads(result.content[0].text)
    assert descriptor["offloaded"] is True, descriptor
    return descriptor


async def count(session, handle: str):
    return await session.call_tool("lro_extract", {"file_path": handle, "query": "length", "slurp": True})


def printed_call(guidance: str) -> dict:
    """The first `lro_extract(...)` call the guidance prints, as a model would send it."""
    match = re.search(r"lro_extract\((.*?)\)(?:,|\.|\s|$)", guidance)
    assert match, guidance
    return {key: json.loads(value) for key, value in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,\s)]+)', match.group(1))}


@pytest.mark.parametrize("mode", MODES)
def test_a_remote_client_gets_handles_it_can_extract_and_read(started, mode):
    proxy = started()

    async def main():
        async with client(proxy.url, mode) as session:
            descriptor = await offload(session)
            handle = descriptor["file_path"]
            assert re.fullmatch(r"lro://offload/atlatl-recall-[0-9A-Z]{26}\.jsonl", handle), handle
            text = json.dumps(descriptor)
            # Nothing names the proxy's disk: the client could not use it.
            assert str(proxy.out) not in text and "/tmp" not in text, text
            assert handle in descriptor["guidance"]
            # The guidance's own example call, exactly as printed.
            extracted = await session.call_tool("lro_extract", printed_call(descriptor["guidance"]))
            assert not extracted.is_error, extracted
            assert extracted.content[0].text.startswith("\t_semantic/caching\n"), extracted.content[0].text[:200]
            counted = await count(session, handle)
            assert (counted.is_error, counted.content[0].text) == (False, "200")
            listed = await session.list_resources()
            assert handle in [str(r.uri) for r in listed.resources]
            read = await session.read_resource(f"{handle}?from=0&to=2")
            first = [json.loads(line) for line in read.contents[0].text.splitlines()[:2]]
            assert [r["id"] for r in first] == ["mem-00000", "mem-00001"]

    run(main())
    files = list((proxy.out / "local").glob("atlatl-recall-*.jsonl"))
    assert len(files) == 1, files


def test_each_principal_reaches_its_own_offloads_only(started, tmp_path):
    proxy = started("--tokens", str(tokens_file(tmp_path)))

    async def main():
        async with client(proxy.url, "legacy", ALICE) as alice:
            handle = (await offload(alice))["file_path"]
            assert (await count(alice, handle)).content[0].text == "200"
        async with client(proxy.url, "2026-07-28", BOB) as bob:
            theirs = await count(bob, handle)
            # A handle of the same shape and age that never existed.
            never = handle[:-12] + "ZZZZZZ.jsonl"
            missing = await count(bob, never)
            assert theirs.is_error and missing.is_error
            assert theirs.content[0].text.replace(handle, "H") == missing.content[0].text.replace(never, "H")
            assert handle not in [str(r.uri) for r in (await bob.list_resources()).resources]
            with pytest.raises(Exception) as refused:
                await bob.read_resource(handle)
            assert f"{handle} does not exist" in messages(refused.value), refused.value

    run(main())
    alices = list((proxy.out / "alice").glob("*.jsonl"))
    assert len(alices) == 1
    assert not list((proxy.out / "bob").glob("*.jsonl"))

    async def around():
        async with client(proxy.url, "legacy", BOB) as bob:
            # Around the handle: a path out of bob's directory, and alice's file by its path.
            for path in [f"lro://offload/../alice/{alices[0].name}", str(alices[0])]:
                answer = await count(bob, path)
                assert answer.is_error and "200" not in answer.content[0].text, (path, answer)
                # The answer names no directory of the proxy's machine but what bob sent.
                assert str(proxy.out / "bob") not in answer.content[0].text, answer.content[0].text

    run(around())
    # Alice's session id in bob's hands is no session at all.
    bob = {**HEADERS, "authorization": f"Bearer {BOB}"}
    opened = httpx2.post(proxy.url, headers={**HEADERS, "authorization": f"Bearer {ALICE}"}, json=INITIALIZE)
    theirs = httpx2.post(proxy.url, headers={**bob, "mcp-session-id": opened.headers["mcp-session-id"]},
                         json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    unknown = httpx2.post(proxy.url, headers={**bob, "mcp-session-id": "0" * 40},
                          json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.json() == unknown.json()
    assert httpx2.delete(proxy.url, headers={**bob, "mcp-session-id": opened.headers["mcp-session-id"]}).status_code == 404


def test_requests_without_a_valid_token_are_refused(started, tmp_path):
    proxy = started("--tokens", str(tokens_file(tmp_path)))
    for headers in [{}, {"authorization": f"Bearer {ALICE[:-1]}"}, {"authorization": f"Basic {ALICE}"}]:
        answer = httpx2.post(proxy.url, headers={**HEADERS, **headers}, json=INITIALIZE)
        assert answer.status_code == 401, (headers, answer.text)
        assert answer.headers["www-authenticate"] == "Bearer"
    answer = httpx2.post(proxy.url, headers={**HEADERS, "authorization": f"Bearer {ALICE}"}, json=INITIALIZE)
    assert answer.status_code == 200 and answer.headers["mcp-session-id"]
    # No session was opened for the refused ones: one child, for alice's.
    assert len(proxy.children()) == 1


def test_a_loopback_listener_refuses_other_hosts_and_origins(started):
    proxy = started()
    for headers in [{"host": "evil.example"}, {"origin": "http://evil.example"}]:
        answer = httpx2.post(proxy.url, headers={**HEADERS, **headers}, json=INITIALIZE)
        assert answer.status_code == 403, answer.text
        assert "DNS rebinding" in answer.json()["error"]["message"]
    assert httpx2.post(proxy.url, headers={**HEADERS, "origin": "http://localhost:5173"}, json=INITIALIZE).status_code == 200


def test_with_tokens_a_reverse_proxys_host_is_served(started, tmp_path):
    # A TLS proxy in front forwards the client's Host; the token, not the Host, is the check.
    proxy = started("--tokens", str(tokens_file(tmp_path)))
    headers = {**HEADERS, "authorization": f"Bearer {ALICE}", "host": "mcp.example.com", "origin": "https://app.example.com"}
    assert httpx2.post(proxy.url, headers=headers, json=INITIALIZE).status_code == 200


def test_ids_that_could_not_be_routed_are_refused(started):
    proxy = started()
    opened = httpx2.post(proxy.url, headers=HEADERS, json=INITIALIZE)
    session = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
    twice = [{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}]
    for body, wanted in [(twice, "the id 7 is used twice"),
                         ({"jsonrpc": "2.0", "id": None, "method": "tools/list"}, "must be a string or a number"),
                         ({"jsonrpc": "2.0", "id": [1], "method": "tools/list"}, "must be a string or a number")]:
        answer = httpx2.post(proxy.url, headers=session, json=body, timeout=10)
        assert answer.status_code == 400 and wanted in answer.json()["error"]["message"], answer.text
    # The session still answers.
    listed = httpx2.post(proxy.url, headers=session, json={"jsonrpc": "2.0", "id": 8, "method": "tools/list"}, timeout=10)
    assert listed.status_code == 200 and "recall_memories" in listed.text


def test_a_burst_of_sessions_never_starts_more_upstreams_than_allowed(started):
    from concurrent.futures import ThreadPoolExecutor

    proxy = started("--max-sessions", "2")
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda _: httpx2.post(proxy.url, headers=HEADERS, json=INITIALIZE, timeout=30).status_code,
                                 range(8)))
    assert sorted(statuses) == [200, 200] + [503] * 6, statuses
    assert len(proxy.children()) == 2


def test_the_network_is_not_served_without_tokens_and_bad_setups_say_why(tmp_path):
    def refused(*flags: str) -> str:
        done = subprocess.run([LRO, "proxy", *flags, "--", *MEMORY], capture_output=True, text=True, timeout=30)
        assert done.returncode == 2, done
        return done.stderr

    assert "serves the network without --tokens" in refused("--listen", "0.0.0.0:0")
    bad = tmp_path / "bad"
    bad.write_text(f"alice {ALICE}\nbob short\n")
    assert "line 2: bob's token has 5 characters" in refused("--listen", "127.0.0.1:0", "--tokens", str(bad))
    assert "expected HOST:PORT" in refused("--listen", "somewhere")
    assert "--max-sessions must be from 1" in refused("--listen", "127.0.0.1:0", "--max-sessions", "0")


def test_an_expired_handle_says_so(started):
    proxy = started("--ttl", "2")

    async def main():
        async with client(proxy.url, "legacy") as session:
            handle = (await offload(session))["file_path"]
            await asyncio.sleep(2.5)
            expired = await count(session, handle)
            assert expired.is_error
            assert f"the offload {handle} expired at" in expired.content[0].text, expired.content[0].text
            assert "ttl_seconds 2" in expired.content[0].text
            with pytest.raises(Exception) as refused:
                await session.read_resource(handle)
            assert f"the offload {handle} expired at" in messages(refused.value), refused.value

    run(main())


def test_twenty_concurrent_clients_each_get_their_own_answers(started):
    proxy = started()

    async def one(i: int) -> tuple[str, int, str]:
        async with client(proxy.url, MODES[i % 2]) as session:
            handle = (await offload(session, f"client-{i}", 100 + i))["file_path"]
            counted = (await count(session, handle)).content[0].text
            first = await session.call_tool("lro_extract", {"file_path": handle, "query": ".content", "limit": 100000})
            return handle, int(counted), first.content[0].text

    async def main():
        return await asyncio.gather(*(one(i) for i in range(20)))

    answers = run(main())
    assert len({handle for handle, _, _ in answers}) == 20
    for i, (handle, counted, contents) in enumerate(answers):
        assert counted == 100 + i, (i, counted)
        assert f"client-{i} came up" in contents and f"client-{(i + 1) % 20} came up" not in contents, i


def test_two_replicas_on_one_directory_answer_for_each_other(started, tmp_path):
    tokens = tokens_file(tmp_path)
    a, b = started("--tokens", str(tokens)), started("--tokens", str(tokens))

    async def main():
        async with client(a.url, "2026-07-28", ALICE) as on_a:
            handle = (await offload(on_a))["file_path"]
        async with client(b.url, "2026-07-28", ALICE) as on_b:
            assert (await count(on_b, handle)).content[0].text == "200"
            read = await on_b.read_resource(f"{handle}?from=199")
            assert json.loads(read.contents[0].text.splitlines()[0])["id"] == "mem-00199"
        async with client(b.url, "legacy", BOB) as bob:
            assert (await count(bob, handle)).is_error

    run(main())


def test_sessions_are_bounded_and_deleting_one_frees_its_place(started):
    proxy = started("--max-sessions", "1")

    async def main():
        async with client(proxy.url, "legacy") as first:
            await first.list_tools()
            with pytest.raises(Exception) as refused:
                async with client(proxy.url, "legacy") as second:
                    await second.list_tools()
            assert "1 sessions are open, the most this proxy serves at once (--max-sessions)" in messages(refused.value)
        # The first client's exit DELETEd its session; its place is free once its upstream has
        # stopped (the upstream of a closed session still counts, so the bound holds).
        deadline = time.monotonic() + 15
        while True:
            try:
                async with client(proxy.url, "legacy") as third:
                    assert "recall_memories" in [t.name for t in (await third.list_tools()).tools]
                    return
            except Exception as e:
                if "sessions are open" not in messages(e) or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)

    run(main())


def test_an_idle_session_is_closed_with_its_upstream(started):
    proxy = started("--idle", "1")
    opened = httpx2.post(proxy.url, headers=HEADERS, json=INITIALIZE)
    session = opened.headers["mcp-session-id"]
    assert len(proxy.children()) == 1
    deadline = time.monotonic() + 15
    while proxy.children() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not proxy.children(), "the idle session's upstream still runs"
    later = httpx2.post(proxy.url, headers={**HEADERS, "mcp-session-id": session},
                        json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert later.status_code == 404, later.text
    assert any("closed after 1 s without a request" in line for line in proxy.lines), proxy.lines


def test_sigterm_stops_every_sessions_upstream(started):
    proxy = started()
    for _ in range(3):
        assert httpx2.post(proxy.url, headers=HEADERS, json=INITIALIZE).status_code == 200
    children = proxy.children()
    assert len(children) == 3
    proxy.process.send_signal(signal.SIGTERM)
    assert proxy.process.wait(15) == 128 + signal.SIGTERM
    for pid in children:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower(), pid
