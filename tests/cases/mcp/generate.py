"""Writes the MCP-level cases in this folder: realistic tool results, deterministic.

Each case is a folder with call.json (tool, arguments, meta, threshold), result.json (the tool's
CallToolResult) and expected.json (what the interceptor must do, checked structurally by
cli/tests/all/mcp_cases/). Run `python3 tests/cases/mcp/generate.py` after changing it.
"""

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
rng = random.Random(7)
WORDS = "cache retry index deploy auth queue billing search backup latency quota schema timeout memory leak crash".split()


def sentence(n):
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def write(name, call, result, expected):
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    for file, value in (("call.json", call), ("result.json", result), ("expected.json", expected)):
        (folder / file).write_text(json.dumps(value, indent=1, ensure_ascii=False) + "\n")


def text_result(value, structured=True, **extra):
    result = {"content": [{"type": "text", "text": json.dumps(value, separators=(",", ":"))}]}
    if structured:
        result["structuredContent"] = value
    result.update(extra)
    return result


# A GitHub-style issue search: scalars inline, one large array section, optional and mixed fields.
items = []
for i in range(40):
    state = rng.choice(["open", "open", "closed"])
    item = {
        "id": 900000 + i,
        "number": 1200 + i,
        "title": f"{sentence(5)[:-1]} (#{1200 + i})",
        "state": state,
        "user": {"login": rng.choice(["ana", "bo", "chen", "dee"])},
        "labels": [{"name": rng.choice(["bug", "perf", "docs"])}],
        "comments": rng.randrange(30),
        "created_at": f"2026-0{1 + i % 9}-1{i % 10}T08:00:00Z",
        "body": sentence(25) if i % 7 else None,
    }
    if state == "closed":
        item["closed_at"] = "2026-10-01T00:00:00Z"
    items.append(item)
search = {"total_count": 1432, "incomplete_results": False, "items": items}
write(
    "github_search",
    {"tool": "search_issues", "arguments": {"q": "is:issue label:bug"}, "threshold": 500},
    text_result(search, _meta={"trace": "t-1"}, resultType="complete"),
    {
        "outcome": "offloaded",
        "kind": "generic",
        "inline": {"total_count": 1432, "incomplete_results": False},
        "sections": {
            "items": {
                "count": 40,
                "shape": "elements",
                "required": ["id", "number", "title", "state", "user", "labels", "comments", "created_at", "body"],
                "types": {"id": "integer", "body": ["string", "null"], "closed_at": "string", "user": "object", "labels": "array"},
            }
        },
        "recipes": ["count_items", "first_10_items", "count_by_state_items", "where_state_items"],
    },
)

# The same result, asked for by a client that is itself an LRO proxy: untouched.
write(
    "proxied_search",
    {
        "tool": "search_issues",
        "arguments": {},
        "threshold": 500,
        "meta": {"io.modelcontextprotocol/clientCapabilities": {"experimental": {"lro": {"proxy": True}}}},
    },
    text_result(search),
    {"outcome": "unchanged", "reason": "proxied"},
)

# A directory listing: a top-level JSON array in the text content, no structured content.
entries = []
for i in range(80):
    kind = rng.choice(["file", "file", "file", "dir", "symlink"])
    entry = {"name": f"{rng.choice(WORDS)}_{i}.{'rs' if kind == 'file' else 'd'}", "type": kind, "modified": f"2026-11-{1 + i % 28:02d}T12:00:00Z"}
    if kind == "file":
        entry["size"] = rng.randrange(100, 90000)
    entries.append(entry)
write(
    "directory_listing",
    {"tool": "list_directory", "arguments": {"path": "/srv/app"}, "threshold": 500},
    text_result(entries, structured=False),
    {
        "outcome": "offloaded",
        "kind": "generic",
        "inline": {},
        "sections": {"results": {"count": 80, "shape": "elements", "required": ["name", "type", "modified"], "types": {"size": "integer", "name": "string"}}},
        "recipes": ["count_results", "first_10_results", "count_by_type_results", "where_type_results", "top_10_by_modified_results"],
    },
)

# SQL rows: a table (rows as arrays beside their column names), a row count inline.
rows = [[i, rng.choice(["ana", "bo", "chen"]), f"user{i}@example.com", round(rng.random() * 1000, 2), None if i % 5 == 0 else "paid"] for i in range(60)]
sql = {"columns": ["id", "name", "email", "amount", "status"], "rows": rows, "row_count": 60}
write(
    "sql_rows",
    {"tool": "query", "arguments": {"sql": "select * from invoices"}, "threshold": 400},
    text_result(sql),
    {
        "outcome": "offloaded",
        "kind": "generic",
        "inline": {"columns": ["id", "name", "email", "amount", "status"], "row_count": 60},
        "sections": {"rows": {"count": 60, "shape": "table", "types": {"id": "integer", "amount": "number", "status": ["string", "null"]}}},
        "recipes": ["count_rows", "first_10_rows", "count_by_name_rows", "where_name_rows", "top_10_by_amount_rows"],
    },
)

# A log tail: plain text, one record per line.
levels = ["INFO", "INFO", "WARN", "ERROR"]
log = "\n".join(f"2026-11-21T10:{i // 60:02d}:{i % 60:02d}Z {rng.choice(levels)} {sentence(6)}" for i in range(150))
write(
    "log_tail",
    {"tool": "tail_logs", "arguments": {"lines": 150}, "threshold": 500},
    {"content": [{"type": "text", "text": log}]},
    {
        "outcome": "offloaded",
        "kind": "generic",
        "inline": {},
        "sections": {"lines": {"count": 150, "required": ["n", "text"], "types": {"n": "integer", "text": "string"}}},
        "recipes": ["count_lines", "first_10_lines", "top_10_by_text_lines", "search_text_lines"],
    },
)

# A memory recall as an MCP server returns it: record level, the spec's descriptor.
hits = []
for i in range(30):
    ns = rng.choice(["_semantic/decisions", "_episodic/incidents", "_procedural/runbooks"])
    memory = {"id": f"m-{i}", "memory_type": ns.split("/")[0][1:], "namespace": ns, "title": sentence(4), "tags": ["TAG"] if i % 4 == 0 else [], "created": f"2026-0{1 + i % 9}-01T00:00:00Z", "status": "active"}
    hits.append({"memory": memory, "score": round(0.99 - i * 0.02, 4)})
write(
    "memory_recall",
    {"tool": "recall_memories", "arguments": {"query": "caching", "detail": "light"}, "threshold": 400},
    text_result({"memories": hits}, _meta={"request": 7}),
    {"outcome": "offloaded", "kind": "memory", "count": 30, "detail": "light"},
)

# An error result: never offloaded, however large.
write(
    "error_result",
    {"tool": "search_issues", "arguments": {}, "threshold": 100},
    {"content": [{"type": "text", "text": "GitHub API error: " + sentence(400)}], "isError": True},
    {"outcome": "unchanged", "reason": "error-result"},
)

# An image with a large caption: the caption is offloaded, the image forwarded as sent.
write(
    "image_result",
    {"tool": "render_chart", "arguments": {}, "threshold": 100},
    {"content": [{"type": "image", "data": "iVBORw0KGgo" + "A" * 2000, "mimeType": "image/png"}, {"type": "text", "text": sentence(300)}]},
    {
        "outcome": "offloaded",
        "kind": "generic",
        "inline": {},
        "sections": {"lines": {"count": 1, "shape": "lines"}},
        "recipes": ["count_lines", "first_10_lines", "search_text_lines"],
    },
)

# A directory listing as the reference server-filesystem sends it: plain text lines, repeated as
# a single-key structured wrapper `{"content": "<text>"}`. The wrapper is unwrapped to the text,
# one record per line (not one record holding the whole text).
listing = "\n".join(f"[{'DIR' if i % 6 == 0 else 'FILE'}] {WORDS[i % len(WORDS)]}_{i}{'' if i % 6 == 0 else '.txt'}" for i in range(120))
write(
    "filesystem_listing",
    {"tool": "list_directory", "arguments": {"path": "/srv/data"}, "threshold": 300},
    {"content": [{"type": "text", "text": listing}], "structuredContent": {"content": listing}},
    {
        "outcome": "offloaded",
        "kind": "generic",
        "inline": {},
        "sections": {"lines": {"count": 120, "required": ["n", "text"], "types": {"n": "integer", "text": "string"}}},
        "recipes": ["count_lines", "first_10_lines"],
    },
)

# Only an image, however large: nothing to offload.
write(
    "image_only",
    {"tool": "render_chart", "arguments": {}, "threshold": 100},
    {"content": [{"type": "image", "data": "iVBORw0KGgo" + "A" * 4000, "mimeType": "image/png"}]},
    {"outcome": "unchanged", "reason": "non-text-content"},
)
