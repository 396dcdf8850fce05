"""An MCP server (Python SDK `mcp` 2.x, stdio) whose tool results go through lro, with the
package's ready-made integration, `lro_wasm.mcp.LroExtension` (the import and two lines in
`build_server`).

Every `tools/call` result passes through the component's `intercept`: a small one is forwarded
unchanged, a large one is written to a JSONL file in the offload directory and replaced by a
descriptor whose guidance points to the `lro_extract` tool. `tools/list` goes through
`rewrite_tools`, which drops the `outputSchema` of every tool whose results may be offloaded (a
descriptor would break it) and appends `lro_extract` exactly as the component defines it; calls
of `lro_extract` go, arguments untouched, to `call_tool`. Expired files are swept at start and
every `ttl_seconds / 2`.

    pip install 'lro-wasm[mcp]' && python mcp_server.py
    PYTHONPATH=bindings/python LRO_WASM=/tmp/lro.wasm .venv/bin/python bindings/python/examples/mcp_server.py

(the second from this repository, with the package's source and a component built by
`lro component -o /tmp/lro.wasm`). Configuration: the `ATLATL_PROMPT__OFFLOAD__*` variables
(`..._OUTPUT_DIR`, `..._THRESHOLD_TOKENS`, ...); every setting left out is the component's
default, but `extract_tool`: on. The offload directory defaults to `lro-{uid}` in the system
temporary directory, the same as every lro host's.

The tools return their results in the SDK's own shapes: `search_notes` JSON text with no
structured content, `recall_memories` (`-> str`) JSON text the SDK also wraps as structured
content `{"result": "<text>"}`, and `list_memories` (`-> list[dict]`, unstructured) one text
block per record.
"""

from __future__ import annotations

import json
import sys

from mcp.server.mcpserver import MCPServer

from lro_wasm import LroError
from lro_wasm.mcp import LroExtension

TOPICS = ["caching", "deploys", "auth", "search", "billing"]
AUTHORS = ["ada", "grace", "linus", "barbara"]
NAMESPACES = ["_semantic/decisions", "_semantic/knowledge", "_episodic/incidents", "_procedural/runbooks"]


def generate_notes(count: int = 300) -> list[dict]:
    """Deterministic notes: the same count gives the same records, byte for byte."""
    return [
        {
            "id": f"note-{i:03d}",
            "topic": TOPICS[i % len(TOPICS)],
            "author": AUTHORS[(i * 7) % len(AUTHORS)],
            "priority": (i * 3) % 5 + 1,
            "title": f"{TOPICS[i % len(TOPICS)].capitalize()} note {i}",
            "body": f"Note {i} about {TOPICS[i % len(TOPICS)]}: decided after review {i % 11}.",
        }
        for i in range(count)
    ]


def generate_memories(count: int = 120) -> list[dict]:
    """Deterministic memory records (id, namespace, title, ...), as a memory service returns them."""
    return [
        {
            "id": f"mem-{i:04d}",
            "memory_type": NAMESPACES[i % len(NAMESPACES)].split("/")[0].lstrip("_"),
            "namespace": NAMESPACES[i % len(NAMESPACES)],
            "title": f"{TOPICS[i % len(TOPICS)].capitalize()} memory {i}",
            "tags": [TOPICS[i % len(TOPICS)]] + (["review"] if i % 3 == 0 else []),
            "created": f"2026-0{1 + i % 9}-{10 + i % 18}T09:00:00Z",
        }
        for i in range(count)
    ]


def build_server() -> MCPServer:
    lro = LroExtension()  # reads ATLATL_PROMPT__OFFLOAD__*; LroError naming a bad setting
    server = MCPServer("lro-example", extensions=[lro], middleware=[lro.middleware])

    @server.tool(structured_output=False)
    def search_notes(query: str = "", count: int = 300) -> str:
        """Search the team's notes: every note whose title or body contains `query` (all when
        empty), among the first `count`. Returns a JSON array of notes."""
        found = [n for n in generate_notes(count) if query.lower() in (n["title"] + " " + n["body"]).lower()]
        return json.dumps(found)

    @server.tool()
    def recall_memories(query: str = "", count: int = 120) -> str:
        """Recall memories whose title contains `query` (all when empty), among the first
        `count`, as JSON text. (The SDK gives this tool an outputSchema; tools/list drops it.)"""
        return json.dumps([m for m in generate_memories(count) if query.lower() in m["title"].lower()])

    @server.tool(structured_output=False)
    def list_memories(count: int = 120) -> list[dict]:
        """List the first `count` memories (the SDK sends one text block per record)."""
        return generate_memories(count)

    return server


if __name__ == "__main__":
    try:
        mcp_server = build_server()
    except LroError as e:  # no component, or a bad setting: say which, no traceback
        sys.exit(f"lro-example: {e}")
    mcp_server.run("stdio")
