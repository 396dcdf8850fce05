"""Load and drive the lro WebAssembly component from Python (wasmtime-py, WASI Preview 2).

The component owns all LRO behaviour; this module only moves values in and out, sandboxes each
call and reports events, as docs/HOSTS.md requires of every host:

    from lro_wasm import Lro, config
    lro = Lro("lro.wasm", on_event=print)
    out = lro.offload(config("/tmp/lro-demo", threshold=500),
                      {"operation": "recall", "records": records})

Values are plain dicts, lists, strings and numbers in the JSON form of docs/HOSTS.md (a WIT
`json` result is the component's JSON text). A WIT error raises `LroError(kind, message)`; so do
the limits and host failures, with kinds that are not WIT cases (`HOST_KINDS`). An unusable
offload directory never fails `offload` or `intercept`: they degrade, as for a failed write.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Optional

from wasmtime import Config as EngineConfig
from wasmtime import Engine, Store, WasiConfig, WasmtimeError
from wasmtime.component import (
    Bool,
    Component,
    EnumType,
    Linker,
    ListType,
    OptionType,
    Record,
    RecordType,
    ResultType,
    String,
    U8,
    U32,
    U64,
    VariantType,
)

__all__ = ["Lro", "LroError", "config", "DEFAULT_CONFIG", "HOST_KINDS", "wasm_path"]

log = logging.getLogger("lro")

PACKAGE = "lro:component"
VERSION = "0.1.0"
# Python name -> (interface, WIT function).
FUNCTIONS = {
    "offload": ("interceptor", "offload"),
    "intercept": ("interceptor", "intercept"),
    "recipes": ("interceptor", "recipes"),
    "estimate": ("interceptor", "estimate"),
    "extract": ("extractor", "extract"),
    "query": ("extractor", "query"),
    "sweep": ("custodian", "sweep"),
    "rewrite_tools": ("interceptor", "rewrite-tools"),
    "tool_definition": ("extractor", "tool-definition"),
    "call_tool": ("extractor", "call-tool"),
}

#: The defaults of `[prompt.offload]`; `dir` has none. (`dir_problem` is not here: the host sets it.)
DEFAULT_CONFIG: dict = {
    "enabled": True,
    "threshold": 1600,
    "ttl": 3600,
    "dir": "",
    "prefix": "atlatl",
    "descriptor": "full",
    "native": False,
    "schema_version": "0.1",
    "recipes": "v2",
    "tools": [],
    "max_bytes": 1 << 30,
    "max_files": 1000,
}

#: Error kinds raised by this host rather than returned by the component (not WIT cases).
HOST_KINDS = frozenset({"timeout", "memory-limit", "stack-overflow", "trap", "directory"})

# WIT `json` fields and arguments: a non-string value is serialised for them (HOSTS.md).
# The component's types carry no alias names, so they are listed here.
JSON_INPUTS = frozenset({"records", "arguments", "result", "meta", "params", "input", "tools"})

# How a call uses the offload directory: offload and intercept create it, write, and degrade
# when it is unusable; sweep writes; extract and call_tool read.
WRITE, SWEEP, READ = "write", "sweep", "read"

TICK = 0.01  # seconds per epoch tick; deadlines are counted in ticks
STDERR_CAP = 64 * 1024


class LroError(Exception):
    """An error of an lro call: `kind` is the WIT error case (`"not-found"`, ...) or one of
    `HOST_KINDS`; `message` is the text."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def wasm_path() -> str:
    """The component named by $LRO_WASM; a clear error when it is unset or missing."""
    path = os.environ.get("LRO_WASM", "")
    if not path:
        raise RuntimeError("LRO_WASM is not set: point it at the component (`lro component -o lro.wasm`)")
    if not os.path.isfile(path):
        raise RuntimeError(f"LRO_WASM={path}: no such file (build it with `lro component -o {path}`)")
    return path


def config(dir: str, **overrides: Any) -> dict:
    """A full config: the defaults, `dir`, then `overrides` (snake_case keys)."""
    unknown = set(overrides) - set(DEFAULT_CONFIG)
    if unknown:
        raise LroError("invalid-config", f"unknown config field(s): {', '.join(sorted(unknown))}")
    return {**DEFAULT_CONFIG, **overrides, "dir": str(dir)}


class Lro:
    """The compiled component, ready to run calls. Each call gets a fresh store and instance."""

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
    ):
        """`wasm`: the component's path (default: $LRO_WASM). `on_event` receives every event
        as a dict with `kind`, during the call that causes it. Deadlines are seconds, memory caps
        bytes; the filter limits apply to `extract`, `call_tool` and `query`, which run user
        filters. `cache_dir`: where to keep the compiled component ("default": $LRO_CACHE_DIR,
        else $XDG_CACHE_HOME/lro or ~/.cache/lro; None: no cache). One `Lro` may be shared by
        threads: each call has its own store and instance."""
        self.on_event = on_event
        self.deadline, self.memory = deadline, memory
        self.filter_deadline, self.filter_memory = filter_deadline, filter_memory

        cfg = EngineConfig()
        cfg.epoch_interruption = True
        self._engine = Engine(cfg)
        path = wasm or wasm_path()
        wasm_bytes = Path(path).read_bytes()
        self._component = _load(self._engine, wasm_bytes, _cache_dir() if cache_dir == "default" else cache_dir)

        types = self._component.type
        self._types = {}  # Python name -> (params [(name, ValType)], result ValType)
        self._index = {}  # Python name -> ExportIndex
        exports = types.exports(self._engine)
        for name, (iface, func) in FUNCTIONS.items():
            full = f"{PACKAGE}/{iface}@{VERSION}"
            fty = exports[full].ty.exports(self._engine)[func].ty
            self._types[name] = (fty.params, fty.result)
            self._index[name] = self._component.get_export_index(func, self._component.get_export_index(full))
        events = f"{PACKAGE}/events@{VERSION}"
        self._event_type = types.imports(self._engine)[events].ty.exports(self._engine)["emit"].ty.params[0][1]

        self._scratch = tempfile.mkdtemp(prefix="lro-py-")  # private (0700): guest stderr files
        weakref.finalize(self, shutil.rmtree, self._scratch, ignore_errors=True)

        self._linker = Linker(self._engine)
        self._linker.add_wasip2()
        # The events sink of the call running on this thread (set per call).
        self._local = threading.local()
        with self._linker.root() as root:
            with root.add_instance(events) as instance:
                instance.add_func("emit", self._emit)
        _start_ticker(self._engine)

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
        `config.native`. Returns the component's JSON text."""
        return self._call("rewrite_tools", [_merge(config), tools])

    def query(self, filter: str, input: Any, slurp: bool = False, raw: bool = False,
              limit: Optional[int] = None) -> dict:
        """`extractor.query`: a jq filter over JSON text, with no file access."""
        return self._call("query", [filter, input, slurp, raw, limit], filters=True)

    def recipes(self, config: dict, detail: str, file: Optional[str] = None) -> list:
        """`interceptor.recipes`: the ten recipes for `detail`."""
        return self._call("recipes", [_merge(config), detail, file])

    def estimate(self, text: str) -> int:
        """`interceptor.estimate`: the token estimate of `text`."""
        return self._call("estimate", [text])

    # ---- one call -------------------------------------------------------------------------

    def _call_in_dir(self, name: str, cfg: dict, arg: Any, use: str) -> Any:
        """A call that uses the offload directory (`use`: WRITE, SWEEP or READ). For the calls
        that write, an unusable directory is not an error: the component is told why
        (`dir_problem`), writes nothing and degrades the result, as for any failed write."""
        cfg = _merge(cfg)
        try:
            dir, writable = _prepare_dir(cfg["dir"], create=use == WRITE)
            cfg["dir"] = dir
            # Read-only for extraction, and for a directory with no write bit at all, so that
            # it degrades the same way for every user, root included.
            writable = writable and use != READ
            out = self._call(name, [cfg, arg], preopen=(dir, writable), filters=use == READ)
        except _Unusable as unusable:
            reason = unusable.reason
        else:
            if use == WRITE and writable and out["kind"] == "offloaded":
                for path in out["files"] if name == "intercept" else [out["path"]]:
                    _owner_only(dir, path)
            return out
        # Raised and called outside the `except` block, so no traceback chain keeps frames alive.
        if use != WRITE:
            raise LroError("directory", reason)
        cfg["dir"] = _absolute(cfg["dir"])
        cfg["dir_problem"] = reason
        return self._call(name, [cfg, arg])

    def _call(self, name: str, args: list, *, preopen: Optional[tuple] = None, filters: bool = False) -> Any:
        params, result_type = self._types[name]
        lowered = [_lower(ty, value, pname.replace("-", "_")) for (pname, ty), value in zip(params, args)]
        deadline, memory = (self.filter_deadline, self.filter_memory) if filters else (self.deadline, self.memory)

        # Guest stderr goes to a file, read only when the call traps. (A Python callback,
        # `stderr_custom`, is called from wasmtime's tokio threads, which then abort noisily at
        # interpreter exit.) Stdout is left unconfigured, so it goes nowhere.
        stderr_path = os.path.join(self._scratch, f"stderr-{threading.get_ident()}")
        wasi = WasiConfig()
        wasi.stderr_file = stderr_path
        if preopen:
            # The same absolute path inside as outside, so descriptor paths are real paths.
            # wasmtime opens the directory here (_prepare_dir checked that it can, but it may
            # have changed since).
            try:
                wasi.preopen_dir(preopen[0], preopen[0], fs_mutable=preopen[1])
            except WasmtimeError:
                raise _Unusable(f"offload directory {preopen[0]}: cannot open it") from None
        store = Store(self._engine)
        store.set_wasi(wasi)
        store.set_limits(memory_size=memory)
        store.set_epoch_deadline(max(1, round(deadline / TICK)))
        self._local.events = []
        raw = failure = None
        try:
            instance = self._linker.instantiate(store, self._component)
            raw = instance.get_func(store, self._index[name])(store, *lowered)
        except WasmtimeError as error:
            # Only the message is kept, and the trap's traceback is dropped: wasmtime-py raises
            # it from a frame that holds it in a local, so the traceback, through that frame
            # and the one holding `store`, makes a reference cycle that would keep the trapped
            # store's linear memory (up to the memory cap) alive until the cycle collector ran.
            # Raising from in here would chain the trap to the LroError, with the same effect.
            failure = _trap_error(error, _head(stderr_path), deadline, memory)
            error.__traceback__ = None
        finally:
            events, self._local.events = self._local.events, None
            # Delivered before the call returns (or raises), in order.
            for event in events:
                self._deliver(event)
        # Freed now, by reference counting, whatever the outcome.
        store = instance = wasi = None
        if failure is not None:
            raise failure
        return _lift(result_type, raw)

    def _emit(self, _store: Any, event: Any) -> None:
        # Lifted now (the value is only valid during the call), delivered by _call.
        pending = getattr(self._local, "events", None)
        if pending is not None:
            pending.append(_lift(self._event_type, event))

    def _deliver(self, event: dict) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception:  # `emit` cannot fail: a broken sink must not fail the call
            log.exception("lro: the on_event callback raised for %s", event.get("kind"))


# ---- JSON form <-> wasmtime values, directed by the component's own types -------------------


def _bad(where: str, expected: str, value: Any) -> LroError:
    kind = "invalid-config" if where.startswith("config") else "invalid-input"
    return LroError(kind, f"{where}: expected {expected}, got {json.dumps(value, default=repr)[:80]}")


def _lower(ty: Any, value: Any, where: str) -> Any:
    """A JSON-form value -> the value wasmtime-py takes for `ty`."""
    if isinstance(ty, RecordType):
        if not isinstance(value, dict):
            raise _bad(where, "an object", value)
        fields = ty.fields
        names = {kebab.replace("-", "_") for kebab, _ in fields}
        unknown = sorted(set(value) - names)
        if unknown:
            raise LroError("invalid-config" if where.startswith("config") else "invalid-input",
                           f"{where}: unknown field(s) {', '.join(unknown)}")
        record = Record()
        for kebab, field_type in fields:  # wasmtime-py reads record fields by kebab-case name
            snake = kebab.replace("-", "_")
            setattr(record, kebab, _lower(field_type, value.get(snake), f"{where}.{snake}"))
        return record
    if isinstance(ty, OptionType):
        return None if value is None else _lower(ty.payload, value, where)
    if isinstance(ty, ListType):
        if not isinstance(value, (list, tuple)):
            raise _bad(where, "an array", value)
        return [_lower(ty.element, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(ty, EnumType):
        if value not in ty.names:
            raise _bad(where, " or ".join(map(repr, ty.names)), value)
        return value
    if isinstance(ty, String):
        if isinstance(value, str):
            return value
        if where.rsplit(".", 1)[-1] in JSON_INPUTS and value is not None:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        raise _bad(where, "a string", value)
    if isinstance(ty, Bool):
        if not isinstance(value, bool):
            raise _bad(where, "true or false", value)
        return value
    for int_type, bits in ((U8, 8), (U32, 32), (U64, 64)):
        if isinstance(ty, int_type):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << bits:
                raise _bad(where, f"an integer from 0 to {(1 << bits) - 1}", value)
            return value
    raise TypeError(f"{where}: lro_wasm cannot pass a {type(ty).__name__}")  # not in this WIT


def _classes(ty: Any) -> set:
    found: set = set()
    if ty is None:
        found.add(object)
    else:
        ty.add_classes(found)
    return found


def _case(cases: list, value: Any) -> tuple:
    """(case name, payload type, payload) of a variant-like value. wasmtime-py returns
    `Variant(tag, payload)` only when the Python classes of two cases overlap, else the bare
    payload; this applies the same rule to tell which case a bare payload is."""
    seen: set = set()
    tagged = False
    for _, ty in cases:
        classes = _classes(ty)
        tagged |= bool(classes & seen)
        seen |= classes
    if tagged:
        return value.tag, dict(cases)[value.tag], value.payload
    for name, ty in cases:
        if ty is None and value is None:
            return name, None, None
        if ty is not None and isinstance(value, tuple(_classes(ty))):
            return name, ty, value
    raise TypeError(f"a value of type {type(value).__name__} fits no case of {[c for c, _ in cases]}")


def _lift(ty: Any, value: Any) -> Any:
    """A wasmtime-py value of type `ty` -> the JSON form; a WIT error raises LroError."""
    if isinstance(ty, RecordType):
        return {kebab.replace("-", "_"): _lift(t, getattr(value, kebab)) for kebab, t in ty.fields}
    if isinstance(ty, ResultType):
        name, case_type, payload = _case([("ok", ty.ok), ("err", ty.err)], value)
        if name == "err":
            error = _lift(case_type, payload)
            raise LroError(error["kind"], error["message"])
        return None if case_type is None else _lift(case_type, payload)
    if isinstance(ty, VariantType):
        name, case_type, payload = _case(ty.cases, value)
        lifted = None if case_type is None else _lift(case_type, payload)
        if isinstance(lifted, dict):  # outcome, tool-outcome, event
            return {"kind": name, **lifted}
        return {"kind": name, "message": lifted}  # error: every case carries a string
    if isinstance(ty, OptionType):
        return None if value is None else _lift(ty.payload, value)
    if isinstance(ty, ListType):
        return [_lift(ty.element, v) for v in value]
    return value  # string, bool, integer, enum name


# ---- host duties ----------------------------------------------------------------------------


def _merge(cfg: Optional[dict]) -> dict:
    if cfg is not None and not isinstance(cfg, dict):
        raise _bad("config", "an object", cfg)
    if (cfg or {}).get("dir_problem") is not None:
        raise LroError("invalid-config", "config.dir_problem: set by the host, not by callers")
    return {**DEFAULT_CONFIG, **(cfg or {})}


class _Unusable(Exception):
    """The offload directory cannot be used; `reason` says why, naming it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _os_reason(e: OSError) -> str:
    return f"{e.strerror} (os error {e.errno})"  # as Rust prints an io::Error


def _prepare_dir(given: Any, create: bool) -> tuple:
    """The canonical absolute path of the offload directory, created 0700 if missing (when
    `create`), and whether to mount it writable: not when its mode has no write bit at all.
    Raises _Unusable when it is not a directory, cannot be created or opened, is owned by
    another user, or can be written by group or others: another local user could then read
    what is offloaded there, or plant files and links in it."""
    if not isinstance(given, str):
        raise _bad("config.dir", "a string", given)

    def unusable(why: str) -> _Unusable:
        return _Unusable(f"offload directory {given}: {why}")

    if not given:
        raise unusable("no offload directory given")
    absolute = os.path.abspath(given)
    problem = None
    try:
        if create and not os.path.exists(absolute):
            try:
                _makedirs_private(absolute)
            except OSError as e:
                problem = f"cannot create it: {_os_reason(e)}"
        if problem is None:
            canonical = os.path.realpath(absolute, strict=True)
            st = os.stat(canonical)
    except OSError as e:
        problem = _os_reason(e)
    if problem is None:
        me = os.geteuid()
        if not stat.S_ISDIR(st.st_mode):
            problem = "not a directory"
        elif st.st_uid != me:
            problem = f"owned by uid {st.st_uid}, not by this user (uid {me}); refusing to use it"
        elif st.st_mode & 0o022:
            who = "everyone" if st.st_mode & 0o002 else "its group"
            problem = f"writable by {who} (mode {st.st_mode & 0o7777:o}); refusing to use it: make it 0700"
        else:
            problem = _openable(canonical)
    # wasmtime reports a write to a read-only file system as a bare I/O error: name it here.
    if problem is None and create and os.statvfs(canonical).f_flag & os.ST_RDONLY:
        problem = "on a read-only file system"
    if problem is not None:
        raise unusable(problem)
    return canonical, bool(st.st_mode & 0o222)


def _openable(dir: str) -> Optional[str]:
    """Why wasmtime could not open `dir` for its preopen (it says only that it failed), or None."""
    try:
        os.close(os.open(dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    except OSError as e:
        return f"cannot open it: {_os_reason(e)}"
    return None


def _absolute(given: str) -> str:
    """An absolute path for the config of a call that degrades: the component checks it."""
    return os.path.abspath(given) if given else "/"


def _makedirs_private(path: str) -> None:
    parent = os.path.dirname(path)
    if parent != path and not os.path.exists(parent):
        _makedirs_private(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass


def _owner_only(dir: str, path: str) -> None:
    """chmod 0600 a file the call wrote (WASI cannot set modes). Through a descriptor opened
    without following a symlink or blocking on a FIFO, and only if it is a regular file, so
    a link or FIFO planted at the name cannot redirect the change to anything else."""
    if os.path.dirname(path) != dir:
        return  # the component writes only directly inside the directory
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # gone again (evicted, swept), or replaced by a link: nothing of ours to narrow
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, 0o600)
    except OSError as e:
        log.warning("lro: cannot chmod 0600 %s: %s", path, e)
    finally:
        os.close(fd)


def _duration(seconds: float) -> str:
    """As Rust's Duration prints it (`1s`, `1.5s`, `10ms`), so messages match the Rust host's."""
    return f"{seconds:g}s" if seconds >= 1 else f"{seconds * 1000:g}ms"


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(STDERR_CAP)
    except OSError:
        return b""


_MEMORY_FAULT = re.compile(r"memory fault at wasm address 0x([0-9a-f]+)")


def _trap_error(error: WasmtimeError, stderr: bytes, deadline: float, memory: int) -> LroError:
    """A trap as an LroError with a host kind, without wasmtime's backtrace."""
    text = str(error)
    cause = text.split("Caused by:", 1)[-1].strip()
    cause = " ".join(line.strip().split(": ", 1)[-1] if line.strip()[:1].isdigit() else line.strip()
                     for line in cause.splitlines() if line.strip())
    guest = stderr.decode("utf-8", "replace").strip()
    if "wasm trap: interrupt" in text:
        return LroError("timeout", f"limit exceeded: the call ran longer than its {_duration(deadline)} time limit and was stopped")
    # wasmtime-py has no ResourceLimiter callback, so the host cannot see the cap being hit as
    # the Rust host does. A refused allocation aborts the guest: with Rust's message on stderr,
    # or, when even that cannot be printed (or the arguments themselves do not fit), with a bare
    # `unreachable` and nothing on stderr; a panic always prints its message first.
    silent_abort = "wasm `unreachable` instruction executed" in text and not guest
    if "memory allocation of" in guest or silent_abort:
        return LroError("memory-limit", f"limit exceeded: the call needed more than its {memory >> 20} MiB memory limit and was stopped")
    fault = _MEMORY_FAULT.search(text)
    # The guest's stack lives at the bottom of its 32-bit memory and grows down: running off
    # it wraps to an address near or above 4 GiB.
    if "call stack exhausted" in text or (fault and int(fault.group(1), 16) >= 0xFFFF0000):
        return LroError("stack-overflow", "limit exceeded: the call stack overflowed (endless recursion, "
                        "or nesting too deep) and the call was stopped")
    message = f"the component trapped: {cause or text}"
    if guest:
        message += f"; the component said: {guest}"
    return LroError("trap", message)


# ---- compiling, caching, ticking ------------------------------------------------------------


def _cache_dir() -> Optional[str]:
    """$LRO_CACHE_DIR (empty: no cache), else $XDG_CACHE_HOME/lro, else ~/.cache/lro."""
    if "LRO_CACHE_DIR" in os.environ:
        return os.environ["LRO_CACHE_DIR"] or None
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "lro")
    return os.path.join(os.environ["HOME"], ".cache", "lro") if os.environ.get("HOME") else None


def _private_dir(dir: str) -> bool:
    """Creates `dir` (0700) if needed; true only if this user owns it and no one else can write."""
    try:
        _makedirs_private(dir)
        st = os.stat(dir)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o022 == 0


def _compile(engine: Engine, wasm: bytes) -> Component:
    """Compiles the component (about a second): what the cache saves."""
    return Component(engine, wasm)


def _load(engine: Engine, wasm: bytes, cache_dir: Optional[str]) -> Component:
    """Compiles the component, or loads wasmtime's own compiled artifact from a private cache
    directory. Deserialising trusts the file, so it is only read from a directory no one else
    can write, under a name derived from the component, wasmtime's version and the engine
    settings, and renamed into place only once fully written."""
    if not cache_dir or not _private_dir(cache_dir):
        return _compile(engine, wasm)
    key = hashlib.sha256(wasm + f"|wasmtime-py {importlib.metadata.version('wasmtime')}|epoch".encode())
    path = os.path.join(cache_dir, f"lro-py-{key.hexdigest()[:32]}.cwasm")
    try:
        with open(path, "rb") as f:
            return Component.deserialize(engine, f.read())
    except (OSError, WasmtimeError):
        pass  # missing, or from another wasmtime: compile it again
    component = _compile(engine, wasm)
    tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"  # unique per writer
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(component.serialize())
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return component


def _start_ticker(engine: Engine) -> None:
    """Advances the engine's epoch every TICK from a daemon thread, which ends with the engine.
    Wasm runs with the GIL released (ctypes), so the ticker runs during a call."""
    ref = weakref.ref(engine)

    def tick() -> None:
        while True:
            time.sleep(TICK)
            engine = ref()
            if engine is None:
                return
            engine.increment_epoch()
            del engine

    threading.Thread(target=tick, name="lro-epoch", daemon=True).start()
