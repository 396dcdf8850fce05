"""A memory server written with the Python SDK (`mcp` 2.3): results shaped like a memory store's
(the spec's MIF records), deterministic, for the proxy's end-to-end suite (test_proxy.py).

    python tests/e2e/memory_server.py        # MCP over stdio
"""

import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("memory-fixture")

TOPICS = ["caching", "retries", "auth", "billing", "search", "deploys"]


def memories(query: str, count: int) -> list[dict]:
    """The store's answer to `query`: `count` records, the same every time."""
    return [
        {
            "id": f"mem-{i:05d}",
            "content": f"Note {i} about {TOPICS[i % len(TOPICS)]}: {query} came up in review {i * 7 % 31}.",
            "namespace": f"_semantic/{TOPICS[i % len(TOPICS)]}",
            "tags": [TOPICS[i % len(TOPICS)], "review"],
            "created": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00Z",
            "score": round(1 - i / (count + 1), 6),
        }
        for i in range(count)
    ]


@server.tool()
def recall_memories(query: str, limit: int = 10) -> dict:
    """Memories matching the query, best first."""
    return {"memories": memories(query, limit)}


@server.tool()
async def reindex(steps: int, ctx: Context) -> str:
    """Rebuilds the index, reporting progress at each step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"reindexed in {steps} steps"


@server.tool()
def crash() -> str:
    """The server process dies mid-call, as a crashing server does."""
    os._exit(3)


if __name__ == "__main__":
    server.run()
