"""The shared cases of tests/cases/ (docs/HOSTS.md, "Shared test cases"), run through the Python
host: every jq case through `query`, every host case with the runner algorithm of HOSTS.md,
compared with the same expected files as the Rust and Node hosts."""

import difflib
import hashlib
import json
import os
import re
import secrets
import shutil
import stat

import pytest

from conftest import CASES
from lro_wasm import HOST_KINDS, LroError


@pytest.fixture(params=["c-api", "public-api"])
def host(request, lro, lro_public):
    """Each case runs twice: through wasmtime's C API (the fast path) and through wasmtime-py's
    public API (its fallback), with the same expected results."""
    return lro if request.param == "c-api" else lro_public


# ---- jq cases --------------------------------------------------------------------------------


def parse_jq_cases(path):
    """jq's test format, parsed as cli/tests/all/jq_cases.rs does."""
    cases = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            i += 1
            continue
        case = {"file": path.name, "line": i + 1, "fail": False, "slurp": False, "raw": False}
        while line.startswith("%%"):
            directive = line[2:].split(":", 1)[0].strip()
            if directive not in ("FAIL", "SLURP", "RAW", "DIFFERS"):
                raise ValueError(f"{path.name}:{i + 1}: unknown directive %%{directive}")
            if directive != "DIFFERS":
                case[directive.lower()] = True
            i += 1
            line = lines[i]
        case["filter"] = line
        case["input"] = lines[i + 1]
        i += 2
        case["expected"] = []
        while i < len(lines) and lines[i].strip():
            case["expected"].append(lines[i])
            i += 1
        cases.append(case)
    return cases


JQ_CASES = [c for p in sorted((CASES / "jq").glob("*.test")) for c in parse_jq_cases(p)]


def rust_lines(text):
    """str::lines of Rust: split on \\n, drop one trailing empty line and a \\r before \\n."""
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


@pytest.mark.parametrize("case", JQ_CASES, ids=[f"{c['file']}:{c['line']}" for c in JQ_CASES])
def test_jq_case(host, case):
    where = f"{case['file']}:{case['line']} `{case['filter']}`"
    if case["fail"]:
        with pytest.raises(LroError) as caught:
            host.query(case["filter"], case["input"], case["slurp"], case["raw"], None)
        error = caught.value
        assert error.kind not in HOST_KINDS, f"{where}: stopped by the host, not by the filter: {error}"
        assert case["expected"][0] in error.message, f"{where}: error {error.message!r} lacks {case['expected'][0]!r}"
        return
    try:
        result = host.query(case["filter"], case["input"], case["slurp"], case["raw"], None)
    except LroError as e:
        pytest.fail(f"{where}: {e}", pytrace=False)
    # As `lro query` prints them: one value per line.
    got = rust_lines("".join(v + "\n" for v in result["values"]))
    assert got == case["expected"], f"{where}"


def test_there_are_jq_cases():
    assert len(JQ_CASES) >= 50, f"only {len(JQ_CASES)} jq cases in {CASES / 'jq'}"


# ---- host cases ------------------------------------------------------------------------------

HOST = CASES / "host"
# tests/cases/host/inputs holds the inputs cases share (`{"$text": "host/inputs/..."}`): not a case.
SHARED_INPUTS = "inputs"


def host_cases(root):
    """Every case folder under `root`: each folder but the shared inputs, whether or not it holds
    its files, so that a folder missing one fails instead of being left out."""
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != SHARED_INPUTS)


def read_case(folder):
    """(the case, its expected result) from `folder`/case.json and `folder`/expected.json; fails
    naming the folder when either is missing."""
    for file in ("case.json", "expected.json"):
        if not (folder / file).is_file():
            bless = " (bless it with the Rust runner, LRO_BLESS=1)" if file == "expected.json" else ""
            pytest.fail(f"{folder.name}: no {file} in {folder}{bless}", pytrace=False)
    case, want = (read_json(folder / file) for file in ("case.json", "expected.json"))
    assert isinstance(case.get("about"), str), f"{folder.name}: no `about`"
    return case, want


def read_json(path):
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        pytest.fail(f"{path.parent.name}/{path.name}: not valid JSON: {e}", pytrace=False)


HOST_CASES = host_cases(HOST)


def test_there_are_host_cases():
    assert HOST_CASES, f"no host cases in {HOST}: the runner below would test nothing"


def test_every_case_folder_is_run_and_one_without_expected_json_fails(tmp_path):
    for name in ("a-case", "no-expected", SHARED_INPUTS):
        (tmp_path / name).mkdir()
        (tmp_path / name / "case.json").write_text('{"about": "x", "steps": []}')
    (tmp_path / "a-case" / "expected.json").write_text('{"steps": [], "files": []}')
    (tmp_path / "generate.py").write_text("")
    assert host_cases(tmp_path) == ["a-case", "no-expected"]
    assert read_case(tmp_path / "a-case") == ({"about": "x", "steps": []}, {"steps": [], "files": []})
    with pytest.raises(pytest.fail.Exception, match="no-expected: no expected.json"):
        read_case(tmp_path / "no-expected")


def case_dir():
    """ROOT/lro-case-HEX, exactly 72 characters (HOSTS.md)."""
    root = os.path.realpath(os.environ.get("TMPDIR") or "/tmp")
    assert len(root) <= 50, f"the temporary directory {root} is longer than 50 characters"
    hex_len = 72 - len(root) - len("/lro-case-")
    path = f"{root}/lro-case-{secrets.token_hex(hex_len)[:hex_len]}"
    assert len(path) == 72
    return path


def substitute(value, dir):
    """{"$text": PATH} -> the file's text; <DIR> and <FILE> in every string."""
    if isinstance(value, dict):
        if set(value) == {"$text"}:
            return substitute((CASES / value["$text"]).read_text(), dir)
        return {k: substitute(v, dir) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, dir) for v in value]
    if isinstance(value, str):
        value = value.replace("<DIR>", dir)
        if "<FILE>" in value:
            value = value.replace("<FILE>", only_jsonl(dir))
        return value
    return value


def only_jsonl(dir):
    found = [n for n in os.listdir(dir) if n.endswith(".jsonl")]
    assert len(found) == 1, f"<FILE> needs exactly one *.jsonl file in {dir}, found {found}"
    return f"{dir}/{found[0]}"


def call(lro, name, cfg, args):
    if name == "offload":
        return lro.offload(cfg, args["request"])
    if name == "intercept":
        return lro.intercept(cfg, args["call"])
    if name == "recipes":
        return lro.recipes(cfg, args["detail"], args.get("file"))
    if name == "estimate":
        return lro.estimate(args["text"])
    if name == "extract":
        return lro.extract(cfg, args["request"])
    if name == "query":
        return lro.query(args["filter"], args["input"], bool(args.get("slurp")), bool(args.get("raw")), args.get("limit"))
    if name == "sweep":
        return lro.sweep(cfg, args["now"])
    if name == "tool_definition":
        return lro.tool_definition()
    if name == "call_tool":
        return lro.call_tool(cfg, args.get("arguments"))
    if name == "rewrite_tools":
        return lro.rewrite_tools(cfg, args.get("tools"))
    raise AssertionError(f"unknown call {name}")


ULID = re.compile(r"-[0-9A-HJKMNP-TV-Z]{26}\.jsonl")
TIMESTAMP = re.compile(r'"(timestamp|expires_at)":"[^"]*"')


def normalise_str(s, dir):
    s = s.replace(dir, "<DIR>")
    s = ULID.sub("-<ULID>.jsonl", s)
    return TIMESTAMP.sub(r'"\1":"<TIME>"', s)


def normalise(value, dir):
    if isinstance(value, str):
        return normalise_str(value, dir)
    if isinstance(value, list):
        return [normalise(v, dir) for v in value]
    if isinstance(value, dict):
        return {normalise_str(k, dir): normalise(v, dir) for k, v in value.items()}
    return value


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# Files over this many bytes are compared by size and SHA-256, as the Rust host blesses them.
DIGEST_ABOVE = 65536


def digest_large(content):
    if isinstance(content, str) and len(content.encode()) > DIGEST_ABOVE:
        data = content.encode()
        return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return content


def snapshot(dir):
    if not os.path.isdir(dir):
        return []
    entries = []
    for entry in os.scandir(dir):
        content = None
        if entry.is_file(follow_symlinks=False):
            # newline="": the content as written, line endings included.
            with open(entry.path, encoding="utf-8", newline="") as f:
                content = f.read()
        entries.append((normalise_str(entry.name, dir), digest_large(normalise(content, dir))))
    entries.sort(key=lambda e: (e[0], compact(e[1])))
    return [{"name": n, "content": c} for n, c in entries]


def run_case(lro, case):
    dir = case_dir()
    setup = case.get("setup") or {}
    if not setup.get("missing"):
        os.mkdir(dir)
        os.chmod(dir, 0o700)
    try:
        for name, content in (setup.get("files") or {}).items():
            text = substitute(content, dir)
            with open(f"{dir}/{name}", "w", encoding="utf-8", newline="") as f:
                f.write(text)
        for name, target in (setup.get("symlinks") or {}).items():
            os.symlink(substitute(target, dir), f"{dir}/{name}")
        if setup.get("mode"):
            os.chmod(dir, int(setup["mode"], 8))

        events = []
        lro.on_event = events.append
        steps = []
        for step in case["steps"]:
            cfg = {**lro.defaults(), **(case.get("config") or {}), **(step.get("config") or {}), "output_dir": dir}
            entry = {"call": step["call"]}
            try:
                entry["result"] = call(lro, step["call"], cfg, substitute(step.get("args") or {}, dir))
            except LroError as e:
                entry["error"] = {"kind": e.kind, "message": e.message}
            entry["events"] = events[:]
            events.clear()
            steps.append(entry)
        files = snapshot(dir)
    finally:
        lro.on_event = None
        if os.path.isdir(dir):
            os.chmod(dir, 0o700)
            shutil.rmtree(dir)
    return normalise({"steps": steps, "files": files}, dir)


def pretty(value):
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True).splitlines()


@pytest.mark.parametrize("name", HOST_CASES)
def test_host_case(host, name):
    case, want = read_case(HOST / name)
    got = run_case(host, case)
    if got != want:
        diff = "\n".join(difflib.unified_diff(pretty(want), pretty(got), f"{name}/expected.json", "python host", lineterm="", n=2))
        pytest.fail(f"{name}: differs from {name}/expected.json\n{diff[:6000]}", pytrace=False)


def test_normalisation_replaces_only_ulids_before_jsonl_and_header_timestamps():
    dir = "/tmp/lro-case-abc"
    assert normalise_str(
        "/tmp/lro-case-abc/atlatl-recall-01JDEF7X2K0000000000000000.jsonl and -01JDEF7X2K0000000000000000.json", dir
    ) == "<DIR>/atlatl-recall-<ULID>.jsonl and -01JDEF7X2K0000000000000000.json"
    assert normalise_str(
        '{"timestamp":"2026-11-22T00:32:53.117Z","expires_at":"2026-11-22T01:32:53.117Z","created":"2025-01-01T00:35:31Z"}', dir
    ) == '{"timestamp":"<TIME>","expires_at":"<TIME>","created":"2025-01-01T00:35:31Z"}'



def test_case_dir_is_72_characters_and_fresh():
    a, b = case_dir(), case_dir()
    assert len(a) == len(b) == 72 and a != b and not os.path.exists(a)
    assert stat.S_ISDIR(os.stat(os.path.dirname(a)).st_mode)


def test_the_runner_runs_the_tool_calls_and_reports_evictions(lro):
    """The calls and the event that no case file used when they were added."""
    records = [{"id": f"m{i}", "namespace": "_semantic/x", "title": f"Title {i}"} for i in range(60)]
    tools = [{"name": "t", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]
    case = {
        "about": "tool_definition, call_tool, rewrite_tools and offload-file-evicted through the runner",
        "config": {"threshold_tokens": 100, "max_files": 1, "extract_tool": True},
        "steps": [
            {"call": "tool_definition"},
            # ttl 0: the first file has expired once written, so the second may evict it.
            {"call": "offload", "config": {"ttl_seconds": 0}, "args": {"request": {"operation": "list", "records": records}}},
            {"call": "offload", "args": {"request": {"operation": "list", "records": records}}},
            {"call": "call_tool", "args": {"arguments": {"file_path": "<FILE>", "query": "length", "slurp": True}}},
            {"call": "rewrite_tools", "args": {"tools": tools}},
        ],
    }
    got = run_case(lro, case)
    definition, first, second, counted, rewritten = got["steps"]
    assert json.loads(definition["result"])["name"] == "lro_extract"
    assert [e["kind"] for e in second["events"]] == ["offload-file-evicted", "offload-created"], second
    evicted = second["events"][0]
    assert evicted == {"kind": "offload-file-evicted", "path": first["result"]["path"],
                       "bytes": first["result"]["bytes"], "cap": "max-files"}
    assert counted["result"]["values"] == ["60"], counted
    assert json.loads(rewritten["result"]) == [{"name": "t", "inputSchema": {"type": "object"}},
                                               json.loads(definition["result"])]
    assert [f["name"] for f in got["files"]] == ["atlatl-list-<ULID>.jsonl"]
