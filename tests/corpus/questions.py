#!/usr/bin/env python3
"""Compute questions and their answers for every corpus case, from the original result.

Stdlib only. For each folder tests/corpus/<case>/ this reads result.json (the bytes a
server sent), decodes the data the way a careful reader would (JSON text content,
structuredContent, a Python repr via ast.literal_eval, CSV/TSV via the csv module,
a Markdown table, NDJSON, git log text), finds the case's main collection of records
and writes tests/corpus/<case>/questions.json: a list of

    {"id": ..., "ask": {...}, "answer": ...}

with `ask` from a fixed vocabulary for a scripted agent:

    {"op": "count"}
    {"op": "count_where", "field": F, "equals": V}
    {"op": "distinct", "field": F}
    {"op": "sum", "field": F[, "round": 2]}     (sums of 2-decimal amounts are rounded to 2 decimals)
    {"op": "max", "field": F}
    {"op": "lookup", "where": {"field": F, "equals": V}, "field": G}
    {"op": "sibling", "path": P}

F and G are a record's top-level field or a dotted path into it (`_source.level`);
P is a dotted path into the decoded data outside the records. A record that lacks F
never equals V and is skipped by sum/max/distinct. Values chosen for count_where and
lookup are taken from the data, so they exist; a lookup's key is checked to be unique.

It imports nothing from capture.py or shapes.py: the answers come from the result alone.

    python3 tests/corpus/questions.py          # every case folder
    python3 tests/corpus/questions.py --check  # recompute and fail if any questions.json differs
"""

from __future__ import annotations

import ast
import csv
import io
import json
import sys
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
MISSING = object()


# --------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------

def load_result(case: str) -> dict:
    return json.loads((HERE / case / "result.json").read_bytes())


def text_of(result: dict) -> str:
    texts = [c["text"] for c in result["content"] if c.get("type") == "text"]
    assert len(texts) == 1, "expected one text content block"
    return texts[0]


def json_text(result: dict):
    """The JSON value in the text content; checked against structuredContent when that mirrors it."""
    value = json.loads(text_of(result))
    sc = result.get("structuredContent")
    if sc is not None and not (isinstance(sc, dict) and set(sc) == {"content"}):
        assert sc == value, "structuredContent differs from the text content"
    return value


def get(rec, path: str):
    cur = rec
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return MISSING
    return cur


def parse_git_log(text: str) -> list[dict]:
    """mcp-server-git's git_log text: blocks of `Commit:`, `Author:`, `Date:`, `Message:` lines."""
    assert text.startswith("Commit history:\n")
    records: list[dict] = []
    cur = None
    in_message = False
    for line in text.split("\n")[1:]:
        if line.startswith("Commit: ") and (cur is None or in_message):
            cur = {"Commit": line[len("Commit: "):]}
            records.append(cur)
            in_message = False
        elif cur is not None and not in_message and ": " in line:
            key, val = line.split(": ", 1)
            cur[key] = val
            if key == "Message":
                in_message = True
        elif in_message:
            cur["Message"] += "\n" + line
    for r in records:
        r["Message"] = r["Message"].rstrip("\n")
    return records


def parse_markdown_table(text: str) -> list[dict]:
    lines = [ln for ln in text.split("\n") if ln.startswith("|")]
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    header, sep, body = cells[0], cells[1], cells[2:]
    assert all(set(c) <= set("-:") for c in sep)
    return [dict(zip(header, row, strict=True)) for row in body]


def lines_of(text: str) -> list[str]:
    return [ln for ln in text.split("\n") if ln.strip()]


# --------------------------------------------------------------------------
# Answering
# --------------------------------------------------------------------------

def num(v):
    """A number from a JSON number or a numeric string (text shapes)."""
    if isinstance(v, bool):
        raise TypeError("bool is not a number")
    if isinstance(v, (int, float)):
        return v
    s = str(v)
    try:
        return int(s)
    except ValueError:
        return float(s)


def answer(ask: dict, root, records: list) -> object:
    op = ask["op"]
    if op == "count":
        return len(records)
    if op == "count_where":
        return sum(1 for r in records if get(r, ask["field"]) == ask["equals"]
                   and type(get(r, ask["field"])) is type(ask["equals"]))
    if op == "distinct":
        vals = [get(r, ask["field"]) for r in records]
        return len({json.dumps(v, sort_keys=True) for v in vals if v is not MISSING})
    if op in ("sum", "max"):
        vals = [get(r, ask["field"]) for r in records]
        vals = [num(v) for v in vals if v is not MISSING and v is not None]
        if op == "max":
            return max(vals)
        if all(isinstance(v, int) for v in vals):
            return sum(vals)
        total = sum(Decimal(repr(v)) if isinstance(v, float) else Decimal(v) for v in vals)
        return float(round(total, ask["round"]))
    if op == "lookup":
        w = ask["where"]
        hits = [r for r in records if get(r, w["field"]) == w["equals"]
                and type(get(r, w["field"])) is type(w["equals"])]
        assert len(hits) == 1, f"lookup key {w} matches {len(hits)} records"
        v = get(hits[0], ask["field"])
        assert v is not MISSING
        return v
    if op == "sibling":
        v = get(root, ask["path"])
        assert v is not MISSING, ask
        return v
    raise ValueError(op)


def pick(records: list, field: str, index: int):
    """The value of `field` in records[index], to ask about a value that exists."""
    v = get(records[index], field)
    assert v is not MISSING and v is not None
    return v


def Q(op: str, **kw) -> dict:
    return {"op": op, **kw}


def cw(field, value):
    return Q("count_where", field=field, equals=value)


def lk(key_field, key, field):
    return Q("lookup", where={"field": key_field, "equals": key}, field=field)


# --------------------------------------------------------------------------
# Cases: how to decode each one, where its records are, and what to ask
# --------------------------------------------------------------------------

def fs_directory_tree(res):
    root = json_text(res)  # a JSON array of top-level entries; structuredContent = {"content": same text}
    assert json.loads(res["structuredContent"]["content"]) == root
    recs = root
    return root, recs, [Q("count"), cw("type", "directory"), Q("distinct", field="type"),
                        lk("name", "README.md", "type")]


def fs_list_directory(res):
    lines = lines_of(text_of(res))
    assert all(ln.startswith(("[FILE] ", "[DIR] ")) for ln in lines)
    return None, lines, [Q("count")]


def fs_search_files(res):
    return None, lines_of(text_of(res)), [Q("count")]


def memory_read_graph(res):
    root = json_text(res)
    assert res["structuredContent"] == root
    recs = root["entities"]
    return root, recs, [Q("count"), cw("entityType", "person"), Q("distinct", field="entityType"),
                        lk("name", pick(recs, "name", 137), "entityType")]


def everything_structured_content(res):
    root = res["structuredContent"]
    assert json.loads(text_of(res)) == root
    return root, [], [Q("sibling", path="temperature"), Q("sibling", path="conditions"),
                      Q("sibling", path="humidity")]


def everything_resource_links(res):
    recs = res["content"]  # one text item, then resource_link items
    return res, recs, [Q("count"), cw("type", "resource_link"),
                       lk("name", pick(recs, "name", 4), "uri")]


def git_log(res):
    recs = parse_git_log(text_of(res))
    return None, recs, [Q("count"), cw("Author", "Ada Lovelace"), Q("distinct", field="Author"),
                        lk("Commit", pick(recs, "Commit", 250), "Author"),
                        lk("Commit", pick(recs, "Commit", 123), "Date")]


def dbhub_execute_sql(res):
    root = json_text(res)
    recs = root["data"]["rows"]
    return root, recs, [Q("count"), cw("status", None), Q("sum", field="amount", round=2),
                        Q("max", field="amount"), lk("id", 4242, "ref"),
                        Q("sibling", path="data.count")]


def sqlite_read_query(res):
    recs = ast.literal_eval(text_of(res))
    return None, recs, [Q("count"), cw("status", "refunded"), Q("sum", field="amount", round=2),
                        Q("max", field="amount"), lk("id", 4242, "ref"), lk("id", 7, "email")]


def es_search(res):
    root = json_text(res)
    recs = root["hits"]["hits"]
    return root, recs, [Q("count"), cw("_source.level", "ERROR"), Q("distinct", field="_source.service"),
                        Q("max", field="_source.duration_ms"),
                        lk("_id", pick(recs, "_id", 617), "_source.message"),
                        Q("sibling", path="hits.total.value")]


def graphql_issues(res):
    root = json_text(res)
    recs = root["data"]["repository"]["issues"]["edges"]
    return root, recs, [Q("count"), cw("node.state", "OPEN"), Q("distinct", field="node.author.login"),
                        Q("sum", field="node.comments.totalCount"),
                        lk("node.number", pick(recs, "node.number", 333), "node.title"),
                        Q("sibling", path="data.repository.issues.pageInfo.endCursor")]


def k8s_pods(res):
    root = json_text(res)
    recs = root["items"]
    return root, recs, [Q("count"), cw("status.phase", "Failed"), Q("distinct", field="metadata.namespace"),
                        Q("sum", field="status.restartCount"),
                        lk("metadata.name", pick(recs, "metadata.name", 404), "spec.nodeName"),
                        Q("sibling", path="metadata.resourceVersion")]


def slack_history(res):
    root = json_text(res)
    recs = root["messages"]
    return root, recs, [Q("count"), cw("subtype", "channel_join"), Q("distinct", field="user"),
                        Q("sum", field="reply_count"), lk("ts", pick(recs, "ts", 999), "text"),
                        Q("sibling", path="response_metadata.next_cursor")]


def jsonapi_articles(res):
    root = json_text(res)
    recs = root["data"]
    return root, recs, [Q("count"), cw("attributes.status", "draft"),
                        Q("distinct", field="relationships.author.data.id"),
                        Q("sum", field="attributes.word_count"), lk("id", "42", "attributes.title"),
                        Q("sibling", path="meta.total")]


def keyed_files(res):
    root = json_text(res)
    recs = list(root["files"].values())  # the records are the values of the `files` object
    return root, recs, [Q("count"), cw("lang", "Rust"), Q("distinct", field="lang"), Q("sum", field="size"),
                        Q("max", field="lines"), Q("sibling", path="total_files")]


def envelope_exact_numbers(res):
    root = json_text(res)
    recs = root["data"]["rows"]
    return root, recs, [Q("count"), Q("sum", field="price", round=2), Q("max", field="score"),
                        lk("id", 250, "ledger_id"), lk("id", 40, "delta"), Q("sibling", path="total")]


def text_csv(res):
    recs = list(csv.DictReader(io.StringIO(text_of(res))))
    return None, recs, [Q("count"), cw("plan", "pro"), Q("distinct", field="city"),
                        Q("sum", field="amount", round=2), lk("id", "9", "name"), lk("id", "42", "name")]


def text_tsv(res):
    recs = list(csv.DictReader(io.StringIO(text_of(res)), delimiter="\t"))
    return None, recs, [Q("count"), cw("city", pick(recs, "city", 10)), Q("sum", field="amount", round=2),
                        Q("max", field="amount"), lk("id", "2718", "name")]


def text_markdown_table(res):
    recs = parse_markdown_table(text_of(res))
    return None, recs, [Q("count"), cw("plan", "team"), Q("distinct", field="city"),
                        Q("sum", field="amount", round=2), lk("id", "1001", "name")]


def text_ndjson(res):
    recs = [json.loads(ln) for ln in lines_of(text_of(res))]
    return None, recs, [Q("count"), cw("event", "purchase"), Q("distinct", field="user_id"),
                        Q("sum", field="total", round=2), Q("max", field="latency_ms"),
                        lk("seq", 1234, "event")]


CASES = {
    "fs-directory-tree": fs_directory_tree,
    "fs-list-directory": fs_list_directory,
    "fs-search-files": fs_search_files,
    "memory-read-graph": memory_read_graph,
    "everything-structured-content": everything_structured_content,
    "everything-resource-links": everything_resource_links,
    "git-log": git_log,
    "dbhub-execute-sql": dbhub_execute_sql,
    "sqlite-read-query": sqlite_read_query,
    "es-search": es_search,
    "graphql-issues": graphql_issues,
    "k8s-pods": k8s_pods,
    "slack-history": slack_history,
    "jsonapi-articles": jsonapi_articles,
    "keyed-files": keyed_files,
    "envelope-exact-numbers": envelope_exact_numbers,
    "text-csv": text_csv,
    "text-tsv": text_tsv,
    "text-markdown-table": text_markdown_table,
    "text-ndjson": text_ndjson,
}

ID_PART = {"count": lambda a: "count",
           "count_where": lambda a: f"count-{a['field']}",
           "distinct": lambda a: f"distinct-{a['field']}",
           "sum": lambda a: f"sum-{a['field']}",
           "max": lambda a: f"max-{a['field']}",
           "lookup": lambda a: f"lookup-{a['field']}",
           "sibling": lambda a: f"sibling-{a['path']}"}


def build(case: str) -> list[dict]:
    res = load_result(case)
    root, recs, asks = CASES[case](res)
    out = []
    for n, ask in enumerate(asks, 1):
        ans = answer(ask, root, recs)
        if ask["op"] == "sum" and "round" not in ask and isinstance(ans, float):
            raise AssertionError(f"{case}: a float sum needs a round key")
        out.append({"id": f"q{n}-{ID_PART[ask['op']](ask)}", "ask": ask, "answer": ans})
    return out


def dump(qs: list[dict]) -> str:
    return json.dumps(qs, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    check = "--check" in sys.argv[1:]
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    folders = sorted(p.name for p in HERE.iterdir() if (p / "result.json").exists())
    unknown = [f for f in folders if f not in CASES]
    if unknown:
        print(f"no questions defined for: {unknown}", file=sys.stderr)
        return 1
    bad = 0
    for case in names or folders:
        text = dump(build(case))
        path = HERE / case / "questions.json"
        if check:
            if not path.exists() or path.read_text() != text:
                print(f"{case}: questions.json differs from a fresh computation", file=sys.stderr)
                bad += 1
        else:
            path.write_text(text)
            print(f"{case}: {len(json.loads(text))} questions", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
