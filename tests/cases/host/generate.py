"""Writes the shared host cases in this folder (docs/HOSTS.md, "Shared test cases").

Each case is a folder: NAME/case.json is a list of calls in the JSON form of the WIT values;
NAME/expected.json is what they return, blessed by the Rust host (`LRO_BLESS=1 cargo test`)
and compared by the Rust, Python and Node hosts. The record inputs in inputs/ come from `lro sample` and are
written once by this script, when missing (pass --inputs to rewrite them with LRO=path/to/lro).

Run `python3 tests/cases/host/generate.py`, then bless, then review the diff of the expected files.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
INPUTS = HERE / "inputs"
MCP = HERE.parent / "mcp"

ULID_A = "01JDEF7X2K0000000000000000"
ULID_B = "01JDEF7X2K0000000000000001"
ULID_C = "01JDEF7X2K0000000000000002"


def ulid(n: int) -> str:
    """The n-th of the cases' fixed ULIDs (ULID_A is 0)."""
    return f"01JDEF7X2K{n:016d}"
# 2026-01-01T00:00:00.000Z; files with this header expire at now + ttl, so extraction cases use a
# ttl of 100 years and sweep cases a fixed `now`.
CREATED = "2026-01-01T00:00:00.000Z"
CREATED_MS = 1767225600000
CENTURY = 100 * 365 * 24 * 3600


def sample(name, *args):
    path = INPUTS / name
    if path.exists() and "--inputs" not in sys.argv:
        return
    lro = os.environ.get("LRO", str(HERE.parents[2] / "target/debug/lro"))
    out = subprocess.run([lro, "sample", *args], check=True, capture_output=True, text=True).stdout
    path.write_text(out)


def text(rel):
    return {"$text": rel}


def header(count, detail="light", operation="recall", timestamp=CREATED):
    return json.dumps(
        {
            "type": "lro_header",
            "operation": operation,
            "query": None,
            "count": count,
            "schema_version": "0.1",
            "timestamp": timestamp,
            "estimated_tokens": 10 * count,
            "detail": detail,
        },
        separators=(",", ":"),
    )


def lro_file(records, **kw):
    return "\n".join([header(len(records), **kw)] + [json.dumps(r, separators=(",", ":")) for r in records]) + "\n"


RECORDS = [
    {"id": "m1", "memory_type": "semantic", "namespace": "_semantic/decisions", "title": "Use LRU caching", "tags": ["cache"], "created": "2026-01-01T00:00:00Z"},
    {"id": "m2", "memory_type": "episodic", "namespace": "_episodic/incidents", "title": "Cache stampede", "tags": None, "created": "2026-01-02T00:00:00Z"},
    {"id": "m3", "memory_type": "procedural", "namespace": "_procedural/runbooks", "title": "Flush the cache", "created": "2026-01-03T00:00:00Z"},
]

cases = {}

# Cases written by hand rather than by this script; it leaves them alone.
HAND_WRITTEN = {"extract-tool-call", "intercept-rewrite-tools", "offload-storage-caps", "offload-unusable-dir"}


def case(name, about, steps, config=None, setup=None):
    value = {"about": about}
    if setup:
        value["setup"] = setup
    if config:
        value["config"] = config
    value["steps"] = steps
    cases[name] = value


def offload(records, operation="recall", detail=None, query="caching", text_=None, config=None):
    request = {"operation": operation, "query": query, "detail": detail, "records": records}
    if text_ is not None:
        request["text"] = text_
    step = {"call": "offload", "args": {"request": request}}
    if config:
        step["config"] = config
    return step


def extract(path="<FILE>", config=None, **request):
    step = {"call": "extract", "args": {"request": {"path": path, **request}}}
    if config:
        step["config"] = config
    return step


def query(filter_, input_, **kw):
    return {"call": "query", "args": {"filter": filter_, "input": input_, **kw}}


def intercept(tool, result, arguments=None, meta=None, config=None):
    step = {"call": "intercept", "args": {"call": {"tool": tool, "arguments": arguments or {}, "result": result, "meta": meta}}}
    if config:
        step["config"] = config
    return step


def main():
    INPUTS.mkdir(exist_ok=True)
    for level in ("light", "medium", "full"):
        sample(f"{level}-60.json", "--detail", level, "--count", "60", "--seed", "42")
    sample("hits-40.json", "--detail", "light", "--count", "40", "--seed", "43", "--hits")
    inject_path = INPUTS / "inject-40.json"
    sample("inject-40.json", "--detail", "medium", "--count", "40", "--seed", "44", "--inject")
    inject = json.loads(inject_path.read_text())
    (INPUTS / "inject-40-records.json").write_text(json.dumps(inject["records"], ensure_ascii=False))
    (INPUTS / "inject-40-text.txt").write_text(inject["text"])
    inject_path.unlink()

    # Offload: each detail level, each descriptor style, the libraries, the fallbacks.
    for level in ("light", "medium", "full"):
        case(
            f"offload-{level}",
            f"60 {level} records above the threshold: the {level} descriptor, file and event",
            [offload(text(f"host/inputs/{level}-60.json"), detail=level)],
            config={"threshold_tokens": 500},
        )
    case(
        "offload-default-detail",
        "no detail given: recall defaults to light, inject to medium, list to light",
        [offload(text("host/inputs/full-60.json"), operation="list", detail=None, query=None)],
        config={"threshold_tokens": 500},
    )
    case(
        "offload-bare",
        "the bare descriptor: offloaded, summary and file_path only",
        [offload(text("host/inputs/full-60.json"), detail="full")],
        config={"threshold_tokens": 500, "descriptor": "bare"},
    )
    case(
        "offload-extract-tool",
        "a host offering lro_extract (extract_tool): guidance points to it instead of to shell commands",
        [offload(text("host/inputs/medium-60.json"), detail="medium")],
        config={"threshold_tokens": 500, "extract_tool": True},
    )
    case(
        "offload-v1-recipes",
        "the MIF v1 recipe library, the same at every level",
        [offload(text("host/inputs/light-60.json"), detail="light")],
        config={"threshold_tokens": 500, "recipes": "v1", "prefix": "mem", "schema_version": "1.0"},
    )
    case(
        "offload-search-hits",
        "search hits: scores go to the summary's score_range and are stripped from the lines",
        [offload(text("host/inputs/hits-40.json"), operation="search", detail="light")],
        config={"threshold_tokens": 300},
    )
    case(
        "offload-inline",
        "under the threshold, and at it exactly: inline, nothing written",
        [
            offload(RECORDS, detail="light"),
            {"call": "estimate", "args": {"text": json.dumps(RECORDS, separators=(",", ":"))}},
        ],
        config={"threshold_tokens": 1600},
    )
    case(
        "offload-disabled",
        "offloading disabled: inline however large",
        [offload(text("host/inputs/full-60.json"), detail="full")],
        config={"threshold_tokens": 100, "enabled": False},
    )
    case(
        "offload-inject",
        "inject: the budgeted text stays when under the threshold; above it the records are offloaded at medium",
        [
            offload(text("host/inputs/inject-40-records.json"), operation="inject", text_=text("host/inputs/inject-40-text.txt"), config={"threshold_tokens": 100000}),
            offload(text("host/inputs/inject-40-records.json"), operation="inject", text_=text("host/inputs/inject-40-text.txt"), config={"threshold_tokens": 500}),
        ],
    )
    case(
        "offload-cjk",
        "CJK characters count one token each",
        [offload([{"id": f"c{i}", "memory_type": "semantic", "namespace": "_semantic/日本", "title": "キャッシュの設計と運用について" * 3, "created": "2026-01-01T00:00:00Z"} for i in range(12)], detail="light")],
        config={"threshold_tokens": 400},
    )
    case(
        "offload-read-only-dir",
        "a directory without write permission: a truncated inline result, a warning, an event, no file",
        [offload(text("host/inputs/light-60.json"), detail="light")],
        config={"threshold_tokens": 500},
        setup={"mode": "0500"},
    )
    case(
        "offload-missing-dir",
        "a missing directory is created (0700) and used",
        [offload(text("host/inputs/light-60.json"), detail="light")],
        config={"threshold_tokens": 500},
        setup={"missing": True},
    )
    case(
        "offload-bad-input",
        "bad input and config: errors that name what is wrong, nothing written",
        [
            offload('{"not": "an array"}'),
            offload("[1, 2]"),
            offload("[{]"),
            offload(RECORDS, operation="inject"),
            offload(RECORDS, text_="text for a recall"),
            offload(RECORDS, config={"prefix": "no/slash"}),
            offload(RECORDS, config={"prefix": ""}),
        ],
    )

    # Recipes and estimates.
    case(
        "recipes",
        "the recipe library at each level, with a file path to quote and without",
        [
            {"call": "recipes", "args": {"detail": "light", "file": "/tmp/it's here.jsonl"}},
            {"call": "recipes", "args": {"detail": "medium", "file": None}},
            {"call": "recipes", "args": {"detail": "full", "file": None}},
            {"call": "recipes", "config": {"recipes": "v1"}, "args": {"detail": "full", "file": None}},
        ],
    )
    case(
        "estimate",
        "the token estimate: a quarter of other characters rounded up, one per CJK, kana or hangul",
        [{"call": "estimate", "args": {"text": t}} for t in ["", "a", "abcd", "abcde", "日本語", "ひらがなカタカナ", "한국어 text", "emoji 😀 é"]],
    )

    # Sweep with a fixed now.
    old = lro_file(RECORDS, timestamp=CREATED)
    case(
        "sweep",
        "sweep at a fixed now: expired files go (header time, or ULID time when the header is bad), others stay",
        [
            {"call": "sweep", "args": {"now": CREATED_MS + 3600 * 1000 - 1}},
            {"call": "sweep", "args": {"now": CREATED_MS + 3600 * 1000}},
        ],
        setup={
            "files": {
                f"atlatl-recall-{ULID_A}.jsonl": old,
                f"atlatl-search-{ULID_B}.jsonl": lro_file(RECORDS, timestamp="2026-01-01T00:30:00.000Z"),
                f"atlatl-list-{ULID_C}.jsonl": "not a header\n",
                f".atlatl-recall-{ULID_C}.jsonl.tmp": "half written",
                f"other-recall-{ULID_A}.jsonl": old,
                "notes.txt": "not ours",
            },
            "symlinks": {f"atlatl-recall-{ULID_B}.jsonl": "/etc/hostname"},
        },
    )

    # Extraction: every recipe at each level, queries, parameters, caps.
    for level in ("light", "medium", "full"):
        case(
            f"extract-recipes-{level}",
            f"offload {level} records, then run every recipe on the file",
            [offload(text(f"host/inputs/{level}-60.json"), detail=level)]
            + [extract(recipe=n) for n in range(1, 11)],
            config={"threshold_tokens": 500},
        )
    case(
        "extract-queries",
        "custom filters: per record, slurped, with parameters as variables, capped, and a recipe with parameters",
        [
            offload(text("host/inputs/full-60.json"), detail="full"),
            extract(query='select(.memory_type == $t) | .id', params={"t": "episodic"}),
            extract(query="length", slurp=True),
            extract(query="group_by(.memory_type) | map({type: .[0].memory_type, n: length})", slurp=True),
            extract(query=".", limit=200),
            extract(recipe=3, params={"keyword": "retry"}),
            extract(recipe=2, params={"prefix": "_episodic"}),
            extract(query="select(.nothing_here == 1)"),
            extract(query='.title | ascii_downcase | select(contains("cache"))'),
        ],
        config={"threshold_tokens": 500},
    )
    case(
        "extract-errors",
        "malformed requests and bad files: each error names what is wrong",
        [
            extract(path=f"<DIR>/atlatl-recall-{ULID_A}.jsonl", recipe=1, query="."),
            extract(path=f"<DIR>/atlatl-recall-{ULID_A}.jsonl"),
            extract(path=f"<DIR>/atlatl-recall-{ULID_A}.jsonl", recipe=11),
            extract(path=f"<DIR>/atlatl-recall-{ULID_A}.jsonl", recipe=6, slurp=True),
            extract(path=f"<DIR>/atlatl-recall-{ULID_A}.jsonl", recipe=3, params=["x"]),
            extract(path=f"<DIR>/atlatl-recall-{ULID_A}.jsonl", query=".title | ("),
            extract(path=f"<DIR>/atlatl-recall-{ULID_A}.jsonl", query=".title | tonumber"),
            extract(path=f"<DIR>/atlatl-recall-{ULID_A}.jsonl", query="error(\"boom\")"),
            extract(path=f"<DIR>/atlatl-recall-{ULID_A}.jsonl", query=".content | length"),
            extract(path=f"<DIR>/atlatl-recall-{ULID_B}.jsonl", query="."),
            extract(path=f"<DIR>/atlatl-search-{ULID_A}.jsonl", query="."),
            extract(path=f"<DIR>/atlatl-list-{ULID_A}.jsonl", query="."),
            extract(path="<DIR>/notes.jsonl", query="."),
            extract(path=f"<DIR>/atlatl-inject-{ULID_A}.jsonl", query=".", config={"ttl_seconds": 3600}),
        ],
        config={"ttl_seconds": CENTURY},
        setup={
            "files": {
                f"atlatl-recall-{ULID_A}.jsonl": old,
                f"atlatl-search-{ULID_A}.jsonl": header(2) + '\n{"id":"ok"}\n{"id": oops}\n',
                f"atlatl-list-{ULID_A}.jsonl": "no header here\n",
                f"atlatl-inject-{ULID_A}.jsonl": old,
                "notes.jsonl": old,
            }
        },
    )
    # See: issue 34, item 6. Error texts carry user data: they are cut to the output cap (at
    # least 256 tokens), saying how much was cut; a path that long shows its start and its end.
    case(
        "extract-error-cap",
        "error texts are capped like values: the file as an error, a long error, a long name, a long path",
        [
            offload(text("host/inputs/full-60.json"), detail="full"),
            extract(query="error(tojson)", slurp=True, limit=1),
            extract(query='error("x" * 100000)'),
            extract(query=".title | " + "a" * 5000),
            extract(path="<DIR>/" + "d" * 3000 + "/notes.jsonl", query="."),
            {"call": "call_tool", "args": {"arguments": {"file_path": "<FILE>", "query": ".", "k" * 5000: 1}}},
        ],
        config={"threshold_tokens": 500},
    )
    # Records written as jq would not print them, in lines a file could hold: CRLF endings, blank
    # lines, non-ASCII text, a raw DEL, escapes, spaces, repeated members, strings longer than
    # the scanners' 16-byte steps. `select` outputs a line as it is only when jq would print it
    # so; each output here was checked against jq 1.6.
    forms = [
        r'{"id":"a1","namespace":"_semantic/x","title":"caf\u00e9 \/ plain ascii text that runs past sixteen bytes","n":1}',
        r'{"id":"a2","namespace":"_semantic/y","title":"naïve 日本語 ünïcödé text, long enough to cross chunks","n":2.50}',
        r'{"id":"a3","namespace":"_episodic/z","title":"del \u007f raw ' + "\x7f" + r' and tab \t and quote \" end","n":-0}',
        r'{"id":"a4", "namespace": "_semantic/spaced", "title": "spaces around", "n": 1e2}',
        r'{"id":"a5","namespace":"_semantic/dup","title":"first","title":"second","n":3}',
        r'{"id":"a6","namespace":"_semantic/ok","title":"canonical \u001f line with escapes \\ \n","n":12345678901234567890}',
    ]
    case(
        "extract-line-forms",
        "record lines in every form a file may hold them: each printed as jq prints it",
        [
            extract(query='select(.namespace | startswith("_semantic"))'),
            extract(query="select(.n >= 1) | .id"),
            extract(query='select(.title | test("PLAIN|Quote"; "i")) | .id'),
            extract(query="{id, title}"),
            extract(query="[.id, .title] | @tsv"),
            extract(query="length", slurp=True),
        ],
        config={"ttl_seconds": CENTURY},
        setup={"files": {f"atlatl-recall-{ULID_A}.jsonl": header(len(forms), detail="full") + "\r\n" + "\r\n\r\n".join(forms) + "\r\n"}},
    )
    case(
        "extract-sandbox",
        "paths outside the offload directory are refused, whatever the disguise; nothing outside is read",
        [
            extract(path="<DIR>/../etc/passwd", query="."),
            extract(path="/etc/passwd", query="."),
            extract(path="etc/passwd", query="."),
            extract(path=f"<DIR>/atlatl-recall-{ULID_B}.jsonl", query="."),
            extract(path="<DIR>/escape/passwd", query="."),
            extract(path=f"<DIR>/sub/../atlatl-recall-{ULID_A}.jsonl", query=".id"),
            extract(path=f"<DIR>/atlatl-recall-{ULID_C}.jsonl", query=".id"),
        ],
        config={"ttl_seconds": CENTURY},
        setup={
            "files": {f"atlatl-recall-{ULID_A}.jsonl": old},
            "symlinks": {
                f"atlatl-recall-{ULID_B}.jsonl": "/etc/passwd",
                "escape": "/etc",
                f"atlatl-recall-{ULID_C}.jsonl": f"atlatl-recall-{ULID_A}.jsonl",
            },
        },
    )

    # The same sandbox, for links only: each host's WASI layer resolves them (Rust and Python
    # through wasmtime, Node through bindings/node/wasi.js), so the results must be the same.
    links = {f"atlatl-recall-{ulid(n)}.jsonl": target for n, target in [
        (3, "../../../../../../../../../etc/passwd"),  # relative, climbing out
        (4, f"atlatl-recall-{ulid(4)}.jsonl"),  # a loop
        (5, f"atlatl-recall-{ulid(99)}.jsonl"),  # dangling
        (6, f"atlatl-recall-{ULID_C}.jsonl"),  # a chain inside: 6 -> C -> A
        (7, "escape/passwd"),  # through a link that leaves
    ]}
    case(
        "extract-sandbox-links",
        "symbolic links are followed inside the offload directory only, in every host's WASI layer",
        [extract(path=f"<DIR>/{name}", query=".id") for name in links]
        + [extract(path=f"<DIR>/inner/atlatl-recall-{ULID_A}.jsonl", query=".id")],
        config={"ttl_seconds": CENTURY},
        setup={
            "files": {f"atlatl-recall-{ULID_A}.jsonl": old},
            "symlinks": {
                **links,
                f"atlatl-recall-{ULID_C}.jsonl": f"atlatl-recall-{ULID_A}.jsonl",
                "escape": "/etc",
                "inner": ".",
            },
        },
    )

    # query: no files.
    case(
        "query",
        "lro query: several input values, slurp, raw strings, a cap, and errors",
        [
            query(".a", '{"a": 1} {"a": [2, 3]} {"a": "x"}'),
            query("add", "1 2 3", slurp=True),
            query(".[]", '["tab\\there", "line\\nbreak"]', raw=True),
            query("range(100)", "null", limit=20),
            query(".", "{]"),
            query(".a | (", "{}"),
            query(".a + 1", '{"a": "x"}'),
            query("1e1000, -0, 3.0, 1.5e300 * 1e10", "null"),
        ],
    )

    # MCP level: every realistic tool result, then per-tool settings and extraction on a generic file.
    for folder in sorted(p for p in MCP.iterdir() if p.is_dir()):
        call = json.loads((folder / "call.json").read_text())
        case(
            f"intercept-{folder.name.replace('_', '-')}",
            f"the MCP-level interceptor on tests/cases/mcp/{folder.name}",
            [intercept(call["tool"], text(f"mcp/{folder.name}/result.json"), call.get("arguments"), call.get("meta"))],
            config={"threshold_tokens": call["threshold"]},
        )
    # See: issue 34, item 13. Records as deep as a line may nest (1,000 levels) keep their
    # structure at the MCP level in every host (the hosts' stacks differ); one level more is
    # refused, naming the record. The result is passed as text: no host re-serialises it.
    def deep_result(depth, structured=False, count=2):
        def record(i):
            chain = '{"id":%d}' % i
            for _ in range(2, depth):
                chain = '{"a":' + chain + "}"
            return '{"id":%d,"title":"deep %d","a":%s}' % (i, i, chain)
        records = "[" + ",".join(record(i) for i in range(count)) + "]"
        if structured:
            return '{"content":[],"structuredContent":{"results":%s}}' % records
        return json.dumps({"content": [{"type": "text", "text": records}]}, separators=(",", ":"))
    case(
        "intercept-deep-records",
        "records nested 1,000 levels keep their structure at the MCP level and read back; 1,001 are refused",
        [
            intercept("search_things", deep_result(1000)),
            extract(query='getpath([range(999) | "a"]) | .id'),
            intercept("search_things", deep_result(1001)),
            intercept("search_things", deep_result(1000, structured=True)),
        ],
        config={"threshold_tokens": 10, "ttl_seconds": CENTURY},
    )
    case(
        "intercept-tool-settings",
        "per-tool settings: a tool disabled, a lower threshold, chosen sections and inline keys",
        [
            intercept("search_issues", text("mcp/github_search/result.json"), config={"tools": [{"name": "search_issues", "enabled": False}]}),
            intercept("search_issues", text("mcp/github_search/result.json"), config={"threshold_tokens": 100000, "tools": [{"name": "search_issues", "threshold_tokens": 500}]}),
            intercept("search_issues", text("mcp/github_search/result.json"), config={"tools": [{"name": "search_issues", "sections": ["items"], "inline_keys": ["total_count"]}]}),
        ],
        config={"threshold_tokens": 500},
    )
    case(
        "intercept-then-extract",
        "a generic tool result offloaded, then its generated recipe and a query run on its file",
        [
            intercept("list_directory", text("mcp/directory_listing/result.json"), {"path": "/srv/app"}),
            extract(recipe=1),
            extract(query='select(.type == "file") | .name', limit=100),
            extract(query="length", slurp=True),
        ],
        config={"threshold_tokens": 500, "extract_tool": True},
    )
    case(
        "intercept-bad-input",
        "results and arguments that are not what MCP says: errors naming the field",
        [
            intercept("t", "[]"),
            intercept("t", '{"content": "text"}'),
            intercept("t", '{"content": []}', arguments="[1]"),
            intercept("t", '{"content": []}', meta="{"),
        ],
    )

    for old_case in HERE.glob("*/case.json"):
        # corpus-* cases are tests/corpus/host_cases.py's to write and remove.
        name = old_case.parent.name
        if name not in cases and name not in HAND_WRITTEN and not name.startswith("corpus-"):
            shutil.rmtree(old_case.parent)
    for name, value in cases.items():
        (HERE / name).mkdir(exist_ok=True)
        (HERE / name / "case.json").write_text(json.dumps(value, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases")


main()
