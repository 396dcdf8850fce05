"""`lro proxy` under hostile and careless use (issue 34): the real binary, a scripted client that
writes JSON-RPC lines and closes its input, a hand-written server that misbehaves on purpose
(hostile_server.py) and loopback HTTP servers that redirect. Every request gets exactly one
answer; nothing the proxy cannot inspect reaches the client whole.
"""

import http.server
import json
import os
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LRO = os.environ.get("LRO_BIN", str(ROOT / "target" / "debug" / "lro"))
HOSTILE = [sys.executable, str(HERE / "hostile_server.py")]

INIT = {"jsonrpc": "2.0", "id": 100, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "script", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(mid, tool, arguments=None):
    return {"jsonrpc": "2.0", "id": mid, "method": "tools/call", "params": {"name": tool, "arguments": arguments or {}}}


def proxy_command(out: Path, upstream: list[str], *flags: str) -> list[str]:
    return [LRO, "proxy", "--output-dir", str(out), "--threshold", "500", *flags, "--", *upstream]


def scripted(out: Path, lines: list, upstream=None, flags=(), timeout=60, keep_open=True):
    return client(proxy_command(out, upstream or HOSTILE, *flags), lines, timeout, keep_open)


def client(command: list, lines: list, timeout=60, keep_open=True):
    """Writes `lines` to the proxy as a scripted client; returns (exit code, the messages it
    printed, stderr). With `keep_open` the client keeps its input open until every request it
    made was answered (or the proxy ended), then closes it, so each test meets its own defect
    and not the one of a client that closes early; without, it closes its input at once, as
    `printf ... | lro proxy` does."""
    data = b"".join((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines)
    expected = set()
    for line in lines:
        for message in (json.loads(line) if isinstance(line, bytes) else line,):
            for one in message if isinstance(message, list) else [message]:
                if isinstance(one, dict) and "id" in one and "method" in one:
                    expected.add(json.dumps(one["id"]))
    proc = subprocess.Popen(command, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    printed, errors = [], []
    reader = threading.Thread(target=lambda: printed.extend(proc.stdout), daemon=True)
    reader.start()
    threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True).start()
    proc.stdin.write(data)
    proc.stdin.flush()
    deadline = time.monotonic() + timeout
    while keep_open and time.monotonic() < deadline and proc.poll() is None:
        seen = {json.dumps(m.get("id")) for m in map(json.loads, list(printed)) if isinstance(m, dict)}
        if expected <= seen:
            break
        time.sleep(0.05)
    proc.stdin.close()
    code = proc.wait(timeout=max(1, deadline - time.monotonic()))
    reader.join(timeout=5)
    time.sleep(0.1)
    messages = [json.loads(line) for line in printed if line.strip()]
    return code, messages, b"".join(errors).decode(errors="replace")


def answers(printed: list) -> dict:
    """The responses by id; fails when an id was answered twice."""
    by_id = {}
    for message in printed:
        if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
            key = json.dumps(message["id"])
            assert key not in by_id, f"id {key} answered twice: {by_id[key]} and {message}"
            by_id[key] = message
    return by_id


def text_of(response) -> str:
    return response["result"]["content"][0]["text"]


def memory_kib(pid: int, what: str) -> int:
    """A process's `VmRSS` (now) or `VmHWM` (its peak), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(what + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {what}")


def offloaded(response) -> str:
    """The file a descriptor names; fails when the response is not a descriptor."""
    descriptor = json.loads(text_of(response))
    assert descriptor.get("offloaded") is True, descriptor
    return next(iter(descriptor["files"].values()))


# --- 1, 2: a client that closes its input, an upstream that dies ------------------------------


def test_a_client_that_closes_its_input_gets_every_answer(tmp_path):
    code, printed, stderr = scripted(tmp_path, [
        INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        call(2, "rows", {"n": 5, "delay": 0.5}), call(3, "rows", {"n": 3000, "delay": 1})], keep_open=False)
    got = answers(printed)
    assert set(got) == {"100", "1", "2", "3"}, (got.keys(), stderr)
    assert "lro_extract" in [t["name"] for t in got["1"]["result"]["tools"]]
    assert len(json.loads(text_of(got["2"]))) == 5
    assert offloaded(got["3"]).startswith(str(tmp_path)), "the large one offloaded"
    assert code == 0, stderr


def test_answers_not_given_within_the_grace_period_fail_and_the_exit_says_so(tmp_path):
    code, printed, stderr = scripted(tmp_path, [INIT, INITIALIZED, call(1, "rows", {"n": 2, "delay": 5})],
                                     flags=("--grace", "0.5"), timeout=30, keep_open=False)
    got = answers(printed)
    assert "did not answer within 0.5 s" in got["1"]["error"]["message"], got
    assert code == 1 and "--grace" in stderr, (code, stderr)


def test_an_upstream_that_dies_fails_each_request_once_even_after_the_client_closed(tmp_path):
    code, printed, stderr = scripted(tmp_path, [
        INIT, INITIALIZED, call(1, "exit"), call(2, "rows", {"n": 2})], keep_open=False)
    got = answers(printed)
    assert set(got) == {"100", "1", "2"}, got
    for mid in ("1", "2"):
        assert "exited" in got[mid]["error"]["message"], got[mid]
    assert code == 1, (code, stderr)


# --- 8, 9, 12: exactly one answer, whatever the ids and bytes ---------------------------------


# 1,000 rows make an answer of about 0.1 MB, which the proxy holds in memory; 20,000 about 2 MB,
# which it spools to disk as it reads it (over 256 KiB): the same guarantees hold on both paths.
SIZES = [pytest.param({"n": 1_000}, id="in-memory"), pytest.param({"n": 20_000}, id="spooled")]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mid", ["big", 0, 7])
def test_a_respelt_id_still_answers_its_request_once_and_offloaded(tmp_path, mid, size):
    code, printed, _ = scripted(tmp_path, [INIT, INITIALIZED, call(mid, "respell", size), call(99, "exit")])
    got = answers(printed)
    response = got[json.dumps(mid)]
    assert offloaded(response), "intercepted, not forwarded raw"
    assert len(got) == 3 and code == 1


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("tool", ["bad_utf8", "dup_result", "partial"])
def test_a_broken_answer_is_one_error_never_the_raw_bytes(tmp_path, tool, size):
    code, printed, stderr = scripted(tmp_path, [INIT, INITIALIZED, call(5, tool, size), call(6, "exit")])
    got = answers(printed)  # also: no id answered twice
    assert "error" in got["5"], got["5"]
    assert len(json.dumps(got["5"])) < 2000, "the large answer was not passed on"
    if tool == "partial":
        assert "middle of a message" in stderr, stderr


def test_a_client_id_like_the_proxys_own_gets_its_own_answer(tmp_path):
    log = tmp_path / "ids.jsonl"
    code, printed, _ = scripted(tmp_path, [
        INIT, call("lro-proxy-1", "rows", {"n": 3, "delay": 0.3}), INITIALIZED,
        {"jsonrpc": "2.0", "id": "lro-proxy-2", "method": "tools/list"}],
        upstream=[*HOSTILE, "--log", str(log)])
    got = answers(printed)
    assert len(json.loads(text_of(got['"lro-proxy-1"']))) == 3
    assert "lro_extract" in [t["name"] for t in got['"lro-proxy-2"']["result"]["tools"]]
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    own = [s["id"] for s in seen if s["id"] not in ("lro-proxy-1", "lro-proxy-2", 100)]
    assert own and all(i.startswith("lro-proxy-") and len(i) > 30 for i in own), own


def test_two_requests_in_flight_under_one_id_each_get_one_answer(tmp_path):
    _, printed, _ = scripted(tmp_path, [INIT, INITIALIZED, call(1, "rows", {"n": 2, "delay": 0.5}),
                                        call(1, "rows", {"n": 4})])
    ones = [m for m in printed if m.get("id") == 1]
    assert len(ones) == 2, ones
    assert "already in use" in ones[0]["error"]["message"]
    assert len(json.loads(text_of(ones[1]))) == 2


def test_a_batch_is_taken_apart_and_its_results_intercepted(tmp_path):
    batch = json.dumps([call(1, "rows", {"n": 3000}), {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]).encode()
    _, printed, _ = scripted(tmp_path, [INIT, INITIALIZED, batch, call(3, "batch_rows")])
    got = answers(printed)
    assert offloaded(got["1"])
    assert "lro_extract" in [t["name"] for t in got["2"]["result"]["tools"]]
    assert offloaded(got["3"]), "a server's batch answer is intercepted too"


def test_a_request_with_duplicate_keys_is_refused_not_passed_on(tmp_path):
    log = tmp_path / "ids.jsonl"
    duplicate = b'{"jsonrpc":"2.0","id":4,"method":"tools/list","method":"tools/call","params":{"name":"rows"}}'
    _, printed, _ = scripted(tmp_path, [INIT, INITIALIZED, duplicate], upstream=[*HOSTILE, "--log", str(log)])
    got = answers(printed)
    assert got["4"]["error"]["code"] == -32600, got
    assert 4 not in [json.loads(line)["id"] for line in log.read_text().splitlines()]


def test_deeply_nested_arguments_do_not_slip_past_interception(tmp_path):
    deep = json.loads("[" * 300 + "1" + "]" * 300)
    deeper = json.loads("[" * 600 + "1" + "]" * 600)
    _, printed, _ = scripted(tmp_path, [INIT, INITIALIZED, call(1, "rows", {"n": 3000, "deep": deep}),
                                        call(2, "rows", {"n": 3000, "deep": deeper})])
    got = answers(printed)
    assert offloaded(got["1"]), "300 levels: read and intercepted"
    assert got["2"]["error"]["code"] == -32602 and "deeper than 512" in got["2"]["error"]["message"], got["2"]


# --- 10, 12: tools ------------------------------------------------------------------------------


def test_a_nameless_tool_is_left_out_and_the_rest_listed(tmp_path):
    _, printed, stderr = scripted(tmp_path, [INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}],
                                  upstream=[*HOSTILE, "--nameless"])
    names = [t["name"] for t in answers(printed)["1"]["result"]["tools"]]
    assert "rows" in names and names[-1] == "lro_extract", names
    assert "without a string `name`" in stderr, stderr


def test_an_upstream_lro_extract_added_later_is_hidden_and_the_session_goes_on(tmp_path):
    code, printed, stderr = scripted(tmp_path, [
        INIT, INITIALIZED, call(1, "add_extract"), {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        call(3, "rows", {"n": 2, "delay": 0.3})])
    got = answers(printed)
    listed = got["2"]["result"]["tools"]
    extract = [t for t in listed if t["name"] == "lro_extract"]
    assert len(extract) == 1 and extract[0]["description"] != "the server's own", listed
    assert len(json.loads(text_of(got["3"]))) == 2
    assert code == 0 and "lro proxy: lro proxy" not in stderr, stderr


# --- 4: a result too large for the component ------------------------------------------------


def test_a_result_the_component_cannot_take_is_cut_never_forwarded_whole(tmp_path):
    code, printed, stderr = scripted(tmp_path, [INIT, INITIALIZED, call(1, "huge", {"mb": 40})],
                                     flags=("--memory-limit", "32"))
    response = answers(printed)["1"]
    assert len(json.dumps(response)) < 20_000, f"{len(json.dumps(response))} bytes reached the client"
    cut = json.loads(text_of(response))
    assert cut["truncated"] is True and cut["total_bytes"] > 40_000_000, cut.keys()
    assert "memory" in cut["lro_warning"] and cut["preview"].startswith('[{"id": 0'), cut["lro_warning"]
    assert "could not be offloaded and was cut" in stderr


def huge_text(mb, compact=False):
    """What hostile_server.py's `huge` sends."""
    row = json.dumps({"id": 0, "name": "a row of the huge result", "payload": "z" * 60},
                     separators=(",", ":") if compact else None)
    return "[" + ",".join([row] * int(float(mb) * (1 << 20) / (len(row) + 1))) + "]"


def spool_files(directory: Path, wait=5.0) -> list:
    """The spool files left in `directory`, once the proxy had `wait` seconds to delete them (it
    does so right after writing the message, which the client may read first)."""
    deadline = time.monotonic() + wait
    while True:
        left = sorted(p.name for p in directory.iterdir() if p.name.startswith(".lro-spool-"))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)



@pytest.mark.parametrize("compact", [True, False], ids=["compact", "spaced"])
def test_a_large_result_grows_the_proxy_by_at_most_one_and_a_half_times_its_size(tmp_path, compact):
    """Item 4's bound: the proxy spools a large answer to disk as it reads it, and the
    component reads the result from there, decodes its text and compacts it (JSON written with
    spaces, as Python's `json.dumps` does) where it lies, so the result is in memory once."""
    # A time limit well above the offload's few seconds: on a loaded machine the default 10 s
    # can run out, and the result is then cut instead of offloaded; memory is what this measures.
    proc = subprocess.Popen(proxy_command(tmp_path, HOSTILE, "--timeout", "120"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        # The session's start done (the proxy's own tools check and the client's listing both
        # call the component) before the baseline is taken.
        listing = {"jsonrpc": "2.0", "id": 101, "method": "tools/list"}
        for message in (INIT, INITIALIZED, listing):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 100
        assert json.loads(proc.stdout.readline())["id"] == 101
        time.sleep(0.5)
        before = memory_kib(proc.pid, "VmHWM")
        proc.stdin.write(json.dumps(call(1, "huge", {"mb": 60, "compact": compact})).encode() + b"\n")
        proc.stdin.flush()
        response = json.loads(proc.stdout.readline())
        path = offloaded(response)
        grown = (memory_kib(proc.pid, "VmHWM") - before) * 1024
        result_bytes = 60 * (1 << 20)
        assert grown <= 1.5 * result_bytes, f"the proxy grew by {grown / result_bytes:.2f}x a 60 MiB result"
        assert Path(path).stat().st_size > 50 * (1 << 20)
        assert spool_files(tmp_path) == []
    finally:
        proc.kill()
        proc.wait()


def test_a_spooled_result_keeps_every_other_member_as_sent(tmp_path):
    """`_meta` beside a large result comes through as the server wrote it, and the structured
    content wrapper holds the descriptor too."""
    code, printed, _ = scripted(tmp_path, [INIT, INITIALIZED, call(1, "huge", {"mb": 3, "meta": 100})])
    response = answers(printed)["1"]
    assert offloaded(response)
    assert response["result"]["_meta"] == {"note": "m" * 100, "n": 100.0}
    assert json.loads(response["result"]["structuredContent"]["result"])["offloaded"] is True
    assert code == 0 and spool_files(tmp_path) == []


def test_large_messages_the_proxy_does_not_change_pass_whole_and_leave_no_file(tmp_path):
    """A large result under a high threshold, a large answer to a method the proxy does not
    know and a large notification are copied from the spool file byte for byte."""
    big = {"jsonrpc": "2.0", "id": 3, "method": "lro-test/big", "params": {"mb": 3}}
    command = [LRO, "proxy", "--output-dir", str(tmp_path), "--threshold", "100000000", "--", *HOSTILE]
    code, printed, _ = client(command, [INIT, INITIALIZED, call(1, "huge", {"mb": 3}), call(2, "big_note", {"mb": 2}), big])
    got = answers(printed)
    expected = json.loads(huge_text(3))
    assert json.loads(text_of(got["1"])) == expected
    assert json.loads(got["3"]["result"]["text"]) == expected and got["3"]["result"]["n"] == 100.0
    notes = [m for m in printed if m.get("method") == "notifications/message"]
    assert len(notes) == 1 and json.loads(notes[0]["params"]["data"]) == json.loads(huge_text(2))
    assert text_of(got["2"]) == "noted"
    assert code == 0 and spool_files(tmp_path) == []


def test_many_large_results_at_once_are_offloaded_a_few_at_a_time(tmp_path):
    proc = subprocess.Popen(proxy_command(tmp_path, HOSTILE), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        lines = [INIT, INITIALIZED] + [call(i, "huge", {"mb": 8}) for i in range(1, 9)]
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        proc.stdin.flush()
        done = {}
        while len(done) < 9:
            message = json.loads(proc.stdout.readline())
            done[message["id"]] = message
        assert all(offloaded(done[i]) for i in range(1, 9))
        peak = memory_kib(proc.pid, "VmHWM")
        # Each 8 MB offload takes about 120 MB in the component: eight at once peaked at 700 MB.
        assert peak < 450_000, f"the proxy's peak was {peak} KiB"
    finally:
        proc.kill()
        proc.wait()


# --- 11: a client that stops reading ------------------------------------------------------------


def test_a_flood_to_a_client_that_does_not_read_keeps_memory_flat(tmp_path):
    proc = subprocess.Popen(proxy_command(tmp_path, HOSTILE), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        for message in (INIT, INITIALIZED):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 100
        time.sleep(1)
        before = memory_kib(proc.pid, "VmRSS")
        # 200,000 notifications of about 400 bytes: 80 MB the client does not read for 4 s.
        proc.stdin.write(json.dumps(call(1, "flood", {"n": 200_000})).encode() + b"\n")
        proc.stdin.flush()
        time.sleep(4)
        grown = memory_kib(proc.pid, "VmRSS") - before
        assert grown < 30_000, f"the proxy grew by {grown} KiB while the client did not read"
        # Then the client reads: everything arrives, the answer last.
        count = 0
        while True:
            message = json.loads(proc.stdout.readline())
            if message.get("id") == 1:
                break
            count += 1
        assert count == 200_000
        assert text_of(message) == "flood done"
    finally:
        proc.kill()
        proc.wait()


# --- 5: redirects -------------------------------------------------------------------------------


class Recorder(http.server.BaseHTTPRequestHandler):
    seen: list = []
    redirect_to = None

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
        if self.redirect_to and self.path == "/mcp":
            self.send_response(307)
            self.send_header("Location", self.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        message = json.loads(body)
        if "id" not in message:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        reply = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "r", "version": "1"}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", "secret-session")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def do_GET(self):
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def serve(handler):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_redirect_to_another_origin_is_not_followed_and_no_secret_leaves(tmp_path):
    other = type("Other", (Recorder,), {"seen": [], "redirect_to": None})
    elsewhere = serve(other)
    first = type("First", (Recorder,), {"seen": [],
                                        "redirect_to": f"http://127.0.0.1:{elsewhere.server_address[1]}/mcp"})
    origin = serve(first)
    try:
        url = f"http://127.0.0.1:{origin.server_address[1]}/mcp"
        _, printed, _ = client([LRO, "proxy", "--output-dir", str(tmp_path), "--url", url,
                                "--header", "X-Api-Key: s3cret"], [INIT], timeout=30)
        got = answers(printed)
        assert "another origin" in got["100"]["error"]["message"], got
        assert other.seen == [], "nothing reached the other origin"
        assert first.seen and first.seen[0]["headers"].get("x-api-key") == "s3cret"
    finally:
        origin.shutdown()
        elsewhere.shutdown()


def test_a_redirect_within_the_origin_is_followed(tmp_path):
    handler = type("Same", (Recorder,), {"seen": [], "redirect_to": "/mcp2"})
    server = serve(handler)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        _, printed, _ = client([LRO, "proxy", "--output-dir", str(tmp_path), "--url", url], [INIT], timeout=30)
        got = answers(printed)
        assert got["100"]["result"]["serverInfo"]["name"] == "r", got
        assert [s["path"] for s in handler.seen][:2] == ["/mcp", "/mcp2"]
    finally:
        server.shutdown()


class Flooding(http.server.BaseHTTPRequestHandler):
    """Answers every POST with HTTP 500 and a 150 MB body."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(500)
        self.send_header("Content-Length", str(150 << 20))
        self.end_headers()
        chunk = b"e" * (1 << 20)
        try:
            for _ in range(150):
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass


def test_an_error_answer_of_any_size_is_read_only_as_far_as_the_message_needs(tmp_path):
    server = serve(Flooding)
    proc = subprocess.Popen([LRO, "proxy", "--output-dir", str(tmp_path), "--url",
                             f"http://127.0.0.1:{server.server_address[1]}/mcp"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write(json.dumps(INIT).encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert "HTTP 500" in answer["error"]["message"] and len(answer["error"]["message"]) < 1000, answer
        peak = memory_kib(proc.pid, "VmHWM")
        assert peak < 120_000, f"the proxy's peak was {peak} KiB for an error message"
    finally:
        proc.kill()
        proc.wait()
        server.shutdown()


# --- 15: values that cannot work ----------------------------------------------------------------


@pytest.mark.parametrize("flags, wrong", [
    (["--ttl", "0"], "ttl_seconds is 0"),
    (["--memory-limit", "0"], "--memory-limit must be at least"),
    (["--grace=-1"], "--grace must be"),
])
def test_values_that_cannot_work_are_usage_errors(tmp_path, flags, wrong):
    done = subprocess.run([LRO, "proxy", "--output-dir", str(tmp_path), *flags, "--", *HOSTILE],
                          input=b"", capture_output=True, timeout=30)
    assert done.returncode == 2 and wrong in done.stderr.decode(), (done.returncode, done.stderr)


def test_ttl_zero_from_the_environment_is_refused_too(tmp_path):
    env = dict(os.environ, ATLATL_PROMPT__OFFLOAD__TTL_SECONDS="0")
    done = subprocess.run([LRO, "proxy", "--output-dir", str(tmp_path), "--", *HOSTILE], input=b"",
                          capture_output=True, timeout=30, env=env)
    assert done.returncode == 2 and "ttl_seconds is 0" in done.stderr.decode(), done.stderr


# A server that answers `initialize`, writes its pid, and outlives its input closing (as
# server-everything sometimes did); with "stubborn" it ignores SIGTERM too.
LINGERING = r"""
import json, signal, sys, time
pidfile, mode = sys.argv[1], sys.argv[2]
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(pidfile, "w").write(str(__import__("os").getpid()))
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "lingering", "version": "1"}}}), flush=True)
while True:
    time.sleep(1)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for good; only its parent has not reaped it yet.
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"


@pytest.mark.parametrize("mode", ["polite", "stubborn"])
def test_a_proxy_told_to_stop_stops_the_server_it_started(tmp_path, mode):
    # The MCP SDKs' clients end a stdio server with SIGTERM when closing its input is not enough
    # (the Inspector CLI did, and a server-everything left behind kept it waiting a minute).
    pidfile = tmp_path / "server.pid"
    command = proxy_command(tmp_path / "out", [sys.executable, "-c", LINGERING, str(pidfile), mode])
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 100
    server = int(pidfile.read_text())
    started = time.monotonic()
    proc.terminate()
    assert proc.wait(timeout=10) == 143, proc.stderr.read().decode()
    took = time.monotonic() - started
    assert not alive(server), "the upstream server outlived its proxy"
    # A server that ignores SIGTERM is killed after the grace of 2 s; one that stops, at once.
    assert took < (4 if mode == "stubborn" else 1.5), took
    assert "stopped by signal 15" in proc.stderr.read().decode()
