"""A hand-written MCP server over stdio that misbehaves on purpose, for test_hostile.py.

It speaks raw JSON-RPC lines (no SDK: an SDK would refuse to send what this sends) and answers
`initialize`, `tools/list` and `tools/call`. What a tool does is the attack:

- `rows {"n": N, "delay": S}`: N rows as one JSON text block, after S seconds;
- `exit`: the server exits without answering;
- `respell`: a large result whose id is re-spelled (`"\\u0062ig"` for `"big"`, `-0` for `0`);
- `bad_utf8`, `dup_result`: a large answer that is not valid UTF-8 / has `result` twice;
- `partial`: half an answer, no newline, then exit;
- `flood {"n": N}`: N progress notifications of ~400 bytes, then the answer;
- `add_extract`: from now on `tools/list` also lists a tool named `lro_extract`
  (announced with `notifications/tools/list_changed`);
- `batch_rows`: the answer inside a JSON-RPC batch;
- `huge {"mb": N, "meta": M, "compact": B}`: a JSON array of rows of about N MB as one text
  block, written as `json.dumps` does (with `compact`, without spaces); with `meta`, a `_meta` of
  M bytes beside it, and a `structuredContent` wrapper of the same text;
- `big_note {"mb": N}`: a log notification of about N MB, then a small answer;
- `big_plain {"mb": N}`: the same text as `huge` as the answer to a `ping`-like request the
  proxy does not intercept (method `lro-test/big`).

`respell`, `bad_utf8`, `dup_result` and `partial` take `{"n": N}`, the rows of their large
text (3,000 by default, about 0.3 MB; the proxy spools what is over 256 KiB to disk).

Arguments: `--nameless` lists a tool without a name besides the others. The ids of every
request the server received are appended to the file named by `--log`, one JSON line each.
"""

import json
import os
import sys
import time

nameless = "--nameless" in sys.argv
log = sys.argv[sys.argv.index("--log") + 1] if "--log" in sys.argv else None
out = sys.stdout.buffer
extra_extract = False


def send(obj):
    out.write(json.dumps(obj).encode() + b"\n")
    out.flush()


def raw(data: bytes):
    out.write(data)
    out.flush()


def rows(n):
    return [{"id": i, "name": f"row {i}", "group": f"g{i % 7}", "payload": "x" * 40} for i in range(n)]


def text_result(text):
    return {"content": [{"type": "text", "text": text}]}


def tools():
    names = ["rows", "exit", "respell", "bad_utf8", "dup_result", "partial", "flood", "add_extract", "batch_rows", "huge", "big_note"]
    listed = [{"name": n, "description": f"the {n} attack", "inputSchema": {"type": "object"}} for n in names]
    if nameless:
        listed.insert(1, {"description": "a tool with no name", "inputSchema": {"type": "object"}})
    if extra_extract:
        listed.append({"name": "lro_extract", "description": "the server's own", "inputSchema": {"type": "object"}})
    return listed


def big_text(args=None):
    return json.dumps(rows(int((args or {}).get("n", 3000))))


def huge_text(mb, compact=False):
    row = json.dumps({"id": 0, "name": "a row of the huge result", "payload": "z" * 60},
                     separators=(",", ":") if compact else None)
    count = int(float(mb) * (1 << 20) / (len(row) + 1))
    return "[" + ",".join([row] * count) + "]"


for line in sys.stdin.buffer:
    if not line.strip():
        continue
    message = json.loads(line)
    if log and "id" in message and "method" in message:
        with open(log, "a") as f:
            f.write(json.dumps({"id": message["id"], "method": message["method"]}) + "\n")
    method = message.get("method")
    if "id" not in message or method is None:
        continue
    mid = message["id"]
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "hostile", "version": "1.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools()}})
    elif method == "tools/call":
        name = message["params"]["name"]
        args = message["params"].get("arguments") or {}
        if name == "rows":
            time.sleep(float(args.get("delay", 0)))
            send({"jsonrpc": "2.0", "id": mid, "result": text_result(json.dumps(rows(int(args.get("n", 10)))))})
        elif name == "exit":
            sys.exit(3)
        elif name == "respell":
            if isinstance(mid, str):
                spelt = '"' + "".join(f"\\u{ord(c):04x}" for c in mid) + '"'
            else:
                spelt = "-0" if mid == 0 else f"{mid}.0"
            body = json.dumps(text_result(big_text(args)))
            raw(f'{{"jsonrpc":"2.0","id":{spelt},"result":{body}}}\n'.encode())
        elif name == "bad_utf8":
            body = json.dumps(text_result(big_text(args))).encode().replace(b"row 1", b"row \xff", 1)
            raw(b'{"jsonrpc":"2.0","id":' + json.dumps(mid).encode() + b',"result":' + body + b"}\n")
        elif name == "dup_result":
            body = json.dumps(text_result(big_text(args)))
            small = json.dumps(text_result("small"))
            raw(f'{{"jsonrpc":"2.0","id":{json.dumps(mid)},"result":{small},"result":{body}}}\n'.encode())
        elif name == "partial":
            raw(b'{"jsonrpc":"2.0","id":' + json.dumps(mid).encode() + b',"result":{"content":[{"type":"text","text":'
                + json.dumps(big_text(args)).encode()[: -len(big_text(args)) // 2])
            os._exit(4)
        elif name == "flood":
            n = int(args.get("n", 1000))
            note = {"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "y" * 320}}
            chunk = (json.dumps(note) + "\n").encode() * 500
            for _ in range(n // 500):
                out.write(chunk)
            out.flush()
            send({"jsonrpc": "2.0", "id": mid, "result": text_result("flood done")})
        elif name == "add_extract":
            extra_extract = True
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            send({"jsonrpc": "2.0", "id": mid, "result": text_result("added")})
        elif name == "huge":
            text = huge_text(args.get("mb", 1), args.get("compact", False))
            result = text_result(text)
            if "meta" in args:
                result["_meta"] = {"note": "m" * int(args["meta"]), "n": 1E+2}
                result["structuredContent"] = {"result": text}
            body = json.dumps(result)
            del text, result
            raw(f'{{"jsonrpc":"2.0","id":{json.dumps(mid)},"result":{body}}}\n'.encode())
        elif name == "big_note":
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": huge_text(args.get("mb", 1))}})
            send({"jsonrpc": "2.0", "id": mid, "result": text_result("noted")})
        elif name == "batch_rows":
            send([{"jsonrpc": "2.0", "id": mid, "result": text_result(big_text())}])
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": f"no tool {name}"}})
    elif method == "lro-test/big":
        body = json.dumps({"text": huge_text(message["params"]["mb"]), "n": 1E+2})
        raw(f'{{"jsonrpc":"2.0","id":{json.dumps(mid)},"result":{body}}}\n'.encode())
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}})
