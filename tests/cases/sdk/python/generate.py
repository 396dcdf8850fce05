"""Writes the CallToolResults the Python `mcp` SDK (2.x) itself makes of the usual tool return
types, for the Rust tests of the MCP-level interceptor (cli/tests/all/robustness/descriptors.rs): real SDK
output shapes, not hand-written look-alikes.

    .venv/bin/python tests/cases/sdk/python/generate.py

- `recall-str.json`: a tool declared `-> str` returning JSON text of 40 memory records; the SDK
  adds an outputSchema and wraps the text as structured content `{"result": "<json text>"}`.
- `recall-list.json`: a tool declared `-> list[dict]` with `structured_output=False`; the SDK
  sends one text block per record.
- `search-str.json`: a generic (non-memory) tool declared `-> str` returning JSON text of 60 issues.
- `tools.json`: the `tools` array of the server's `tools/list`, with the SDK's outputSchemas.
"""

import asyncio
import json
import os

from mcp import Client
from mcp.server.mcpserver import MCPServer

HERE = os.path.dirname(os.path.abspath(__file__))


def memories(n):
    kinds = ["semantic", "episodic", "procedural"]
    return [
        {
            "id": f"mem-{i:03d}",
            "memory_type": kinds[i % 3],
            "namespace": f"_{kinds[i % 3]}/topic{i % 4}",
            "title": f"Memory {i} about caching layer {i % 7}",
            "tags": ["cache", f"t{i % 5}"],
            "created": f"2026-01-{1 + i % 28:02d}T00:00:00Z",
            "status": "active",
        }
        for i in range(n)
    ]


def issues(n):
    return [
        {"number": i, "state": "open" if i % 3 else "closed", "title": f"Issue {i}: the cache misses",
         "body": f"Steps to reproduce number {i}: fill the cache, then restart the server."}
        for i in range(n)
    ]


server = MCPServer("sdk-shapes")


@server.tool()
def recall_memories(query: str) -> str:
    """Recall memories as JSON text."""
    return json.dumps(memories(40))


@server.tool(structured_output=False)
def list_memories() -> list[dict]:
    """List memories, one content block each."""
    return memories(40)


@server.tool()
def search_issues(query: str) -> str:
    """Search issues as JSON text."""
    return json.dumps(issues(60))


async def main():
    async with Client(server) as client:
        results = {
            "recall-str.json": await client.call_tool("recall_memories", {"query": "cache"}),
            "recall-list.json": await client.call_tool("list_memories", {}),
            "search-str.json": await client.call_tool("search_issues", {"query": "cache"}),
        }
        tools = await client.list_tools()
    for name, result in results.items():
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(result.model_dump(by_alias=True, mode="json", exclude_none=True), f, indent=1)
            f.write("\n")
    with open(os.path.join(HERE, "tools.json"), "w") as f:
        json.dump([t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools.tools], f, indent=1)
        f.write("\n")


asyncio.run(main())
