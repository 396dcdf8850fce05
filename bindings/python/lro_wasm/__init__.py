"""Load and drive the lro WebAssembly component from Python (wasmtime-py, WASI Preview 2).

The component owns all LRO behaviour; this package only moves values in and out, sandboxes each
call and reports events, as docs/HOSTS.md requires of every host:

    from lro_wasm import Lro
    lro = Lro(on_event=print)                     # the component bundled in the package
    cfg = lro.config(output_dir="/tmp/lro-demo", threshold_tokens=500)
    out = lro.offload(cfg, {"operation": "recall", "records": records})

Configuration uses the spec's `[prompt.offload]` names (`threshold_tokens`, `ttl_seconds`,
`output_dir`, `extract_tool`, ...), and its defaults are the component's own
(`configuration.defaults`, `Lro.defaults()`): a config dict may be partial. An empty or omitted
`output_dir` is the default directory, `default_output_dir()`. `load_config` reads the same keys
from a TOML file and the `ATLATL_PROMPT__OFFLOAD__*` environment, as the `lro` command does.

Values are plain dicts, lists, strings and numbers in the JSON form of docs/HOSTS.md (a WIT
`json` result is the component's JSON text). A WIT error raises `LroError(kind, message)`; so do
the limits and host failures, with kinds that are not WIT cases (`HOST_KINDS`). An unusable
offload directory never fails `offload` or `intercept`: they degrade, as for a failed write.

The MCP integration, `lro_wasm.mcp.LroExtension`, needs the `mcp` extra (`pip install
lro-wasm[mcp]`); nothing else here imports mcp.

Modules: `_convert` (the JSON form <-> wasmtime values, by the component's types), `_capi`
(the same, written to and read from wasmtime's C API values directly: the fast path),
`_directory` (the offload directory), `_sandbox` (the sandboxed call and trap mapping),
`_cache` (compiling and caching the component), `_settings` (the configuration file and
environment), `_errors` (LroError), `mcp` (the MCP server integration).
"""

from __future__ import annotations

import copy
import logging
import os
from typing import Any, Callable, Mapping, Optional

from . import _cache, _settings
from ._convert import field_names, unknown_fields
from ._directory import Unusable, absolute, default_output_dir, owner_only, prepare_dir
from ._errors import HOST_KINDS, LroError, bad
from ._sandbox import Sandbox, new_engine

__all__ = ["Lro", "LroError", "HOST_KINDS", "default_output_dir", "wasm_path", "__version__"]

#: The package's version: the project's one version, the same as the workspace's crates.
__version__ = "0.1.0"

log = logging.getLogger("lro")

# How a call uses the offload directory: offload and intercept create it, write, and degrade
# when it is unusable; sweep writes; extract and call_tool read.
WRITE, SWEEP, READ = "write", "sweep", "read"

# The config field only hosts set (WIT `dir-problem`): callers may not.
DIR_PROBLEM = "dir_problem"


# Where a built package keeps the component (package data, put there by the build backend).
BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lro.wasm")


def wasm_path() -> str:
    """The component `Lro()` loads when given no path: $LRO_WASM when it is set, else the one
    bundled in this package. LroError `load` when $LRO_WASM names no file, or when it is unset
    and nothing is bundled (a source checkout that was never built)."""
    path = os.environ.get("LRO_WASM", "")
    if path:
        if not os.path.isfile(path):
            raise LroError("load", f"LRO_WASM={path}: no such file (build it with `lro component -o {path}`)")
        return path
    if os.path.isfile(BUNDLED):
        return BUNDLED
    raise LroError("load", f"no component: LRO_WASM is not set and none is bundled at {BUNDLED} (a source "
                   "checkout: `pip wheel bindings/python` builds the package with it, or set LRO_WASM to a "
                   "component from `lro component -o lro.wasm`)")


class Lro:
    """The compiled component, ready to run calls (docs/HOSTS.md): a fresh store and instance
    for each call that runs a user filter; the others reuse one their thread kept."""

    def __init__(
        self,
        wasm: Optional[str] = None,
        *,
        on_event: Optional[Callable[[dict], None]] = None,
        deadline: float = 10.0,
        memory: int = 2 << 30,
        filter_deadline: float = 1.0,
        filter_memory: int = 512 << 20,
        cache_dir: Optional[str] = "default",
        _fast: Optional[bool] = None,
    ):
        """`wasm`: the component's path; when None, $LRO_WASM, else the component bundled in
        the package (`wasm_path()`). `on_event` receives every event as a dict with `kind`,
        during the call that causes it. Deadlines are seconds, memory caps bytes; the filter
        limits apply to `extract`, `call_tool` and `query`, which run user
        filters. `cache_dir`: where to keep the compiled component ("default": $LRO_CACHE_DIR,
        else $XDG_CACHE_HOME/lro or ~/.cache/lro; None: no cache). One `Lro` may be shared by
        threads: a store and instance serve one call at a time. A file that is not a loadable lro
        component raises LroError `load`."""
        self.on_event = on_event
        self.deadline, self.memory = deadline, memory
        self.filter_deadline, self.filter_memory = filter_deadline, filter_memory

        path = os.fspath(wasm) if wasm is not None else wasm_path()
        engine = new_engine()
        cache = _cache.cache_dir() if cache_dir == "default" else cache_dir
        # `_fast` (tests): True/False forces the call path through wasmtime's C API or its public
        # API; None takes the C API when the installed wasmtime-py is the one it was written for.
        self._sandbox = Sandbox(engine, _cache.load(engine, _cache.read(path), cache, path), path, _fast)
        missing = sorted(_WIT_FUNCTIONS - set(self._sandbox.functions))
        if missing:
            raise LroError("load", f"{path}: the component exports no {', '.join(missing)}: "
                           "it was built from another version of the WIT; rebuild it (`lro component`)")
        self._config_type = self._sandbox.functions["defaults"].result
        # The spec's defaults, from the component itself, under the host's standard limits (the
        # configured ones are for the user's calls: a tiny deadline must not fail the defaults).
        defaults = self._sandbox.run("defaults", [], preopen=None, deadline=10.0, memory=2 << 30,
                                     deliver=self._deliver)
        defaults.pop(DIR_PROBLEM, None)
        self._defaults = defaults

    # ---- configuration ----------------------------------------------------------------------

    def defaults(self) -> dict:
        """The default of every config field, as the component's `configuration.defaults`
        gives them (the spec's `[prompt.offload]` defaults), under the JSON-form names:
        `enabled`, `threshold_tokens`, `ttl_seconds`, `output_dir` (empty: the default
        directory), `prefix`, `descriptor`, `extract_tool`, `schema_version`, `recipes`,
        `tools`, `max_bytes`, `max_files`. A fresh copy each time."""
        return copy.deepcopy(self._defaults)

    def config(self, **overrides: Any) -> dict:
        """A full config: the defaults with `overrides` (the JSON-form names above) layered
        over them. An unknown name, or a value of the wrong type, raises LroError
        `invalid-config` naming it."""
        return self._merge(overrides)

    def load_config(self, config_file: Any = None, *, environ: Optional[Mapping[str, str]] = None,
                    **keys: Any) -> dict:
        """A full config read as the `lro` command reads it (docs/CONFIGURATION.md): `keys`
        (the spec's `[prompt.offload]` names, `tools` as in `config`, or a dict of tool names
        to their settings) over the `ATLATL_PROMPT__OFFLOAD__*` variables of `environ`
        (default: `os.environ`), over the `[prompt.offload]` and `[prompt.offload.tools.NAME]`
        tables of the TOML file `config_file`, over the defaults. A bad value, an unknown key or
        an unreadable file raises LroError `invalid-config` naming the key and where it came
        from (`prompt.offload.threshold_tokens (from ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS):
        expected a whole number ...`)."""
        return self.layered(self.defaults(), config_file=config_file, environ=environ, arguments=keys,
                            where="the arguments of load_config")

    def layered(self, base: dict, *, config_file: Any = None, environ: Optional[Mapping[str, str]] = None,
                arguments: Optional[Mapping[str, Any]] = None, where: str = "the arguments") -> dict:
        """`base` (a full config, as `defaults()` gives) with the TOML file `config_file`, the
        `ATLATL_PROMPT__OFFLOAD__*` variables of `environ` (default: `os.environ`) and
        `arguments` layered over it, in that order, by the component (`configuration.load`);
        `where` names the arguments in its errors. `load_config` is this over the defaults."""
        layers = _settings.layers(config_file=config_file, environ=environ, arguments=arguments, where=where)
        loaded = self._sandbox.run("load", [self._merge(base), layers], preopen=None, deadline=10.0,
                                   memory=2 << 30, deliver=self._deliver)
        loaded.pop(DIR_PROBLEM, None)
        return loaded

    # ---- the component's functions ------------------------------------------------------

    def offload(self, config: dict, request: dict) -> dict:
        """`interceptor.offload`: `{kind: inline|offloaded|degraded, ...}`. An unusable offload
        directory degrades the result (`offload-write-failed`); it never raises."""
        return self._call_in_dir("offload", config, request, WRITE)

    def intercept(self, config: dict, call: dict) -> dict:
        """`interceptor.intercept`: `{kind: unchanged|offloaded|degraded, ...}`. `arguments`
        defaults to `{}` and `meta` to null. An unusable offload directory degrades the result."""
        call = {"arguments": "{}", **call}
        return self._call_in_dir("intercept", config, call, WRITE)

    def sweep(self, config: dict, now: int) -> dict:
        """`custodian.sweep` at `now` (ms since the epoch): `{deleted, kept, failed}`."""
        return self._call_in_dir("sweep", config, now, SWEEP)

    def extract(self, config: dict, request: dict) -> dict:
        """`extractor.extract` (the `lro_extract` tool), with the directory mounted read-only."""
        request = {"slurp": False, **request}
        return self._call_in_dir("extract", config, request, READ)

    def call_tool(self, config: dict, arguments: Any) -> dict:
        """`extractor.call-tool`: runs `lro_extract` from a `tools/call` request's `arguments`
        (an object, or its JSON text) as `extract` does. Return `text` as the tool result, or
        the error's message as an `isError` result."""
        return self._call_in_dir("call_tool", config, arguments, READ)

    def tool_definition(self) -> str:
        """`extractor.tool-definition`: the `lro_extract` tool as `tools/list` lists it, as the
        JSON text the component returned (`json.loads` it for a dict)."""
        return self._call("tool_definition", [])

    def rewrite_tools(self, config: dict, tools: Any) -> str:
        """`interceptor.rewrite-tools`: the `tools` array of a `tools/list` result (a list, or
        its JSON text) rewritten for a server whose results go through `intercept`: no
        `outputSchema` on tools that may be offloaded, `lro_extract` appended when
        `config.extract_tool`. Returns the component's JSON text."""
        return self._call("rewrite_tools", [self._unmounted(config), tools])

    def query(self, filter: str, input: Any, slurp: bool = False, raw: bool = False,
              limit: Optional[int] = None) -> dict:
        """`extractor.query`: a jq filter over JSON text, with no file access."""
        return self._call("query", [filter, input, slurp, raw, limit], filters=True)

    def recipes(self, config: dict, detail: str, file: Optional[str] = None) -> list:
        """`interceptor.recipes`: the ten recipes for `detail`."""
        return self._call("recipes", [self._unmounted(config), detail, file])

    def estimate(self, text: str) -> int:
        """`interceptor.estimate`: the token estimate of `text`."""
        return self._call("estimate", [text])

    # ---- one call -------------------------------------------------------------------------

    def _merge(self, cfg: Any, *, copy_defaults: bool = True, check: bool = True) -> dict:
        """The defaults with `cfg` over them, checked against the component's config type
        before anything touches the file system (when `check`; else only its field names,
        for a caller that checks the values by lowering them next). The defaults' lists are
        shared with the result, not copied, when `copy_defaults` is false: for a config only a
        call reads."""
        if cfg is not None and not isinstance(cfg, dict):
            raise bad("config", "an object", cfg)
        cfg = cfg or {}
        if cfg.get(DIR_PROBLEM) is not None:
            raise LroError("invalid-config", f"config.{DIR_PROBLEM}: set by the host, never by callers")
        error = unknown_fields("config", cfg, field_names(self._config_type))
        if error is not None:
            raise error
        defaults = self.defaults() if copy_defaults else self._defaults
        merged = {**defaults, **{k: v for k, v in cfg.items() if k != DIR_PROBLEM}}
        if check:
            self._sandbox.check(self._config_type, merged, "config")  # every value of the right type, or an error
        return merged

    def _unmounted(self, cfg: Any) -> dict:
        """The config of a call that mounts no directory: `output_dir` made absolute."""
        cfg = self._merge(cfg, copy_defaults=False)
        cfg["output_dir"] = absolute(cfg["output_dir"])
        return cfg

    def _call_in_dir(self, name: str, cfg: Any, arg: Any, use: str) -> Any:
        """A call that uses the offload directory (`use`: WRITE, SWEEP or READ). For the calls
        that write, an unusable directory is not an error: the component is told why
        (`dir_problem`), writes nothing and degrades the result, as for any failed write."""
        cfg = self._merge(cfg, copy_defaults=False, check=False)
        # Checked by lowering it, once, before anything touches the file system; the canonical
        # directory then replaces `output_dir` in the lowered config.
        lowered = self._sandbox.lower_first(name, cfg)
        try:
            dir, writable, identity = prepare_dir(cfg["output_dir"], create=use == WRITE)
            # Read-only for extraction, and for a directory with no write bit at all, so that
            # it degrades the same way for every user, root included.
            writable = writable and use != READ
            self._sandbox.set_field(name, lowered, "output_dir", dir)
            out = self._call(name, [arg], first=lowered, preopen=(dir, writable, identity), filters=use == READ)
        except Unusable as unusable:
            reason = unusable.reason
        else:
            if use == WRITE and writable and out["kind"] == "offloaded":
                for path in out["files"] if name == "intercept" else [out["path"]]:
                    owner_only(dir, path)
            return out
        # Raised and called outside the `except` block, so no traceback chain keeps frames alive.
        if use != WRITE:
            raise LroError("directory", reason)
        cfg["output_dir"] = absolute(cfg["output_dir"])
        cfg[DIR_PROBLEM] = reason
        return self._call(name, [cfg, arg])

    def _call(self, name: str, args: list, *, first: Any = None, preopen: Optional[tuple] = None,
              filters: bool = False) -> Any:
        deadline, memory = (self.filter_deadline, self.filter_memory) if filters else (self.deadline, self.memory)
        return self._sandbox.run(name, args, first=first, preopen=preopen, deadline=deadline, memory=memory,
                                 deliver=self._deliver, reuse=not filters)

    def _deliver(self, event: dict) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception:  # `emit` cannot fail: a broken sink must not fail the call
            log.exception("lro: the on_event callback raised for %s", event.get("kind"))


# The WIT functions this class calls, by their Python names: a component built from another
# version of the WIT is refused when it is loaded, not at the first call that needs one.
_WIT_FUNCTIONS = frozenset({
    "offload", "intercept", "recipes", "estimate", "rewrite_tools",
    "extract", "query", "tool_definition", "call_tool", "sweep", "defaults", "load",
})
