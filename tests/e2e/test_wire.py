"""`lro proxy` as a scripted client sees it on the wire, in front of wire_server.py: every number
and string the server sent reaches the client as sent, whatever the proxy adds (`resultType`,
capabilities, its own tools and resources, a descriptor) and whatever it takes away
(`_meta` keys a bridged server must not see), and the client's arguments reach the server as
sent; and a tool run as a task has its result offloaded like the call's own.
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
WIRE = [sys.executable, str(HERE / "wire_server.py")]
MODES = ["legacy", "2026-07-28"]

# As wire_server.py sends them: a parsed value prints 1.2345678901234568e+29, 100.0 and "é".
VALUES = '{"big":123456789012345678901234567890,"e":1E+2,"s":"\\u00e9"}'
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "script", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}


def handshake(mode: str) -> list:
    if mode == "legacy":
        return [{"jsonrpc": "2.0", "id": 100, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "script", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    return [{"jsonrpc": "2.0", "id": 100, "method": "server/discover", "params": {"_meta": META}}]


def request(mode: str, mid, method: str, params: dict | None = None) -> dict:
    params = dict(params or {})
    if mode != "legacy":
        params["_meta"] = META
    return {"jsonrpc": "2.0", "id": mid, "method": method, "params": params}


def session(out: Path, steps: list, flags=(), timeout=60, upstream=("--", *WIRE)) -> tuple[dict, dict]:
    """Runs the proxy in front of wire_server.py (or `upstream`) and sends each step's lines
    (dicts, or text as written) once every request of the step before was answered; a step may
    be a function of the responses so far. Returns the responses by id, parsed and as printed
    (without whitespace outside strings); a printed line that is not one whole message fails."""
    command = [LRO, "proxy", "--output-dir", str(out), *flags, *upstream]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    printed, errors = [], []
    threading.Thread(target=lambda: printed.extend(proc.stdout), daemon=True).start()
    threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True).start()

    def responses():
        parsed, raw = {}, {}
        for line in list(printed):
            message = json.loads(line)
            if "id" in message:
                parsed[json.dumps(message["id"])] = message
                raw[json.dumps(message["id"])] = squeeze(line.decode())
        return parsed, raw

    deadline = time.monotonic() + timeout
    for step in steps:
        step = step(responses()[0]) if callable(step) else step
        lines = [line if isinstance(line, str) else json.dumps(line) for line in step]
        expected = {json.dumps(json.loads(line)["id"]) for line in lines if '"id"' in line}
        proc.stdin.write("".join(line + "\n" for line in lines).encode())
        proc.stdin.flush()
        while expected - set(responses()[0]):
            assert time.monotonic() < deadline and proc.poll() is None, b"".join(errors).decode()
            time.sleep(0.05)
    proc.stdin.close()
    proc.wait(timeout=30)
    return responses()


def squeeze(text: str) -> str:
    """JSON text without the whitespace between tokens; every token as it was."""
    kept, in_string, escaped = [], False, False
    for c in text:
        if in_string:
            escaped = not escaped and c == "\\"
            in_string = escaped or c != '"'
        elif c in " \t\r\n":
            continue
        else:
            in_string = c == '"'
        kept.append(c)
    return "".join(kept)


def text_of(response) -> str:
    return response["result"]["content"][0]["text"]


def descriptor(result) -> dict:
    found = json.loads(result["content"][0]["text"])
    assert isinstance(found, dict) and found.get("offloaded") is True, f"not a descriptor: {str(found)[:300]}"
    return found


# --- exactly what the server sent -------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_numbers_and_strings_arrive_as_the_server_sent_them(tmp_path, mode):
    arguments = '{"name":"echo","arguments":{"n":123456789012345678901234567890,"e":1E+2,"s":"\\u00e9"}'
    meta = ',"_meta":' + json.dumps(META, separators=(",", ":")) if mode != "legacy" else ""
    echo = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":' + arguments + meta + "}}"
    parsed, raw = session(tmp_path, [handshake(mode), [
        request(mode, 1, "tools/list"),
        request(mode, 2, "tools/call", {"name": "exact"}),
        echo,
        request(mode, 4, "resources/templates/list"),
        request(mode, 5, "resources/read", {"uri": "wire://one"}),
        request(mode, 6, "prompts/list"),
        request(mode, 7, "tools/call", {"name": "rows", "arguments": {"n": 3000}}),
    ], [request(mode, 8, "resources/list")]])
    # What the proxy adds, it adds.
    assert "lro_extract" in [t["name"] for t in parsed["1"]["result"]["tools"]]
    assert "resources" in parsed["100"]["result"]["capabilities"]
    assert any(r["uri"].startswith("lro://offload/") for r in parsed["8"]["result"]["resources"])
    if mode != "legacy":
        assert all(parsed[str(i)]["result"]["resultType"] == "complete" for i in range(1, 9)), parsed
    # What the server sent arrives as sent.
    assert '"experimental":{"wire":' + VALUES + "}" in raw["100"], raw["100"]
    assert '"instructions":"caf\\u00e9 1E+2"' in raw["100"] and '"_meta":' + VALUES in raw["100"], raw["100"]
    assert '"maximum":123456789012345678901234567890,"minimum":1E+2}' in raw["1"], raw["1"]
    assert '"_meta":' + VALUES in raw["1"], raw["1"]
    assert '"structuredContent":' + VALUES in raw["2"] and text_of(parsed["2"]) == VALUES, raw["2"]
    assert arguments in squeeze(text_of(parsed["3"])), "the server got the arguments as the client sent them"
    for mid in "456":
        assert '"_meta":' + VALUES in raw[mid], raw[mid]
    assert '"size":123456789012345678901234567890,"_meta":' + VALUES in raw["8"], raw["8"]
    descriptor(parsed["7"]["result"])
    assert '"_meta":' + VALUES in raw["7"], "an offloaded result keeps the rest as sent"


def big_text(mb) -> str:
    row = json.dumps({"id": 0, "name": "a row of the big result", "payload": "z" * 60})
    return "[" + ",".join([row] * int(float(mb) * (1 << 20) / (len(row) + 1))) + "]"


class Pretty(http.server.BaseHTTPRequestHandler):
    """A streamable HTTP server that prints its JSON over several lines, as a JSON body (`/json`)
    or as an event with one `data:` line per line (`/sse`). The tool `big {"mb": N}` answers
    with N MB of rows as its text, beside a `_meta` that holds VALUES."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "id" not in message:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if message["method"] == "initialize":
            result = '{\n  "protocolVersion": "2025-11-25",\n  "capabilities": {\n    "tools": {}\n  },\n' \
                     '  "serverInfo": {"name": "pretty", "version": "1"}\n}'
        elif message["params"].get("name") == "big":
            text = json.dumps(big_text(message["params"]["arguments"]["mb"]))
            result = '{\n  "content": [\n    {"type": "text", "text": ' + text + '}\n  ],\n  "_meta": ' + VALUES + "\n}"
        else:
            result = '{\n  "content": [\n    {"type": "text", "text": "small"}\n  ],\n  "structuredContent": ' \
                     + VALUES + "\n}"
        text = '{\n  "jsonrpc": "2.0",\n  "id": ' + json.dumps(message["id"]) + ',\n  "result": ' + result + "\n}"
        if self.path == "/sse":
            body = ("event: message\n" + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n").encode()
            kind = "text/event-stream"
        else:
            body, kind = text.encode(), "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.mark.parametrize("path", ["/json", "/sse"])
def test_a_message_printed_over_several_lines_reaches_the_client_as_one(tmp_path, path):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Pretty)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}{path}"
        parsed, raw = session(tmp_path, [handshake("legacy"), [request("legacy", 1, "tools/call", {"name": "x"})]],
                              upstream=("--url", url))
    finally:
        server.shutdown()
    assert "resources" in parsed["100"]["result"]["capabilities"], "rewritten, and one line"
    assert '"structuredContent":' + VALUES in raw["1"], raw["1"]


def pretty_server():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Pretty)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def spool_files(directory: Path, wait=5.0) -> list:
    """The spool files left in `directory`, once the proxy had `wait` seconds to delete them (it
    does so right after writing the message, which the client may read first)."""
    deadline = time.monotonic() + wait
    while True:
        left = sorted(p.name for p in directory.iterdir() if p.name.startswith(".lro-spool-"))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)



@pytest.mark.parametrize("path", ["/json", "/sse"])
def test_a_large_answer_over_http_is_spooled_offloaded_and_kept_as_sent(tmp_path, path):
    server = pretty_server()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}{path}"
        big = request("legacy", 1, "tools/call", {"name": "big", "arguments": {"mb": 3}})
        parsed, raw = session(tmp_path, [handshake("legacy"), [big]], upstream=("--url", url))
        plain = tmp_path / "plain"
        plain.mkdir(mode=0o700)
        whole, _ = session(plain, [handshake("legacy"), [big]], flags=("--threshold", "100000000"),
                           upstream=("--url", url))
    finally:
        server.shutdown()
    descriptor(parsed["1"]["result"])
    assert '"_meta":' + VALUES in raw["1"], raw["1"][-300:]
    assert json.loads(text_of(whole["1"])) == json.loads(big_text(3)), "forwarded whole, as one line"
    assert spool_files(tmp_path) == [] and spool_files(plain) == []


@pytest.mark.parametrize("path", ["/json", "/sse"])
def test_a_large_answer_over_http_grows_the_proxy_by_at_most_one_and_a_half_times_it(tmp_path, path):
    server = pretty_server()
    url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    # A time limit well above the offload's few seconds, as test_hostile.py's 60 MiB test has:
    # on a loaded machine the default 10 s ran out (CI, 6b07450) and the result was cut instead
    # of offloaded; memory is what this measures.
    proc = subprocess.Popen([LRO, "proxy", "--timeout", "120", "--output-dir", str(tmp_path), "--url", url],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        # The session's start done (the proxy's own tools check and the client's listing both
        # call the component) before the baseline is taken.
        for line in handshake("legacy") + [request("legacy", 101, "tools/list")]:
            proc.stdin.write(json.dumps(line).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 100
        assert json.loads(proc.stdout.readline())["id"] == 101
        time.sleep(0.5)
        before = peak_kib(proc.pid)
        big = request("legacy", 1, "tools/call", {"name": "big", "arguments": {"mb": 60}})
        proc.stdin.write(json.dumps(big).encode() + b"\n")
        proc.stdin.flush()
        descriptor(json.loads(proc.stdout.readline())["result"])
        grown = (peak_kib(proc.pid) - before) * 1024
        assert grown <= 1.5 * 60 * (1 << 20), f"the proxy grew by {grown / (60 << 20):.2f}x a 60 MiB result"
    finally:
        proc.kill()
        proc.wait()
        server.shutdown()


def peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


# --- tasks ------------------------------------------------------------------------------------


def extract(mode, mid, found: dict) -> dict:
    path = next(iter(found["files"].values()))
    return request(mode, mid, "tools/call", {"name": "lro_extract", "arguments": {
        "file_path": path, "query": "[.[] | select(.group == \"g3\")] | length", "slurp": True}})


@pytest.mark.parametrize("mode", MODES)
def test_a_task_result_is_offloaded_like_the_call_it_came_from(tmp_path, mode):
    def task_id(parsed):
        return parsed["1"]["result"]["task"]["taskId"]

    parsed, _ = session(tmp_path, [
        handshake(mode),
        [request(mode, 1, "tools/call", {"name": "task_rows", "arguments": {"n": 600}, "task": {"ttl": 60000}})],
        lambda got: [request(mode, 2, "tasks/get", {"taskId": task_id(got)}),
                     request(mode, 3, "tasks/result", {"taskId": task_id(got)})],
        lambda got: [extract(mode, 4, descriptor(got["3"]["result"])), request(mode, 5, "resources/list")]])
    assert parsed["2"]["result"]["status"] == "completed"
    related = parsed["3"]["result"]["_meta"]["io.modelcontextprotocol/related-task"]
    assert related == {"taskId": task_id(parsed)}, parsed["3"]
    assert json.loads(text_of(parsed["4"])) == 600 // 7 + 1, parsed["4"]
    path = next(iter(descriptor(parsed["3"]["result"])["files"].values()))
    listed = [r["uri"] for r in parsed["5"]["result"]["resources"]]
    assert "lro://offload/" + Path(path).name in listed, listed


@pytest.mark.parametrize("mode", MODES)
def test_a_completed_task_inline_in_tasks_get_is_offloaded(tmp_path, mode):
    def task_id(parsed):
        return parsed["1"]["result"]["taskId"]

    parsed, _ = session(tmp_path, [
        handshake(mode),
        [request(mode, 1, "tools/call", {"name": "task_rows", "arguments": {"n": 600}})],
        lambda got: [request(mode, 2, "tasks/get", {"taskId": task_id(got)})],
        lambda got: [extract(mode, 3, descriptor(got["2"]["result"]["result"]))]])
    assert parsed["1"]["result"]["resultType"] == "task"
    got = parsed["2"]["result"]
    assert (got["taskId"], got["status"], got["resultType"]) == (task_id(parsed), "completed", "complete"), got
    assert json.loads(text_of(parsed["3"])) == 600 // 7 + 1, parsed["3"]


def test_a_task_result_follows_its_tools_settings(tmp_path):
    config = tmp_path / "lro.toml"
    config.write_text("[prompt.offload.tools.task_rows]\nthreshold_tokens = 500\n")
    parsed, _ = session(tmp_path / "out", [
        handshake("legacy"),
        [request("legacy", 1, "tools/call", {"name": "task_rows", "arguments": {"n": 600}, "task": {}})],
        lambda got: [request("legacy", 2, "tasks/result", {"taskId": got["1"]["result"]["task"]["taskId"]}),
                     request("legacy", 3, "tools/call", {"name": "rows", "arguments": {"n": 600}})]],
        flags=("--config", str(config), "--threshold", "100000"))
    descriptor(parsed["2"]["result"])
    assert len(json.loads(text_of(parsed["3"]))) == 600, "another tool keeps the threshold of all"
