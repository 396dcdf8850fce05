#!/usr/bin/env python3
"""Capture the exact bytes real MCP servers send as a tools/call result.

Stdlib only (Python 3.11+). For each case this script builds deterministic
input (a file tree, a git repository, a SQLite database, a knowledge graph),
starts the real server at a pinned version over stdio, speaks JSON-RPC by hand
(initialize with protocolVersion 2025-06-18, notifications/initialized,
tools/call) and writes the raw span of the response's `result` member,
byte for byte, to tests/corpus/<case>/result.json, next to call.json.

The response line is never re-serialised: the `result` member is located by a
small scanner over the raw text, so every number and string keeps the spelling
the server chose.

    python3 tests/corpus/capture.py --install     # npm/pip installs into the scratch folder
    python3 tests/corpus/capture.py               # all cases
    python3 tests/corpus/capture.py fs-directory-tree git-log   # some cases
    python3 tests/corpus/capture.py --list-tools filesystem     # look at a server

Scratch installs go to $LRO_CORPUS_SCRATCH (default /work/scratch-corpus).
Generated inputs live at fixed paths under /tmp (see FIXED PATHS below) so the
paths that appear inside results do not vary from run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRATCH = Path(os.environ.get("LRO_CORPUS_SCRATCH", "/work/scratch-corpus"))
NPM_DIR = SCRATCH / "npm"
VENV_GIT = SCRATCH / "venv-git"
VENV_SQLITE = SCRATCH / "venv-sqlite"

# FIXED PATHS: they appear inside some results, so they must not vary.
TREE_DIR = Path("/tmp/lro-corpus-tree")
GIT_DIR = Path("/tmp/lro-corpus-git")
DB_PATH = Path("/tmp/lro-corpus.db")
MEMORY_FILE = Path("/tmp/lro-corpus-memory.jsonl")

PROTOCOL = "2025-06-18"
THRESHOLD = 1600

PINS = {
    "filesystem": "@modelcontextprotocol/server-filesystem@2026.8.31",
    "memory": "@modelcontextprotocol/server-memory@2026.8.31",
    "everything": "@modelcontextprotocol/server-everything@2026.8.31",
    "dbhub": "@bytebase/dbhub@0.21.2",
    "git": "mcp-server-git==2026.10.19",
    "sqlite": "mcp-server-sqlite==2025.4.25",
}
# How the pin is written in call.json ("<package>@<version>").
SERVER_LABEL = {k: v.replace("==", "@") for k, v in PINS.items()}


# --------------------------------------------------------------------------
# Installing (scratch only, never committed)
# --------------------------------------------------------------------------

def install() -> None:
    SCRATCH.mkdir(parents=True, exist_ok=True)
    npm_pkgs = [PINS[k] for k in ("filesystem", "memory", "everything", "dbhub")]
    run(["npm", "install", "--prefix", str(NPM_DIR), "--no-audit", "--no-fund", *npm_pkgs])
    for venv, reqs in ((VENV_GIT, [PINS["git"]]), (VENV_SQLITE, [PINS["sqlite"], "mcp<2"])):
        if not (venv / "bin" / "python").exists():
            run([sys.executable, "-m", "venv", str(venv)])
        run([str(venv / "bin" / "pip"), "install", "-q", *reqs])


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, **kw)


# --------------------------------------------------------------------------
# Raw JSON scanning: find the byte span of a member's value without parsing
# --------------------------------------------------------------------------

WS = b" \t\r\n"


def _skip_ws(b: bytes, i: int) -> int:
    while i < len(b) and b[i] in WS:
        i += 1
    return i


def _skip_string(b: bytes, i: int) -> int:
    """b[i] is the opening quote; return the index after the closing quote."""
    assert b[i] == 0x22
    i += 1
    while True:
        c = b[i]
        if c == 0x5C:  # backslash: skip the escaped character
            i += 2
        elif c == 0x22:
            return i + 1
        else:
            i += 1


def _skip_value(b: bytes, i: int) -> int:
    """Return the index just after the JSON value that starts at b[i]."""
    c = b[i]
    if c == 0x22:
        return _skip_string(b, i)
    if c in b"{[":
        depth = 0
        while True:
            c = b[i]
            if c == 0x22:
                i = _skip_string(b, i)
                continue
            if c in b"{[":
                depth += 1
            elif c in b"}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    # number, true, false, null
    while i < len(b) and b[i] not in b",}] \t\r\n":
        i += 1
    return i


def member_span(line: bytes, key: str) -> tuple[int, int]:
    """Span of the value of top-level member `key` in the JSON object `line`."""
    i = _skip_ws(line, 0)
    if line[i] != 0x7B:
        raise ValueError("not an object")
    i += 1
    while True:
        i = _skip_ws(line, i)
        if line[i] == 0x7D:
            raise KeyError(key)
        end = _skip_string(line, i)
        name = json.loads(line[i:end])
        i = _skip_ws(line, end)
        assert line[i] == 0x3A  # ':'
        i = _skip_ws(line, i + 1)
        vend = _skip_value(line, i)
        if name == key:
            return i, vend
        i = _skip_ws(line, vend)
        if line[i] == 0x2C:
            i += 1


# --------------------------------------------------------------------------
# A hand-written stdio JSON-RPC client
# --------------------------------------------------------------------------

class Server:
    def __init__(self, name: str, cmd: list[str], env: dict | None = None, cwd: str | None = None):
        self.name = name
        self.stderr = open(SCRATCH / f"{name}.stderr.log", "wb")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
            env=full_env, cwd=cwd,
        )
        self.next_id = 1
        self.init_result = self.request("initialize", {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "lro-corpus-capture", "version": "1"},
        })
        self.notify("notifications/initialized")

    def send(self, msg: dict) -> None:
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict | None = None) -> None:
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def request_raw(self, method: str, params: dict, timeout: float = 300) -> bytes:
        """Send a request and return the raw response line (bytes, no newline)."""
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{self.name}: server closed stdout (see {self.stderr.name})")
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            msg = json.loads(line)
            if "method" in msg and "id" in msg:
                # A request from the server (roots/list, ping, ...): answer minimally.
                if msg["method"] == "ping":
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                elif msg["method"] == "roots/list":
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}})
                else:
                    self.send({"jsonrpc": "2.0", "id": msg["id"],
                               "error": {"code": -32601, "message": "not supported"}})
                continue
            if "method" in msg:
                continue  # a notification (logging, progress, list_changed)
            if msg.get("id") != rid:
                continue
            if "error" in msg:
                raise RuntimeError(f"{self.name}: {method} failed: {msg['error']}")
            return line
        raise TimeoutError(f"{self.name}: no answer to {method} in {timeout}s")

    def request(self, method: str, params: dict) -> dict:
        return json.loads(self.request_raw(method, params))["result"]

    def call_raw(self, tool: str, arguments: dict) -> bytes:
        """tools/call; return the exact bytes of the response's `result` member."""
        line = self.request_raw("tools/call", {"name": tool, "arguments": arguments})
        start, end = member_span(line, "result")
        raw = line[start:end]
        # The span must be the same value the response carries.
        assert json.loads(raw) == json.loads(line)["result"]
        return raw

    def call(self, tool: str, arguments: dict) -> dict:
        result = json.loads(self.call_raw(tool, arguments))
        if result.get("isError"):
            raise RuntimeError(f"{self.name}: {tool} returned an error: {result}")
        return result

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def npm_bin(name: str) -> str:
    return str(NPM_DIR / "node_modules" / ".bin" / name)


SERVERS = {
    "filesystem": lambda: Server("filesystem", [npm_bin("mcp-server-filesystem"), str(TREE_DIR)]),
    "memory": lambda: Server("memory", [npm_bin("mcp-server-memory")],
                             env={"MEMORY_FILE_PATH": str(MEMORY_FILE)}),
    "everything": lambda: Server("everything", [npm_bin("mcp-server-everything"), "stdio"]),
    "git": lambda: Server("git", [str(VENV_GIT / "bin" / "mcp-server-git"), "--repository", str(GIT_DIR)]),
    "dbhub": lambda: Server("dbhub", [npm_bin("dbhub"), "--transport", "stdio",
                                      "--dsn", f"sqlite://{DB_PATH}"]),
    "sqlite": lambda: Server("sqlite", [str(VENV_SQLITE / "bin" / "mcp-server-sqlite"),
                                        "--db-path", str(DB_PATH)]),
}


def save_case(case: str, server: str, tool: str, arguments: dict, raw: bytes) -> None:
    d = HERE / case
    d.mkdir(parents=True, exist_ok=True)
    call = {"tool": tool, "arguments": arguments, "server": SERVER_LABEL[server], "threshold": THRESHOLD}
    (d / "call.json").write_text(json.dumps(call, indent=2) + "\n")
    (d / "result.json").write_bytes(raw)
    print(f"{case}: {len(raw):,} bytes", file=sys.stderr)


# --------------------------------------------------------------------------
# Deterministic inputs
# --------------------------------------------------------------------------

LANGS = ["rust", "python", "typescript", "go", "shell"]
EXT = {"rust": "rs", "python": "py", "typescript": "ts", "go": "go", "shell": "sh"}


def make_tree() -> int:
    """~2,000 files with fixed names at TREE_DIR; returns the number of files."""
    if TREE_DIR.exists():
        shutil.rmtree(TREE_DIR)
    files: list[str] = []
    # src/<module>/<file> in five languages, with a nested tests/ folder per module
    for m in range(12):
        mod = f"module_{m:02d}"
        lang = LANGS[m % len(LANGS)]
        for f in range(30):
            files.append(f"src/{mod}/part_{f:03d}.{EXT[lang]}")
        for f in range(8):
            files.append(f"src/{mod}/tests/test_part_{f:03d}.{EXT[lang]}")
    # docs: chapters and sections
    for c in range(10):
        for s in range(15):
            files.append(f"docs/chapter-{c:02d}/section-{s:02d}.md")
    # one flat folder with many files (the list_directory case)
    for i in range(600):
        kind = ("icon", "photo", "banner", "thumb")[i % 4]
        ext = ("png", "jpg", "svg")[i % 3]
        files.append(f"assets/images/{kind}-{i:04d}.{ext}")
    # data by year/month
    for y in (2024, 2025):
        for mo in range(1, 13):
            for d in range(12):
                files.append(f"data/{y}/{mo:02d}/report-{y}{mo:02d}{d + 1:02d}.json")
    # logs
    for i in range(500):
        files.append(f"logs/service-{i % 5}/run-{i:04d}.log")
    for name in ("README.md", "Cargo.toml", "package.json", ".gitignore", "LICENSE"):
        files.append(name)
    for rel in files:
        p = TREE_DIR / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"{rel}\n")
    return len(files)


AUTHORS = [
    ("Ada Lovelace", "ada@example.org"),
    ("Grace Hopper", "grace@example.org"),
    ("Alan Turing", "alan@example.org"),
    ("Edsger Dijkstra", "edsger@example.org"),
]
AREAS = ["parser", "cli", "storage", "docs", "proxy", "tests", "ci", "schema"]
VERBS = ["Fix", "Add", "Refactor", "Document", "Speed up", "Remove", "Rename", "Test"]


def make_git_repo(n: int = 500) -> None:
    if GIT_DIR.exists():
        shutil.rmtree(GIT_DIR)
    GIT_DIR.mkdir(parents=True)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    base_env.update({"HOME": str(GIT_DIR), "GIT_CONFIG_NOSYSTEM": "1", "TZ": "UTC", "LC_ALL": "C"})

    def git(*args, env=None, inp=None):
        subprocess.run(["git", *args], cwd=GIT_DIR, env=env or base_env, check=True,
                       input=inp, stdout=subprocess.DEVNULL)

    git("init", "-q", "-b", "main")
    git("config", "user.name", "Corpus")
    git("config", "user.email", "corpus@example.org")
    git("config", "commit.gpgsign", "false")
    t0 = 1704067200  # 2024-01-01T00:00:00Z
    for i in range(n):
        name, email = AUTHORS[(i * 7 + i // 3) % len(AUTHORS)]
        area = AREAS[(i * 5) % len(AREAS)]
        verb = VERBS[(i * 3 + 1) % len(VERBS)]
        ts = t0 + i * 3 * 3600 + (i * 37 % 60) * 60
        date = f"@{ts} +0000"
        f = GIT_DIR / area / f"file_{i % 17:02d}.txt"
        f.parent.mkdir(exist_ok=True)
        with open(f, "a") as fh:
            fh.write(f"change {i}\n")
        git("add", "-A")
        body_lines = [f"- touches {area}/file_{i % 17:02d}.txt", f"- change number {i}"]
        if i % 4 == 0:
            body_lines.append(f"Refs: #{1000 + i}")
        msg = f"{verb} {area}: step {i}\n\n" + "\n".join(body_lines) + "\n"
        env = dict(base_env, GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_AUTHOR_DATE=date,
                   GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email, GIT_COMMITTER_DATE=date)
        git("commit", "-q", "-F", "-", env=env, inp=msg.encode())


FIRST = ["ava", "ben", "cai", "dia", "eli", "fay", "gus", "hal", "ivy", "jon",
         "kim", "leo", "mia", "ned", "ola", "pam", "raj", "sue", "tom", "uma"]
LAST = ["lee", "kim", "roy", "fox", "ito", "li", "orr", "sy", "ma", "vo",
        "ng", "oh", "wu", "yu", "ali", "ash", "bay", "cox", "day", "eng"]
STATUSES = ["paid", "pending", "refunded", "failed"]
BIG_ID = 4242  # the row whose `ref` is a big integer
BIG_REF = 123456789012345678


def make_db(rows: int = 20000) -> None:
    """A 20,000-row `orders` table, deterministic (a linear congruential sequence)."""
    if DB_PATH.exists():
        DB_PATH.unlink()
    con = sqlite3.connect(DB_PATH)
    con.execute(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL,"
        " amount REAL NOT NULL, status TEXT, ref INTEGER, created_at TEXT NOT NULL)"
    )
    x = 12345
    data = []
    t0 = 1704067200
    for i in range(1, rows + 1):
        x = (x * 1103515245 + 12345) % 2**31
        first = FIRST[x % len(FIRST)]
        last = LAST[(x >> 8) % len(LAST)]
        cents = (x >> 4) % 100000  # 0.00 .. 999.99
        amount = round(cents / 100, 2)
        status = None if (x >> 12) % 17 == 0 else STATUSES[(x >> 16) % len(STATUSES)]
        ref = BIG_REF if i == BIG_ID else 100000 + (x >> 3) % 900000
        ts = t0 + i * 1571
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
        data.append((i, f"{first} {last}", f"{first}.{last}{i}@ex.com", amount, status, ref, created))
    con.executemany("INSERT INTO orders VALUES (?,?,?,?,?,?,?)", data)
    con.commit()
    con.close()


ENTITY_TYPES = ["person", "project", "organization", "service", "dataset"]
RELATIONS = ["works_on", "depends_on", "owns", "reports_to", "uses"]


def build_memory(srv: Server, n: int = 300) -> None:
    entities = []
    for i in range(n):
        et = ENTITY_TYPES[(i * 3) % len(ENTITY_TYPES)]
        obs = [f"{et} number {i}", f"created in batch {i // 50}"]
        if i % 3 == 0:
            obs.append(f"tagged {AREAS[i % len(AREAS)]}")
        entities.append({"name": f"{et}-{i:03d}", "entityType": et, "observations": obs})
    for k in range(0, n, 100):
        srv.call("create_entities", {"entities": entities[k:k + 100]})
    names = [e["name"] for e in entities]
    rels = []
    for i in range(n):
        for j in (1, 7):
            if (i + j) % 2 == 0 or j == 1:
                rels.append({"from": names[i], "to": names[(i * j + 11) % n],
                             "relationType": RELATIONS[(i + j) % len(RELATIONS)]})
    for k in range(0, len(rels), 100):
        srv.call("create_relations", {"relations": rels[k:k + 100]})


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

def case_filesystem() -> None:
    make_tree()
    with SERVERS["filesystem"]() as srv:
        for case, tool, args in (
            ("fs-directory-tree", "directory_tree", {"path": str(TREE_DIR)}),
            ("fs-list-directory", "list_directory", {"path": str(TREE_DIR / "assets" / "images")}),
            ("fs-search-files", "search_files", {"path": str(TREE_DIR), "pattern": "**/*.json"}),
        ):
            raw = srv.call_raw(tool, args)
            save_case(case, "filesystem", tool, args, raw)


def case_memory() -> None:
    if MEMORY_FILE.exists():
        MEMORY_FILE.unlink()
    with SERVERS["memory"]() as srv:
        build_memory(srv)
        raw = srv.call_raw("read_graph", {})
        save_case("memory-read-graph", "memory", "read_graph", {}, raw)


def case_git() -> None:
    make_git_repo()
    with SERVERS["git"]() as srv:
        args = {"repo_path": str(GIT_DIR), "max_count": 1000}
        raw = srv.call_raw("git_log", args)
        save_case("git-log", "git", "git_log", args, raw)


def case_dbhub() -> None:
    if not DB_PATH.exists():
        make_db()
    with SERVERS["dbhub"]() as srv:
        args = {"sql": "SELECT * FROM orders"}
        raw = srv.call_raw("execute_sql", args)
        save_case("dbhub-execute-sql", "dbhub", "execute_sql", args, raw)


def case_sqlite() -> None:
    if not DB_PATH.exists():
        make_db()
    with SERVERS["sqlite"]() as srv:
        args = {"query": "SELECT * FROM orders"}
        raw = srv.call_raw("read_query", args)
        save_case("sqlite-read-query", "sqlite", "read_query", args, raw)


def case_everything() -> None:
    with SERVERS["everything"]() as srv:
        for case, tool, args in EVERYTHING_CALLS:
            raw = srv.call_raw(tool, args)
            save_case(case, "everything", tool, args, raw)


# server-everything has no tool with a large result; these two are small (below
# the threshold) but structured: a structuredContent object and ten resource_link items.
EVERYTHING_CALLS: list[tuple[str, str, dict]] = [
    ("everything-structured-content", "get-structured-content", {"location": "Chicago"}),
    ("everything-resource-links", "get-resource-links", {"count": 10}),
]

CASES = {
    "filesystem": case_filesystem,
    "memory": case_memory,
    "git": case_git,
    "dbhub": case_dbhub,
    "sqlite": case_sqlite,
    "everything": case_everything,
}


def list_tools(server: str) -> None:
    if server == "filesystem" and not TREE_DIR.exists():
        make_tree()
    if server == "git" and not GIT_DIR.exists():
        make_git_repo()
    if server in ("dbhub", "sqlite") and not DB_PATH.exists():
        make_db()
    with SERVERS[server]() as srv:
        print(json.dumps(srv.init_result, indent=1))
        print(json.dumps(srv.request("tools/list", {}), indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--install", action="store_true", help="install the pinned servers into the scratch folder")
    ap.add_argument("--list-tools", metavar="SERVER", help=f"print tools/list of one of {sorted(SERVERS)}")
    ap.add_argument("groups", nargs="*", help=f"server groups to capture (default all): {sorted(CASES)}")
    a = ap.parse_args()
    SCRATCH.mkdir(parents=True, exist_ok=True)
    if a.install:
        install()
        return
    if a.list_tools:
        list_tools(a.list_tools)
        return
    # The database is rebuilt once per run so both SQL cases read the same table.
    if not a.groups or {"dbhub", "sqlite"} & set(a.groups):
        make_db()
    for g in a.groups or list(CASES):
        CASES[g]()


if __name__ == "__main__":
    main()
