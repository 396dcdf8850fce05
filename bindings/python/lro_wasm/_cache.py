"""Compiling the component, and caching wasmtime's compiled artifact in a private directory."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import stat
import threading
from typing import Optional

from wasmtime import Engine, WasmtimeError
from wasmtime.component import Component

from ._directory import makedirs_private, writable_by_others
from ._errors import LroError


def cache_dir() -> Optional[str]:
    """$LRO_CACHE_DIR (empty: no cache), else $XDG_CACHE_HOME/lro, else ~/.cache/lro."""
    if "LRO_CACHE_DIR" in os.environ:
        return os.environ["LRO_CACHE_DIR"] or None
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "lro")
    return os.path.join(os.environ["HOME"], ".cache", "lro") if os.environ.get("HOME") else None


def _private_dir(dir: str) -> bool:
    """Creates `dir` (0700) if needed; true only if this user owns it and no one else can write."""
    try:
        makedirs_private(dir)
        st = os.stat(dir)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and writable_by_others(st) is None


def compile_component(engine: Engine, wasm: bytes) -> Component:
    """Compiles the component (about a second): what the cache saves."""
    return Component(engine, wasm)


def read(path: str) -> bytes:
    """The component's bytes; LroError `load` naming the file when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise LroError("load", f"{path}: cannot read the component: {e.strerror}") from None


def load(engine: Engine, wasm: bytes, cache: Optional[str], path: str) -> Component:
    """Compiles the component (`path` names it in errors), or loads wasmtime's own compiled
    artifact from a private cache directory. Deserialising trusts the file, so it is only read
    from a directory no one else can write, under a name derived from the component, wasmtime's
    version and the engine settings, and renamed into place only once fully written."""
    if not cache or not _private_dir(cache):
        return _compiled(engine, wasm, path)
    key = hashlib.sha256(wasm + f"|wasmtime-py {importlib.metadata.version('wasmtime')}|epoch".encode())
    artifact = os.path.join(cache, f"lro-py-{key.hexdigest()[:32]}.cwasm")
    try:
        with open(artifact, "rb") as f:
            return Component.deserialize(engine, f.read())
    except (OSError, WasmtimeError):
        pass  # missing, or from another wasmtime: compile it again
    component = _compiled(engine, wasm, path)
    tmp = f"{artifact}.{os.getpid()}-{threading.get_ident()}.tmp"  # unique per writer
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(component.serialize())
        os.replace(tmp, artifact)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return component


def _compiled(engine: Engine, wasm: bytes, path: str) -> Component:
    try:
        return compile_component(engine, wasm)
    except WasmtimeError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise LroError("load", f"{path}: not a component wasmtime can load: {first}") from None
