#!/usr/bin/env python3
"""Write synthetic corpus cases for common API shapes.

Stdlib only, deterministic (every case has its own fixed seed), so running it
again writes the same bytes. Each case is a folder tests/corpus/<case>/ with
call.json and result.json, the result being an MCP CallToolResult the way SDKs
send it: {"content":[{"type":"text","text": <JSON or other text>}]}, some also
with "structuredContent" holding the same value.

    python3 tests/corpus/shapes.py            # all synthetic cases
    python3 tests/corpus/shapes.py es-search  # some of them
"""

from __future__ import annotations

import base64
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
THRESHOLD = 1600
SERVER = "synthetic (tests/corpus/shapes.py)"


def compact(v) -> str:
    """JSON as a Node server's JSON.stringify(v) writes it (no spaces, UTF-8)."""
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def wrap(text: str, structured_raw: str | None = None) -> str:
    """A CallToolResult as compact JSON text. `structured_raw` is JSON text inserted as is."""
    out = '{"content":[{"type":"text","text":' + json.dumps(text, ensure_ascii=False) + "}]"
    if structured_raw is not None:
        out += ',"structuredContent":' + structured_raw
    return out + "}"


def save(case: str, tool: str, arguments: dict, result_text: str) -> None:
    json.loads(result_text)  # must be valid JSON
    d = HERE / case
    d.mkdir(parents=True, exist_ok=True)
    call = {"tool": tool, "arguments": arguments, "server": SERVER, "threshold": THRESHOLD}
    (d / "call.json").write_text(json.dumps(call, indent=2) + "\n")
    (d / "result.json").write_bytes(result_text.encode("utf-8"))
    print(f"{case}: {len(result_text.encode()):,} bytes", file=sys.stderr)


def iso(rng_or_ts, ms: bool = False) -> str:
    import time
    ts = rng_or_ts
    s = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(ts)))
    if ms:
        s += f".{int(round((ts - int(ts)) * 1000)) % 1000:03d}"
    return s + "Z"


WORDS = ("request timeout cache miss retry upstream token refresh payload schema index shard "
         "replica queue worker lease commit rollback snapshot metric alert quota limit user "
         "session cookie header body stream chunk buffer socket handshake certificate").split()
FIRST = ["Ana", "Bruno", "Chloé", "Dmitri", "Eun-ji", "Fatima", "Giorgio", "Hana", "Ivan", "Jürgen",
         "Kenji", "Lucía", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Søren", "Tariq"]
LAST = ["Álvarez", "Becker", "Chen", "Dubois", "Eriksen", "Fischer", "García", "Hoffmann", "Ivanova",
        "Jensen", "Kowalski", "Larsen", "Müller", "Nakamura", "O'Brien", "Petrov", "Rossi", "Silva"]


def sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return words[0].capitalize() + " " + " ".join(words[1:])


def hexid(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def b64id(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for _ in range(n))


# --------------------------------------------------------------------------
# JSON shapes
# --------------------------------------------------------------------------

def es_search() -> None:
    """Elasticsearch search response, 1,000 hits of log documents; text content only."""
    rng = random.Random(101)
    services = ["api-gateway", "auth", "billing", "catalog", "checkout", "search",
                "inventory", "notifications", "payments", "users", "reports", "shipping"]
    levels = ["INFO"] * 6 + ["WARN"] * 2 + ["ERROR", "DEBUG"]
    methods = ["GET", "GET", "GET", "POST", "PUT", "DELETE"]
    hits = []
    score = 9.871234
    t = 1717200000.0
    for i in range(1000):
        score = round(score - rng.random() * 0.005, 6)
        t += rng.random() * 30
        level = rng.choice(levels)
        status = 200 if level in ("INFO", "DEBUG") else rng.choice([400, 404, 429, 500, 502, 503])
        hits.append({
            "_index": f"logs-2024.06.{1 + int((t - 1717200000) // 86400):02d}",
            "_id": b64id(rng, 20),
            "_score": score,
            "_source": {
                "@timestamp": iso(t, ms=True),
                "level": level,
                "service": rng.choice(services),
                "host": {"name": f"node-{rng.randrange(1, 25):02d}"},
                "http": {"method": rng.choice(methods), "status": status,
                         "path": f"/v1/{rng.choice(WORDS)}/{rng.randrange(1, 5000)}"},
                "duration_ms": round(rng.random() * 2500, 3),
                "bytes": rng.randrange(120, 250000),
                "message": sentence(rng, rng.randrange(4, 10)),
                "trace_id": hexid(rng, 32),
            },
        })
    body = {
        "took": 37,
        "timed_out": False,
        "_shards": {"total": 5, "successful": 5, "skipped": 0, "failed": 0},
        "hits": {"total": {"value": 48213, "relation": "eq"}, "max_score": hits[0]["_score"], "hits": hits},
    }
    save("es-search", "search", {"index": "logs-*", "size": 1000, "query": {"match": {"message": "timeout"}}},
         wrap(compact(body)))


def graphql_issues() -> None:
    """GitHub-like GraphQL connection with 600 edges; text and structuredContent."""
    rng = random.Random(202)
    logins = [f"{f.lower().replace('é', 'e').replace('ü', 'u').replace('ø', 'o')}-{n}"
              for f, n in zip(FIRST, range(20))] + ["dependabot[bot]", "octocat"]
    labels = ["bug", "enhancement", "documentation", "good first issue", "help wanted",
              "question", "performance", "security"]
    edges = []
    number = 4800
    t = 1680000000
    for i in range(600):
        number -= rng.randrange(1, 4)
        t += rng.randrange(600, 86400)
        state = "OPEN" if rng.random() < 0.35 else "CLOSED"
        cursor = base64.b64encode(f"cursor:v2:{number * 7919}".encode()).decode()
        node = {
            "number": number,
            "title": sentence(rng, rng.randrange(3, 9)),
            "state": state,
            "author": {"login": rng.choice(logins)},
            "createdAt": iso(t),
            "closedAt": None if state == "OPEN" else iso(t + rng.randrange(3600, 30 * 86400)),
            "comments": {"totalCount": rng.choice([0, 0, 1, 2, 3, 5, 8, 13, 21])},
            "labels": {"nodes": [{"name": n} for n in rng.sample(labels, rng.randrange(0, 3))]},
        }
        edges.append({"cursor": cursor, "node": node})
    value = {"data": {"repository": {"issues": {
        "totalCount": 2417,
        "pageInfo": {"hasNextPage": True, "endCursor": edges[-1]["cursor"]},
        "edges": edges,
    }}}}
    text = compact(value)
    save("graphql-issues", "graphql_query",
         {"query": "query { repository(owner:\"acme\", name:\"widgets\") { issues(first: 600) { ... } } }"},
         wrap(text, structured_raw=text))


def k8s_pods() -> None:
    """Kubernetes PodList, 500 pods, pretty-printed like kubectl -o json; text content only."""
    rng = random.Random(303)
    namespaces = ["default", "kube-system", "monitoring", "payments", "search", "ingress"]
    apps = ["api", "worker", "web", "cron", "cache", "db-proxy", "exporter", "gateway"]
    phases = ["Running"] * 8 + ["Pending", "Succeeded", "Failed"]
    items = []
    t = 1719000000
    for i in range(500):
        ns = rng.choice(namespaces)
        app = rng.choice(apps)
        name = f"{app}-{hexid(rng, 10)}-{b64id(rng, 5).lower().replace('-', 'x').replace('_', 'z')}"
        phase = rng.choice(phases)
        t += rng.randrange(5, 4000)
        restarts = rng.choice([0, 0, 0, 0, 1, 2, 5, 17])
        items.append({
            "metadata": {
                "name": name,
                "namespace": ns,
                "uid": f"{hexid(rng, 8)}-{hexid(rng, 4)}-{hexid(rng, 4)}-{hexid(rng, 4)}-{hexid(rng, 12)}",
                "resourceVersion": str(rng.randrange(100000, 9999999)),
                "creationTimestamp": iso(t),
                "labels": {"app": app, "pod-template-hash": name.split("-")[-2]},
            },
            "spec": {
                "nodeName": f"ip-10-0-{rng.randrange(0, 8)}-{rng.randrange(2, 254)}.ec2.internal",
                "priority": rng.choice([0, 0, 1000, 2000000000]),
                "containers": [{
                    "name": app,
                    "image": f"registry.example.com/{ns}/{app}:1.{rng.randrange(0, 30)}.{rng.randrange(0, 10)}",
                    "resources": {"requests": {"cpu": rng.choice(["100m", "250m", "500m", "1"]),
                                               "memory": rng.choice(["128Mi", "256Mi", "1Gi"])}},
                }],
            },
            "status": {
                "phase": phase,
                "podIP": f"10.1.{rng.randrange(0, 255)}.{rng.randrange(1, 255)}",
                "startTime": iso(t + 3),
                "restartCount": restarts,
                "containerStatuses": [{"name": app, "ready": phase == "Running", "restartCount": restarts}],
            },
        })
    value = {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "88123457"}, "items": items}
    save("k8s-pods", "kubectl_get", {"resource": "pods", "allNamespaces": True, "output": "json"},
         wrap(json.dumps(value, indent=4, ensure_ascii=False)))


def slack_history() -> None:
    """Slack conversations.history, 1,500 messages with a cursor; text and structuredContent."""
    rng = random.Random(404)
    users = [f"U0{b64id(rng, 8).upper().replace('-', 'Q').replace('_', 'Z')}" for _ in range(25)]
    msgs = []
    ts = 1717171717.0
    for i in range(1500):
        ts -= rng.randrange(5, 900) + rng.random()
        m = {"type": "message", "user": rng.choice(users[: 5 + i % 20]), "text": sentence(rng, rng.randrange(3, 16)),
             "ts": f"{ts:.6f}"}
        r = rng.random()
        if r < 0.04:
            m["subtype"] = "channel_join"
            m["text"] = f"<@{m['user']}> has joined the channel"
        elif r < 0.20:
            m["thread_ts"] = m["ts"]
            m["reply_count"] = rng.randrange(1, 40)
            m["reply_users_count"] = rng.randrange(1, 6)
            m["latest_reply"] = f"{ts + rng.randrange(60, 7200):.6f}"
        if rng.random() < 0.15:
            m["reactions"] = [{"name": rng.choice(["thumbsup", "eyes", "tada", "white_check_mark"]),
                               "users": rng.sample(users, 2), "count": 2}]
        msgs.append(m)
    value = {"ok": True, "messages": msgs, "has_more": True, "pin_count": 3,
             "channel_actions_ts": None, "channel_actions_count": 0,
             "response_metadata": {"next_cursor": "bmV4dF90czoxNjk5OTk5OTk5MDAwMTAw"}}
    text = json.dumps(value, ensure_ascii=False)  # Python SDK style: ", " and ": " separators
    save("slack-history", "conversations_history", {"channel": "C0123ABCD", "limit": 1500},
         wrap(text, structured_raw=text))


def jsonapi_articles() -> None:
    """JSON:API document: 500 articles with relationships, included people and comments."""
    rng = random.Random(505)
    people = [{"type": "people", "id": str(900 + i),
               "attributes": {"name": f"{FIRST[i % 20]} {LAST[(i * 7) % 18]}", "twitter": f"@user{900 + i}"}}
              for i in range(40)]
    data, comments = [], []
    cid = 5000
    for i in range(500):
        aid = str(i + 1)
        author = rng.choice(people)
        cmts = []
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            cid += 1
            cmts.append({"type": "comments", "id": str(cid)})
            comments.append({"type": "comments", "id": str(cid),
                             "attributes": {"body": sentence(rng, rng.randrange(4, 12))},
                             "relationships": {"author": {"data": {"type": "people",
                                                                   "id": rng.choice(people)["id"]}}}})
        data.append({
            "type": "articles", "id": aid,
            "attributes": {
                "title": sentence(rng, rng.randrange(3, 8)),
                "status": rng.choice(["published", "published", "published", "draft", "archived"]),
                "word_count": rng.randrange(150, 4000),
                "created": iso(1600000000 + i * 43200 + rng.randrange(0, 40000)),
            },
            "relationships": {
                "author": {"links": {"related": f"/articles/{aid}/author"},
                           "data": {"type": "people", "id": author["id"]}},
                "comments": {"links": {"related": f"/articles/{aid}/comments"}, "data": cmts},
            },
            "links": {"self": f"/articles/{aid}"},
        })
    value = {
        "jsonapi": {"version": "1.1"},
        "data": data,
        "included": people + comments,
        "meta": {"total": 1873, "page": {"number": 1, "size": 500}},
        "links": {"self": "/articles?page[number]=1&page[size]=500",
                  "next": "/articles?page[number]=2&page[size]=500",
                  "last": "/articles?page[number]=4&page[size]=500"},
    }
    save("jsonapi-articles", "list_articles", {"page": {"number": 1, "size": 500}, "include": "author,comments"},
         wrap(compact(value)))


def keyed_files() -> None:
    """A large object keyed by file name (2,000 entries); text content only."""
    rng = random.Random(606)
    langs = {"rs": "Rust", "py": "Python", "ts": "TypeScript", "md": "Markdown", "toml": "TOML", "json": "JSON"}
    dirs = ["src", "src/net", "src/db", "src/cli", "tests", "docs", "scripts", "crates/core/src", "crates/wasm/src"]
    files = {}
    while len(files) < 2000:
        ext = rng.choice(list(langs) + ["rs", "rs", "py", "ts"])
        path = f"{rng.choice(dirs)}/{rng.choice(WORDS)}_{rng.choice(WORDS)}.{ext}"
        if path in files:
            continue
        lines = rng.randrange(3, 2500)
        files[path] = {"size": lines * rng.randrange(18, 60), "lines": lines, "lang": langs[ext]}
    value = {"root": "/home/dev/widgets", "generated_at": "2024-06-01T12:00:00Z",
             "total_files": len(files), "files": files}
    save("keyed-files", "code_stats", {"path": "/home/dev/widgets"}, wrap(json.dumps(value, indent=2)))


def envelope_exact_numbers() -> None:
    """{"success":true,"data":{"rows":[...]},"total":N}, hand-built text so number spellings survive.

    Rows carry numbers spelled 123456789012345678901234567890, 1E+2, -0.0 and 1.50 (and
    other trailing zeros); both the text content and structuredContent hold the same bytes.
    """
    rng = random.Random(707)
    rows = []
    n = 1200
    for i in range(1, n + 1):
        cents = rng.randrange(1, 100000)
        price = f"{cents // 100}.{cents % 100:02d}"  # always two decimals: 1.50, 20.00
        if i % 97 == 0:
            price = "1.50"
        big = "123456789012345678901234567890" if i % 250 == 0 else str(rng.randrange(10**17, 10**18))
        score = "1E+2" if i % 50 == 0 else f"{rng.randrange(0, 100)}.{rng.randrange(0, 10)}"
        delta = "-0.0" if i % 40 == 0 else f"{rng.choice(['-', ''])}{rng.randrange(0, 50)}.{rng.randrange(0, 100):02d}"
        qty = rng.randrange(0, 500)
        sku = f"SKU-{i:05d}"
        region = rng.choice(["eu-west", "us-east", "ap-south", "sa-east"])
        rows.append('{"id":%d,"sku":"%s","region":"%s","qty":%d,"price":%s,"delta":%s,"score":%s,"ledger_id":%s}'
                    % (i, sku, region, qty, price, delta, score, big))
    text = '{"success":true,"data":{"rows":[' + ",".join(rows) + ']},"total":%d}' % n
    save("envelope-exact-numbers", "query_ledger", {"limit": n}, wrap(text, structured_raw=text))


# --------------------------------------------------------------------------
# Text shapes
# --------------------------------------------------------------------------

def _people_rows(rng: random.Random, n: int):
    cities = ["Berlin", "Lisbon", "Osaka", "Toronto", "Nairobi", "Lima", "Oslo", "Seoul"]
    for i in range(1, n + 1):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        yield {
            "id": str(i),
            "name": f"{last}, {first}" if i % 9 == 0 else f"{first} {last}",
            "city": rng.choice(cities),
            "plan": rng.choice(["free", "free", "pro", "team", "enterprise"]),
            "amount": f"{rng.randrange(0, 50000) / 100:.2f}",
            "signup": iso(1577836800 + i * 7919 * 3),
        }


def text_csv() -> None:
    """CSV with a header; some names hold a comma (quoted) and one a double quote."""
    import csv
    import io
    rng = random.Random(808)
    buf = io.StringIO()
    rows = list(_people_rows(rng, 3000))
    rows[41]["name"] = 'Dwayne "The Rock" Johnson'
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    save("text-csv", "export_customers", {"format": "csv"}, wrap(buf.getvalue()))


def text_tsv() -> None:
    rng = random.Random(909)
    rows = list(_people_rows(rng, 3000))
    lines = ["\t".join(rows[0])] + ["\t".join(r.values()) for r in rows]
    save("text-tsv", "export_customers", {"format": "tsv"}, wrap("\n".join(lines) + "\n"))


def text_markdown_table() -> None:
    rng = random.Random(1010)
    rows = list(_people_rows(rng, 1500))
    cols = list(rows[0])
    out = ["Found 1500 customers matching your filter (showing all of them):", "",
           "| " + " | ".join(cols) + " |", "|" + "|".join(["---"] * len(cols)) + "|"]
    out += ["| " + " | ".join(r[c] for c in cols) + " |" for r in rows]
    save("text-markdown-table", "search_customers", {"query": "*", "format": "markdown"},
         wrap("\n".join(out) + "\n"))


def text_ndjson() -> None:
    rng = random.Random(1111)
    events = ["login", "logout", "purchase", "view", "search", "error"]
    lines = []
    t = 1719800000.0
    for i in range(2500):
        t += rng.random() * 60
        ev = {"seq": i + 1, "ts": iso(t, ms=True), "event": rng.choice(events),
              "user_id": rng.randrange(1000, 1400), "latency_ms": round(rng.random() * 800, 1)}
        if ev["event"] == "purchase":
            ev["total"] = round(rng.randrange(100, 90000) / 100, 2)
        lines.append(json.dumps(ev, separators=(",", ":")))
    save("text-ndjson", "tail_events", {"stream": "app", "lines": 2500}, wrap("\n".join(lines) + "\n"))


SHAPES = {
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


def main() -> None:
    names = sys.argv[1:] or list(SHAPES)
    for n in names:
        SHAPES[n]()


if __name__ == "__main__":
    main()
