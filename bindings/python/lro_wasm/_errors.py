"""The one exception of every lro call, and the error kinds the host adds to the WIT's."""

from __future__ import annotations

import json
from typing import Any

#: Error kinds raised by this host rather than returned by the component (not WIT cases).
HOST_KINDS = frozenset({"timeout", "memory-limit", "stack-overflow", "trap", "directory", "load"})


class LroError(Exception):
    """An error of an lro call: `kind` is the WIT error case (`"not-found"`, ...) or one of
    `HOST_KINDS`; `message` is the text."""

    __module__ = "lro_wasm"  # its public home: `from lro_wasm import LroError`

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message

    def __reduce__(self) -> tuple:  # picklable, e.g. across a process pool
        return (LroError, (self.kind, self.message))


def bad(where: str, expected: str, value: Any) -> LroError:
    """A value of the wrong shape: `invalid-config` inside `config`, else `invalid-input`."""
    return LroError(kind_at(where), f"{where}: expected {expected}, got {json.dumps(value, default=repr)[:80]}")


def kind_at(where: str) -> str:
    return "invalid-config" if where.startswith("config") else "invalid-input"
