"""lro for an MCP server on the `mcp` 2.x SDK (`MCPServer`): large tool results offloaded to
files, `lro_extract` to query them, expired files swept. Needs `pip install lro-wasm[mcp]`.

    from lro_wasm.mcp import LroExtension
    lro = LroExtension()
    server = MCPServer("notes", extensions=[lro], middleware=[lro.middleware])

Two hooks, because the SDK gives an `Extension` none on `tools/list`: the extension
(`intercept_tool_call`) passes every `tools/call` result through the component's `intercept`
and answers `lro_extract`; its `middleware` passes the `tools/list` result through
`rewrite_tools`, which lists `lro_extract` as the component defines it and drops the
`outputSchema` of every tool whose results may be offloaded (a descriptor would break it, and
clients reject such a result). Each half logs an error once when it sees the other missing
(the extension's absence shows in the `server/discover` result, which only clients of protocol
2026-07-28 ask for).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import weakref
from typing import Any, Optional

try:
    import anyio
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.extension import Extension
    from mcp.shared.exceptions import MCPError
    from mcp_types import CallToolRequestParams, CallToolResult, TextContent
    from mcp_types.jsonrpc import INTERNAL_ERROR
except ImportError as missing:  # say what to install, not where the import failed
    raise ImportError(f"lro_wasm.mcp needs the mcp package ({missing}): pip install 'lro-wasm[mcp]'") from None

from . import Lro, LroError, default_output_dir

__all__ = ["LroExtension", "EXTRACT_TOOL"]

log = logging.getLogger("lro_wasm.mcp")

#: The name of the extraction tool, as the component's `tool_definition` lists it.
EXTRACT_TOOL = "lro_extract"

# How often expired files are swept: every ttl/2, within these bounds (seconds).
MIN_INTERVAL, MAX_INTERVAL = 1.0, 3600.0


def log_event(event: dict) -> None:
    """The default `on_event` of the extension's `Lro`: one log line per event."""
    details = {k: v for k, v in event.items() if k != "kind"}
    log.info("%s %s", event["kind"], json.dumps(details, ensure_ascii=False))


class LroExtension(Extension):
    """Offloads large tool results of an `MCPServer`, serves `lro_extract`, rewrites
    `tools/list` (through `middleware`) and sweeps expired files.

    Pass it as `MCPServer(..., extensions=[lro], middleware=[lro.middleware])`."""

    identifier = "io.github.lro/offload"

    def __init__(self, *, config_file: Any = None, lro: Optional[Lro] = None, **offload: Any):
        """`offload`: any of the spec's `[prompt.offload]` keys (`threshold_tokens=4000`,
        `output_dir=...`, `tools=[{"name": "search", "threshold_tokens": 8000}]`, ...).
        `config_file`: a TOML file with `[prompt.offload]` and `[prompt.offload.tools.NAME]`
        tables. The `ATLATL_PROMPT__OFFLOAD__*` environment variables are read too. Arguments
        beat the environment, which beats the file, which beats the defaults: the component's,
        except `extract_tool`, on here. A bad value or an unknown key raises LroError
        `invalid-config` naming it and where it came from.

        `lro`: the `Lro` to run the component with (default: `Lro(on_event=log_event)`, the
        bundled component or $LRO_WASM, each event logged to the `lro_wasm.mcp` logger).

        Expired files are swept now and then every `sweep_interval` seconds, in a daemon
        thread, until `close()` or until the extension is garbage-collected."""
        self.lro = lro if lro is not None else Lro(on_event=log_event)
        base = {**self.lro.defaults(), "extract_tool": True}
        #: The full configuration every call gets.
        self.config: dict = self.lro.layered(base, config_file=config_file, arguments=offload,
                                             where="the arguments of LroExtension")
        self._middleware_ran = False
        self._warned: set = set()
        self._sweeper = _Sweeper(self)

    @property
    def sweep_interval(self) -> float:
        """Seconds between sweeps: half of `ttl_seconds`, from 1 s to 1 h."""
        return min(max(self.config["ttl_seconds"] / 2, MIN_INTERVAL), MAX_INTERVAL)

    def close(self) -> None:
        """Stops the periodic sweep (a sweep under way finishes first)."""
        self._sweeper.close()

    def settings(self) -> dict[str, Any]:
        """Advertised to clients under `capabilities.extensions["io.github.lro/offload"]`."""
        return {
            "output_dir": self.config["output_dir"] or default_output_dir(),
            "threshold_tokens": self.config["threshold_tokens"],
            "extract_tool": self.config["extract_tool"],
        }

    # ---- tools/call -----------------------------------------------------------------------

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if not self._middleware_ran:
            self._error_once("middleware", "LroExtension: its middleware is not installed, so tools/list neither "
                             f"lists {EXTRACT_TOOL} nor drops the outputSchema of tools whose results may be "
                             "offloaded: create the server with MCPServer(..., extensions=[lro], "
                             "middleware=[lro.middleware])")
        if params.name == EXTRACT_TOOL and self.config["extract_tool"]:
            # Not an SDK tool: listed by `rewrite_tools`, answered here, the arguments passed
            # through as they came, so the component checks them against its own schema.
            return await self._extract(params.arguments or {})
        result = await call_next(ctx)
        if not isinstance(result, CallToolResult):
            return result  # e.g. an input-required interim result: nothing to offload
        try:
            call = {
                "tool": params.name,
                "arguments": params.arguments or {},
                # Serialised once, by pydantic; the component takes the text as it is.
                "result": result.model_dump_json(by_alias=True, exclude_none=True),
                "meta": dict(params.meta) if params.meta else None,  # the request's `_meta`
            }
            outcome = await anyio.to_thread.run_sync(self.lro.intercept, self.config, call)
            if outcome["kind"] == "unchanged":
                return result
            return CallToolResult.model_validate_json(outcome["result"])
        except LroError as e:
            log.warning("intercept of %s failed (%s), forwarding its result unchanged: %s", params.name, e.kind, e.message)
        except Exception:  # a bug here must not fail the tool call either
            log.exception("intercept of %s failed, forwarding its result unchanged", params.name)
        return result

    async def _extract(self, arguments: dict[str, Any]) -> CallToolResult:
        try:
            # Runs an untrusted filter for up to a second: off the event loop.
            result = await anyio.to_thread.run_sync(self.lro.call_tool, self.config, arguments)
        except LroError as e:
            return CallToolResult(content=[TextContent(type="text", text=f"{e.kind}: {e.message}")], is_error=True)
        return CallToolResult(content=[TextContent(type="text", text=result["text"])])

    # ---- tools/list -----------------------------------------------------------------------

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Server middleware (`MCPServer(middleware=[lro.middleware])`): passes the `tools/list`
        result through `rewrite_tools`; every other message goes through untouched."""
        self._middleware_ran = True
        result = await call_next(ctx)
        if not isinstance(result, dict):
            return result
        if ctx.method == "server/discover":
            self._check_registered(result)
        if ctx.method != "tools/list" or not isinstance(result.get("tools"), list):
            return result
        # `result` is the wire form here (camelCase keys), as the component takes it.
        try:
            tools = await anyio.to_thread.run_sync(self.lro.rewrite_tools, self.config, result["tools"])
        except LroError as e:
            # Listing the tools unchanged would keep output schemas that offloaded results break.
            log.error("tools/list: rewrite_tools failed (%s): %s", e.kind, e.message)
            raise MCPError(code=INTERNAL_ERROR, message=f"lro: {e.kind}: {e.message}") from None
        return {**result, "tools": json.loads(tools)}

    def _check_registered(self, result: dict) -> None:
        # A modern server lists its extensions in `server/discover` (the legacy `initialize`
        # result leaves them out, so it cannot tell).
        capabilities = result.get("capabilities")
        if isinstance(capabilities, dict) and self.identifier not in (capabilities.get("extensions") or {}):
            self._error_once("extension", "LroExtension: its middleware is installed but the extension is not, so "
                             f"no result is offloaded and {EXTRACT_TOOL} cannot be called: create the server "
                             "with MCPServer(..., extensions=[lro], middleware=[lro.middleware])")

    # ---- expiry ---------------------------------------------------------------------------

    def _sweep(self) -> None:
        """One sweep of the offload directory (in the sweeper thread)."""
        if not os.path.isdir(self.config["output_dir"] or default_output_dir()):
            return  # nothing offloaded yet: the first offload creates it
        try:
            swept = self.lro.sweep(self.config, int(time.time() * 1000))
        except LroError as e:
            self._error_once(("sweep", e.message), f"lro: cannot sweep expired files: {e.kind}: {e.message}")
            return
        for failed in swept["failed"]:
            self._error_once(("sweep", failed["path"], failed["reason"]),
                             f"lro: cannot delete expired {failed['path']}: {failed['reason']}")

    def _error_once(self, key: Any, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.error("%s", message)


class _Sweeper:
    """Calls `extension._sweep()` at once and then every `sweep_interval` seconds, in a daemon
    thread of its own: sweeping never waits on, or blocks, the server's event loop. The thread
    holds the extension only weakly, so it ends with the extension, with `close()`, or at exit."""

    _live: "weakref.WeakSet[_Sweeper]" = weakref.WeakSet()

    def __init__(self, extension: LroExtension):
        self._stop = threading.Event()
        ref, stop, interval = weakref.ref(extension), self._stop, extension.sweep_interval

        def run() -> None:
            while not stop.is_set():
                extension = ref()
                if extension is None:
                    return
                try:
                    extension._sweep()
                except Exception:  # a bug must not end the sweeping for good
                    log.exception("lro: the sweep failed")
                del extension
                stop.wait(interval)

        self._thread = threading.Thread(target=run, name="lro-sweep", daemon=True)
        weakref.finalize(extension, stop.set)
        _Sweeper._live.add(self)
        self._thread.start()

    def close(self, timeout: Optional[float] = None) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)


@atexit.register
def _stop_sweeping() -> None:
    # Before the interpreter tears down: a daemon thread inside a component call at that point
    # could not finish its call (events are delivered through Python callbacks).
    for sweeper in list(_Sweeper._live):
        sweeper.close(timeout=10)
