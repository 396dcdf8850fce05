"""The JSON form of docs/HOSTS.md <-> wasmtime-py values, directed by the component's own types:
record fields, enum cases, variant cases and integer ranges all come from the loaded component,
so nothing here restates the WIT but the one list below that the types cannot give."""

from __future__ import annotations

import json
from typing import Any

try:  # optional (`pip install lro-wasm[orjson]`): several times faster than json for records
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None

from wasmtime.component import (
    Bool,
    EnumType,
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

from ._errors import LroError, bad, kind_at

# WIT `json` fields and arguments (`type json = string`): text (a str, or UTF-8 bytes) is passed
# as it is, any other value is serialised for them (HOSTS.md). This list cannot be derived: the component model erases a type alias of a
# primitive. wasmtime-py lists `json` among an interface's type exports, but every field and
# parameter declared `json` has the same plain `String()` type as any other string, with nothing
# to tell them apart. tests/test_host.py checks that each name here still is a string field or
# parameter of the component's functions.
JSON_INPUTS = frozenset({"records", "arguments", "result", "meta", "params", "input", "tools"})

# Config keys renamed to the spec's names, so that an old key gets a pointer to its new name.
# Only a hint: it is given only when the new name is a field of the record being converted.
RENAMED = {"threshold": "threshold_tokens", "ttl": "ttl_seconds", "dir": "output_dir", "native": "extract_tool"}


def dumps(value: Any, where: str = "value") -> str:
    """`value` as compact JSON text (`json.dumps(v, separators=(",", ":"), ensure_ascii=False)`),
    by orjson when it is installed. orjson refuses a few values json takes (non-string keys,
    integers over 64 bits): those fall back to json, so whatever json serialises is accepted
    either way (orjson also serialises datetimes, UUIDs, enums and dataclasses, and writes NaN as
    null where json writes NaN). A value neither can serialise is an LroError naming `where`."""
    if orjson is not None:
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError:
            pass
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise LroError(kind_at(where), f"{where}: cannot be serialised as JSON: {e}") from None


def json_text(value: Any, where: str) -> str:
    """A WIT `json` input: text passed verbatim (UTF-8 bytes decoded, never parsed or
    serialised again), any other value serialised."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as e:
            raise LroError(kind_at(where), f"{where}: JSON bytes must be UTF-8: {e.reason} at byte {e.start}") from None
    return dumps(value, where)


def snake(kebab: str) -> str:
    """A WIT name as the JSON form writes it: `schema-version` -> `schema_version`."""
    return kebab.replace("-", "_")


def field_names(ty: RecordType) -> list:
    """The JSON-form names of a record type's fields, in WIT order."""
    return [snake(kebab) for kebab, _ in ty.fields]


def unknown_fields(where: str, given: Any, known: Any) -> LroError | None:
    """An error naming the keys of `given` that are not in `known`, or None."""
    unknown = sorted(set(given) - set(known))
    if not unknown:
        return None
    named = [f"{k} (now {RENAMED[k]})" if RENAMED.get(k) in known else k for k in unknown]
    return LroError(kind_at(where), f"{where}: unknown field(s) {', '.join(named)}")


def lower(ty: Any, value: Any, where: str) -> Any:
    """A JSON-form value -> the value wasmtime-py takes for `ty`; LroError naming `where` when
    it does not fit."""
    if isinstance(ty, RecordType):
        if not isinstance(value, dict):
            raise bad(where, "an object", value)
        error = unknown_fields(where, value, field_names(ty))
        if error is not None:
            raise error
        record = Record()
        for kebab, field_type in ty.fields:  # wasmtime-py reads record fields by kebab-case name
            name = snake(kebab)
            setattr(record, kebab, lower(field_type, value.get(name), f"{where}.{name}"))
        return record
    if isinstance(ty, OptionType):
        return None if value is None else lower(ty.payload, value, where)
    if isinstance(ty, ListType):
        if not isinstance(value, (list, tuple)):
            raise bad(where, "an array", value)
        return [lower(ty.element, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(ty, EnumType):
        if value not in ty.names:
            raise bad(where, " or ".join(map(repr, ty.names)), value)
        return value
    if isinstance(ty, String):
        if isinstance(value, str):
            return value
        if where.rsplit(".", 1)[-1] in JSON_INPUTS and value is not None:
            return json_text(value, where)
        raise bad(where, "a string", value)
    if isinstance(ty, Bool):
        if not isinstance(value, bool):
            raise bad(where, "true or false", value)
        return value
    for int_type, bits in ((U8, 8), (U32, 32), (U64, 64)):
        if isinstance(ty, int_type):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << bits:
                raise bad(where, f"an integer from 0 to {(1 << bits) - 1}", value)
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


def lift(ty: Any, value: Any) -> Any:
    """A wasmtime-py value of type `ty` -> the JSON form; a WIT error raises LroError."""
    if isinstance(ty, RecordType):
        return {snake(kebab): lift(t, getattr(value, kebab)) for kebab, t in ty.fields}
    if isinstance(ty, ResultType):
        name, case_type, payload = _case([("ok", ty.ok), ("err", ty.err)], value)
        if name == "err":
            error = lift(case_type, payload)
            raise LroError(error["kind"], error["message"])
        return None if case_type is None else lift(case_type, payload)
    if isinstance(ty, VariantType):
        name, case_type, payload = _case(ty.cases, value)
        lifted = None if case_type is None else lift(case_type, payload)
        if isinstance(lifted, dict):  # outcome, tool-outcome, event
            return {"kind": name, **lifted}
        return {"kind": name, "message": lifted}  # error: every case carries a string
    if isinstance(ty, OptionType):
        return None if value is None else lift(ty.payload, value)
    if isinstance(ty, ListType):
        return [lift(ty.element, v) for v in value]
    return value  # string, bool, integer, enum name
