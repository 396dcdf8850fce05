"""An MCP server (Python SDK `mcp` 2.x, stdio) whose tool results go through lro.

Every `tools/call` result passes through the component's `intercept`: a small one is forwarded
unchanged, a large one is written to a JSONL file in the offload directory and replaced by a
descriptor whose guidance points to the `lro_extract` tool (config `native`), which this server
also offers.

    LRO_WASM=/tmp/lro.wasm python hosts/python/examples/mcp_server.py

Environment: LRO_WASM (the component, required), LRO_OFFLOAD_DIR (default: a new private
temporary directory), LRO_THRESHOLD (tokens, default 1600).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from typing import Any, Optional

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, ToolBinding
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolRequestParams, CallToolResult

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lro_wasm import Lro, LroError, config  # noqa: E402

# stdout carries the protocol: everything else goes to stderr.
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s: %(message)s")
log = logging.getLogger("lro-example")

TOPICS = ["caching", "deploys", "auth", "search", "billing"]
AUTHORS = ["ada", "grace", "linus", "barbara"]


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


class LroExtension(Extension):
    """Offloads large tool results and offers `lro_extract` to read them back."""

    identifier = "io.github.lro/offload"

    def __init__(self, lro: Lro, cfg: dict):
        self.lro, self.config = lro, cfg

    def settings(self) -> dict[str, Any]:
        return {"dir": self.config["dir"], "threshold": self.config["threshold"]}

    def tools(self) -> list[ToolBinding]:
        # No outputSchema (structured_output=False): an offloaded result could not match one.
        return [ToolBinding(self.lro_extract, kwargs={"name": "lro_extract", "structured_output": False})]

    async def lro_extract(
        self,
        file_path: str,
        recipe: Optional[int] = None,
        query: Optional[str] = None,
        params: Optional[dict[str, Any]] = None,
        slurp: bool = False,
        limit: Optional[int] = None,
    ) -> str:
        """Extract values from an offloaded result file: a recipe number (1-10) from its
        descriptor, or a jq `query` run once per record (`slurp`: once over all records).
        `params` are bound as jq variables ($name)."""
        request = {"path": file_path, "recipe": recipe, "query": query, "params": params, "slurp": slurp, "limit": limit}
        try:
            # Runs an untrusted filter for up to a second: off the event loop.
            result = await anyio.to_thread.run_sync(self.lro.extract, self.config, request)
        except LroError as e:
            raise ToolError(f"{e.kind}: {e.message}") from None
        return result["text"]

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if params.name == "lro_extract" or not isinstance(result, CallToolResult):
            return result  # an extraction is never offloaded again
        call = {
            "tool": params.name,
            "arguments": params.arguments or {},
            "result": result.model_dump_json(by_alias=True, exclude_none=True),
            "meta": dict(params.meta) if params.meta else None,
        }
        try:
            outcome = await anyio.to_thread.run_sync(self.lro.intercept, self.config, call)
        except LroError as e:
            log.warning("intercept failed (%s), forwarding the result unchanged: %s", e.kind, e.message)
            return result
        if outcome["kind"] == "unchanged":
            return result
        return CallToolResult.model_validate_json(outcome["result"])


def build_server() -> MCPServer:
    dir = os.environ.get("LRO_OFFLOAD_DIR") or tempfile.mkdtemp(prefix="lro-mcp-")
    cfg = config(dir, threshold=int(os.environ.get("LRO_THRESHOLD", "1600")), native=True)
    lro = Lro(on_event=lambda event: log.info("event %s", json.dumps(event)))
    server = MCPServer("lro-example", extensions=[LroExtension(lro, cfg)])

    @server.tool(structured_output=False)
    def search_notes(query: str = "", count: int = 300) -> str:
        """Search the team's notes: every note whose title or body contains `query` (all when
        empty), among the first `count`. Returns a JSON array of notes."""
        found = [n for n in generate_notes(count) if query.lower() in (n["title"] + " " + n["body"]).lower()]
        return json.dumps(found)

    return server


if __name__ == "__main__":
    build_server().run("stdio")
