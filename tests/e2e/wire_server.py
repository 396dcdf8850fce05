"""A hand-written MCP server over stdio for test_wire.py, speaking the older `initialize`
protocol. It writes its answers as text it chose, so a test can send what no JSON parser keeps
(`123456789012345678901234567890`, `1E+2`, `"\\u00e9"`) and look for exactly those bytes at the
client; and it runs tools as tasks.

- `initialize`: capabilities, instructions and serverInfo that hold those values.
- `tools/list`: one tool whose inputSchema holds them.
- `tools/call exact`: a small result whose text and structuredContent hold them.
- `tools/call echo`: the params text as the server received it, as the result's text.
- `tools/call rows {"n": N}`: N records as one JSON text block, and a `_meta` that holds them.
- `tools/call task_rows {"n": N}`: a task whose result is N records: with `task` in the params,
  as 2025-11-25 has it (`CreateTaskResult` with `task.taskId`, then `tasks/get` and
  `tasks/result`); without, as the 2026-07-28 tasks extension has it (`resultType: "task"` with
  `taskId`, and the result inline in a completed `tasks/get`).
- `resources/list`, `resources/templates/list`, `resources/read`, `prompts/list`: one entry
  each, holding those values.
"""

import json
import sys

out = sys.stdout.buffer
# What no parser keeps as sent: a parsed value prints 1.2345678901234568e+29, 100.0 and "é".
VALUES = '{"big":123456789012345678901234567890,"e":1E+2,"s":"\\u00e9"}'
tasks = {}


def answer(mid, result: str):
    out.write(('{"jsonrpc":"2.0","id":' + json.dumps(mid) + ',"result":' + result + "}\n").encode())
    out.flush()


def rows(n):
    return [{"id": i, "name": f"row {i}", "group": f"g{i % 7}", "payload": "x" * 40} for i in range(n)]


def rows_result(n, task_id=None):
    result = {"content": [{"type": "text", "text": json.dumps(rows(n))}]}
    if task_id:
        result["_meta"] = {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
    return json.dumps(result)


def task_state(task_id, status):
    return {"taskId": task_id, "status": status, "createdAt": "2026-11-25T10:30:00Z",
            "lastUpdatedAt": "2026-11-25T10:30:01Z"}


for line in sys.stdin.buffer:
    if not line.strip():
        continue
    message = json.loads(line)
    method, mid, params = message.get("method"), message.get("id"), message.get("params") or {}
    if mid is None or method is None:
        continue
    if method == "initialize":
        answer(mid, '{"protocolVersion":' + json.dumps(params.get("protocolVersion", "2025-11-25"))
               + ',"capabilities":{"tools":{},"experimental":{"wire":' + VALUES + '}},"instructions":"caf\\u00e9 1E+2"'
               + ',"serverInfo":{"name":"wire","version":"1.0","_meta":' + VALUES + "}}")
    elif method == "tools/list":
        answer(mid, '{"tools":[{"name":"exact","inputSchema":{"type":"object","properties":{"n":{"type":"number",'
               '"maximum":123456789012345678901234567890,"minimum":1E+2}}},"_meta":' + VALUES + "}]}")
    elif method == "tools/call" and params.get("name") == "exact":
        text = json.dumps(VALUES)
        answer(mid, '{"content":[{"type":"text","text":' + text + '}],"structuredContent":' + VALUES + "}")
    elif method == "tools/call" and params.get("name") == "echo":
        start = line.index(b'"params"')
        answer(mid, json.dumps({"content": [{"type": "text", "text": line[start:].decode().strip()}]}))
    elif method == "tools/call" and params.get("name") == "rows":
        answer(mid, rows_result(int(params["arguments"]["n"]))[:-1] + ',"_meta":' + VALUES + "}")
    elif method == "tools/call" and params.get("name") == "task_rows":
        task_id = f"task-{len(tasks) + 1}"
        tasks[task_id] = (int(params["arguments"]["n"]), "task" not in params)
        state = task_state(task_id, "working")
        if "task" in params:
            answer(mid, json.dumps({"task": {**state, "ttl": 60000, "pollInterval": 100}}))
        else:
            answer(mid, json.dumps({"resultType": "task", **state, "ttlMs": 60000, "pollIntervalMs": 100}))
    elif method == "tasks/get":
        task_id = params["taskId"]
        n, inline = tasks[task_id]
        state = task_state(task_id, "completed")
        if inline:
            answer(mid, json.dumps({**state, "resultType": "complete"})[:-1] + ',"result":' + rows_result(n) + "}")
        else:
            answer(mid, json.dumps({**state, "ttl": 60000}))
    elif method == "tasks/result":
        answer(mid, rows_result(tasks[params["taskId"]][0], params["taskId"]))
    elif method == "resources/list":
        answer(mid, '{"resources":[{"uri":"wire://one","name":"one","size":123456789012345678901234567890,"_meta":'
               + VALUES + "}]}")
    elif method == "resources/templates/list":
        answer(mid, '{"resourceTemplates":[{"uriTemplate":"wire://{x}","name":"x","_meta":' + VALUES + "}]}")
    elif method == "resources/read":
        answer(mid, '{"contents":[{"uri":"wire://one","text":' + json.dumps(VALUES) + ',"_meta":' + VALUES + "}]}")
    elif method == "prompts/list":
        answer(mid, '{"prompts":[{"name":"p","_meta":' + VALUES + "}]}")
    else:
        out.write(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}}).encode() + b"\n")
        out.flush()
