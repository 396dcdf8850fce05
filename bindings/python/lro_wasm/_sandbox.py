"""The sandboxed call (docs/HOSTS.md, steps 2, 3 and 5): a fresh store and instance, or one kept
by the calling thread for small calls that run no user filter, at most one preopened directory, a deadline and a memory cap, events collected in order, and a trap
turned into an LroError with a host kind and no wasmtime backtrace."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
import threading
import time
import weakref
from typing import Any, Callable, NamedTuple, Optional

from wasmtime import Config as EngineConfig
from wasmtime import Engine, Store, WasiConfig, WasmtimeError
from wasmtime.component import Component, FuncType, Linker

from . import _capi
from ._convert import _shape, lift, lower, snake
from ._directory import Unusable
from ._errors import LroError

PACKAGE = "lro:component"
TICK = 0.01  # seconds per epoch tick; deadlines are counted in ticks
STDERR_CAP = 64 * 1024
# The largest arguments (bytes of text) a call may have to run in a kept instance: a larger call
# would leave its instance's linear memory grown to several times its arguments for as long as
# the instance is kept, and instantiating is a small part of its cost anyway.
REUSE_MAX_BYTES = 1 << 20
# Kept instances per thread (one per preopen and memory cap), least recently used dropped first.
KEPT_PER_THREAD = 4


class Function(NamedTuple):
    """An exported function of the component: its parameters `[(name, ValType)]`, its result
    type, where to find it, and its compiled `_capi.Signature` (None on the public-API path)."""

    params: list
    result: Any
    index: Any
    signature: Any


def new_engine() -> Engine:
    """An engine whose stores can be interrupted; the `Sandbox` made with it runs its ticker."""
    cfg = EngineConfig()
    cfg.epoch_interruption = True
    return Engine(cfg)


class Sandbox:
    """The component, its exported functions (by their Python names: `rewrite-tools` is
    `rewrite_tools`) and a linker providing WASI and the `events` import. One sandbox may be
    used by many threads at once: a store and instance serve one thread.

    Calls go through wasmtime's C API directly (`_capi`) when the installed wasmtime-py is the
    one it was written for, else through wasmtime-py's public API (`fast=False` forces that)."""

    def __init__(self, engine: Engine, component: Component, path: str, fast: Optional[bool] = None):
        self._engine, self._component = engine, component
        weakref.finalize(self, _start_ticker(engine).set)
        if fast and not _capi.AVAILABLE:
            raise LroError("load", f"lro_wasm's fast path is unavailable: {_capi.REASON}")
        self.fast = _capi.AVAILABLE if fast is None else fast
        types = component.type
        self.functions: dict = {}
        for full, item in types.exports(engine).items():
            if not full.startswith(f"{PACKAGE}/"):
                continue
            interface = component.get_export_index(full)
            for name, export in item.ty.exports(engine).items():
                if isinstance(export.ty, FuncType):
                    index = component.get_export_index(name, interface)
                    params, result = export.ty.params, export.ty.result
                    signature = None
                    if self.fast:
                        signature = _capi.Signature([(snake(p), _shape(t)) for p, t in params],
                                                    None if result is None else _shape(result))
                    self.functions[snake(name)] = Function(params, result, index, signature)
        events = [name for name in types.imports(engine) if name.startswith(f"{PACKAGE}/events@")]
        if len(events) != 1:
            raise LroError("load", f"{path}: the component imports no {PACKAGE}/events interface: not an lro component")
        self._event_type = types.imports(engine)[events[0]].ty.exports(engine)["emit"].ty.params[0][1]

        self._scratch = tempfile.mkdtemp(prefix="lro-py-")  # private (0700): guest stderr files
        weakref.finalize(self, shutil.rmtree, self._scratch, ignore_errors=True)
        self._linker = Linker(engine)
        self._linker.add_wasip2()
        # The events of the call running on this thread (set per call).
        self._local = threading.local()
        self._serial = itertools.count()
        self._checkers: dict = {}
        with self._linker.root() as root:
            with root.add_instance(events[0]) as instance:
                if self.fast:
                    # Kept as long as the linker: wasmtime calls it. It holds no reference to
                    # the sandbox, only to the thread-local events.
                    self._emit_callback = _capi.add_func(instance, "emit", [_shape(self._event_type)],
                                                         _collector(self._local))
                else:
                    instance.add_func("emit", self._emit)

    def check(self, ty: Any, value: Any, where: str) -> None:
        """Checks that `value` (the JSON form) is a `ty`, as passing it would: LroError naming
        `where` when it is not."""
        if not self.fast:
            lower(ty, value, where)
            return
        hit = self._checkers.get(id(ty))
        if hit is None or hit[0] is not ty:
            hit = self._checkers[id(ty)] = (ty, _capi.lowerer(_shape(ty), where))
        _capi.check(hit[1], value, where)

    def lower_first(self, name: str, value: Any) -> Any:
        """The first argument of the export `name` (the JSON form), checked and lowered now
        (LroError naming it when it does not fit), for `run(..., first=)`."""
        function = self.functions[name]
        if self.fast:
            return function.signature.lower([value])
        pname, ty = function.params[0]
        lower(ty, value, snake(pname))  # checked now; lowered again by run()
        return dict(value)

    def set_field(self, name: str, first: Any, field: str, value: Any) -> None:
        """Sets the field `field` of a record `first` from `lower_first`."""
        if self.fast:
            self.functions[name].signature.set_field(first, 0, field, value)
        else:
            first[field] = value

    def run(self, name: str, args: list, *, preopen: Optional[tuple], deadline: float, memory: int,
            deliver: Callable[[dict], None], first: Any = None, reuse: bool = False) -> Any:
        """Calls the export `name` with `args` (the JSON form; LroError naming the argument
        that does not fit), after `first` when given (the first argument, from `lower_first`):
        `preopen` is `(directory, writable, identity)` or None. Every event is passed to
        `deliver`, in order, before this returns or raises; the result is lifted to the JSON
        form.

        The call gets a fresh store, unless `reuse` (a call that runs no user filter) and its
        arguments hold at most REUSE_MAX_BYTES: then it runs in a store and instance this
        thread kept from an earlier call with the same preopen (the same directory, not only
        the same path) and memory cap, made now if there is none. The component keeps no state
        between calls that could change a result; instantiating costs more than such a call
        (docs/HOSTS.md, step 2). A store that trapped is never kept."""
        function = self.functions[name]
        if self.fast:
            lowered = function.signature.lower(args, first)
            # Only on the C API path, where the arguments' sizes are known without walking them.
            reuse = reuse and _text_bytes(lowered.keep) <= REUSE_MAX_BYTES
        else:
            reuse = False
            if first is not None:
                args = [first, *args]
            lowered = [lower(ty, value, snake(pname)) for (pname, ty), value in zip(function.params, args)]
        key = (preopen, memory)
        kept = self._kept().pop(key, None) if reuse else None
        if kept is not None:
            store, instance, stderr_path = kept.store, kept.instance, kept.stderr_path
            try:
                stderr_from = os.stat(stderr_path).st_size
            except OSError:
                stderr_from = 0
        else:
            # Guest stderr goes to a file, read only when the call traps. (A Python callback,
            # `stderr_custom`, is called from wasmtime's tokio threads, which then abort noisily
            # at interpreter exit.) Stdout is left unconfigured, so it goes nowhere.
            if reuse:
                stderr_path = os.path.join(self._scratch, f"stderr-{threading.get_ident()}-{next(self._serial)}")
            else:
                stderr_path = os.path.join(self._scratch, f"stderr-{threading.get_ident()}")
            stderr_from = 0
            wasi = WasiConfig()
            wasi.stderr_file = stderr_path
            if preopen:
                # The same absolute path inside as outside, so descriptor paths are real paths.
                # wasmtime opens the directory here (prepare_dir checked that it can, but it may
                # have changed since).
                try:
                    wasi.preopen_dir(preopen[0], preopen[0], fs_mutable=preopen[1])
                except WasmtimeError:
                    raise Unusable(f"offload directory {preopen[0]}: cannot open it") from None
            store = Store(self._engine)
            store.set_wasi(wasi)
            store.set_limits(memory_size=memory)
            instance = None
        store.set_epoch_deadline(max(1, round(deadline / TICK)))
        self._local.events = []
        raw = result = failure = None
        try:
            if instance is None:
                instance = self._linker.instantiate(store, self._component)
                if reuse:
                    kept = _Kept(store, instance, stderr_path)
            func = kept.funcs.get(name) if kept is not None else None
            if func is None:
                func = instance.get_func(store, function.index)
                if kept is not None:
                    kept.funcs[name] = func
            if self.fast:
                result = _capi.call(func, store, function.signature, lowered)
            else:
                raw = func(store, *lowered)
            if kept is not None:
                # The result is already the host's copy; this lets the instance be entered again.
                func.post_return(store)
        except WasmtimeError as error:
            # Only the message is kept, and the trap's traceback is dropped: wasmtime-py raises
            # it from a frame that holds it in a local, so the traceback, through that frame
            # and the one holding `store`, makes a reference cycle that would keep the trapped
            # store's linear memory (up to the memory cap) alive until the cycle collector ran.
            # Raising from in here would chain the trap to the LroError, with the same effect.
            failure = trap_error(error, _head(stderr_path, stderr_from), deadline, memory)
            error.__traceback__ = None
        finally:
            events, self._local.events = self._local.events, None
            # Delivered before the call returns (or raises), in order.
            for event in events:
                deliver(event)
        if failure is None and kept is not None:
            self._keep(key, kept)
        elif reuse and kept is None:
            _remove(stderr_path)  # instantiation failed: no _Kept owns the file
        # Freed now, by reference counting, whatever the outcome (a kept store lives on in
        # this thread's cache).
        store = instance = func = wasi = lowered = kept = None
        if failure is not None:
            raise failure
        if self.fast:
            return None if result is None else result.lift(function.signature.lift)
        return lift(function.result, raw)

    def _kept(self) -> dict:
        """This thread's kept stores, {(preopen, memory): _Kept}, least recently used first."""
        kept = getattr(self._local, "kept", None)
        if kept is None:
            kept = self._local.kept = {}
        return kept

    def _keep(self, key: tuple, kept: "_Kept") -> None:
        cache = self._kept()
        cache[key] = kept
        while len(cache) > KEPT_PER_THREAD:
            del cache[next(iter(cache))]

    def _emit(self, _store: Any, event: Any) -> None:
        # Lifted now (the value is only valid during the call), delivered by run().
        pending = getattr(self._local, "events", None)
        if pending is not None:
            pending.append(lift(self._event_type, event))


def _collector(local: threading.local) -> Callable[[dict], None]:
    """Appends an event to the list of the call running on this thread (none: dropped)."""

    def collect(event: dict) -> None:
        pending = getattr(local, "events", None)
        if pending is not None:
            pending.append(event)

    return collect


def _duration(seconds: float) -> str:
    """As Rust's Duration prints it (`1s`, `1.5s`, `10ms`), so messages match the Rust host's."""
    return f"{seconds:g}s" if seconds >= 1 else f"{seconds * 1000:g}ms"


def _head(path: str, start: int = 0) -> bytes:
    """What the guest wrote to its stderr file from `start` on (at most STDERR_CAP bytes)."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read(STDERR_CAP)
    except OSError:
        return b""


def _text_bytes(keep: list) -> int:
    """The bytes of text among a lowered call's buffers: its string arguments."""
    return sum(len(item) for item in keep if isinstance(item, (str, bytes)))


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


class _Kept:
    """A store and instance kept by one thread for its next calls with the same preopen and
    memory cap; its stderr file goes with it."""

    __slots__ = ("store", "instance", "stderr_path", "funcs", "__weakref__")

    def __init__(self, store: Any, instance: Any, stderr_path: str):
        self.store, self.instance, self.stderr_path = store, instance, stderr_path
        self.funcs: dict = {}
        weakref.finalize(self, _remove, stderr_path)


_MEMORY_FAULT = re.compile(r"memory fault at wasm address 0x([0-9a-f]+)")


def trap_error(error: WasmtimeError, stderr: bytes, deadline: float, memory: int) -> LroError:
    """A trap as an LroError with a host kind, without wasmtime's backtrace."""
    text = str(error)
    cause = text.split("Caused by:", 1)[-1].strip()
    cause = " ".join(line.strip().split(": ", 1)[-1] if line.strip()[:1].isdigit() else line.strip()
                     for line in cause.splitlines() if line.strip())
    guest = stderr.decode("utf-8", "replace").strip()
    if "wasm trap: interrupt" in text:
        return LroError("timeout", f"limit exceeded: the call ran longer than its {_duration(deadline)} time limit and was stopped; "
                        "raise it with Lro(filter_deadline=SECONDS) (extract, call_tool, query) or Lro(deadline=SECONDS) "
                        "(the other calls)")
    # wasmtime-py has no ResourceLimiter callback, so the host cannot see the cap being hit as
    # the Rust host does. A refused allocation aborts the guest: with Rust's message on stderr,
    # or, when even that cannot be printed (or the arguments themselves do not fit), with a bare
    # `unreachable` and nothing on stderr; a panic always prints its message first.
    silent_abort = "wasm `unreachable` instruction executed" in text and not guest
    if "memory allocation of" in guest or silent_abort:
        return LroError("memory-limit", f"limit exceeded: the call needed more than its {memory >> 20} MiB memory limit and was stopped; "
                        "raise it with Lro(filter_memory=BYTES) (extract, call_tool, query) or Lro(memory=BYTES) "
                        "(the other calls)")
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


def _start_ticker(engine: Engine) -> threading.Event:
    """Advances the engine's epoch every TICK from a daemon thread until the event returned is
    set. Wasm runs with the GIL released (ctypes), so the ticker runs during a call.

    The thread holds the engine itself, so the engine is freed only after its last tick, by the
    thread. It used to hold a weak reference, which CPython clears only after the object's
    finaliser has run: an engine being freed (wasmtime-py's finaliser releases the GIL inside
    the C call) could be handed back to the ticker, which then ticked freed memory and crashed
    the process (a segfault seen in CI)."""
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(TICK):
            engine.increment_epoch()

    threading.Thread(target=tick, name="lro-epoch", daemon=True).start()
    return stop
