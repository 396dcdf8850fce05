"""An MCP server (Python SDK `mcp` 2.x, stdio) whose tool results go through lro.

Every `tools/call` result passes through the component's `intercept`: a small one is forwarded
unchanged, a large one is written to a JSONL file in the offload directory and replaced by a
descriptor whose guidance points to the `lro_extract` tool (config `extract_tool`). `tools/list` goes
through `rewrite_tools`, which drops the `outputSchema` of every tool whose results may be
offloaded (a descriptor would break it) and appends `lro_extract` exactly as the component
defines it; calls of `lro_extract` go, arguments untouched, to `call_tool`.

    LRO_WASM=/tmp/lro.wasm python bindings/python/examples/mcp_server.py

Environment: LRO_WASM (the component, required), and two of the spec's configuration variables:
ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR (default: empty, the host's default directory `lro-{uid}` in
the system temporary directory) and ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS (default: the
component's, 1600). Every other setting is the component's default, but `extract_tool`: on.

The tools return their results in the SDK's own shapes: `search_notes` JSON text with no
structured content, `recall_memories` (`-> str`) JSON text the SDK also wraps as structured
content `{"result": "<text>"}`, and `list_memories` (`-> list[dict]`, unstructured) one text
block per record.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolRequestParams, CallToolResult, TextContent

# lro_wasm is a package next to this directory, not an installed one.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lro_wasm import Lro, LroError, default_output_dir  # noqa: E402

# stdout carries the protocol: everything else goes to stderr.
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s: %(message)s")
log = logging.getLogger("lro-example")

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


class LroExtension(Extension):
    """Offloads large tool results, serves `lro_extract`, and rewrites `tools/list` (through
    `list_tools_middleware`, which the server must be given as middleware: an Extension has no
    hook on `tools/list`)."""

    identifier = "io.github.lro/offload"

    def __init__(self, lro: Lro, cfg: dict):
        self.lro, self.config = lro, cfg

    def settings(self) -> dict[str, Any]:
        return {"output_dir": self.config["output_dir"] or default_output_dir(),
                "threshold_tokens": self.config["threshold_tokens"]}

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if params.name == "lro_extract":
            # Not an SDK tool: listed by `rewrite_tools`, answered here, the arguments passed
            # through as they came, so the component validates them against its own schema.
            return await self.extract(params.arguments or {})
        result = await call_next(ctx)
        if not isinstance(result, CallToolResult):
            return result  # e.g. an input-required interim result: nothing to offload
        call = {
            "tool": params.name,
            "arguments": params.arguments or {},
            "result": result.model_dump_json(by_alias=True, exclude_none=True),
            "meta": dict(params.meta) if params.meta else None,  # the request's `_meta`, wire keys
        }
        try:
            outcome = await anyio.to_thread.run_sync(self.lro.intercept, self.config, call)
        except LroError as e:
            log.warning("intercept failed (%s), forwarding the result unchanged: %s", e.kind, e.message)
            return result
        if outcome["kind"] == "unchanged":
            return result
        return CallToolResult.model_validate_json(outcome["result"])

    async def extract(self, arguments: dict[str, Any]) -> CallToolResult:
        try:
            # Runs an untrusted filter for up to a second: off the event loop.
            result = await anyio.to_thread.run_sync(self.lro.call_tool, self.config, arguments)
        except LroError as e:
            return CallToolResult(content=[TextContent(type="text", text=f"{e.kind}: {e.message}")], is_error=True)
        return CallToolResult(content=[TextContent(type="text", text=result["text"])])

    async def list_tools_middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method != "tools/list" or not isinstance(result, dict) or "tools" not in result:
            return result
        # `result` is the wire form here (camelCase keys), as the component expects it.
        tools = await anyio.to_thread.run_sync(self.lro.rewrite_tools, self.config, result["tools"])
        return {**result, "tools": json.loads(tools)}


def build_server() -> MCPServer:
    lro = Lro(on_event=lambda event: log.info("event %s", json.dumps(event)))
    overrides: dict[str, Any] = {"extract_tool": True}
    for key in ("output_dir", "threshold_tokens"):
        value = os.environ.get(f"ATLATL_PROMPT__OFFLOAD__{key.upper()}")
        if value is not None:
            overrides[key] = int(value) if key == "threshold_tokens" and value.isdigit() else value
    cfg = lro.config(**overrides)  # a bad value raises LroError invalid-config, naming the key
    extension = LroExtension(lro, cfg)
    server = MCPServer("lro-example", extensions=[extension], middleware=[extension.list_tools_middleware])

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
    except (LroError, RuntimeError) as e:  # no component, or a bad setting: say which, no traceback
        sys.exit(f"lro-example: {e}")
    mcp_server.run("stdio")
