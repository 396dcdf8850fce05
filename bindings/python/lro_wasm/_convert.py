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
    text = dumps_utf8(value, where)
    return text.decode("utf-8") if isinstance(text, bytes) else text


def dumps_utf8(value: Any, where: str = "value") -> "str | bytes":
    """`dumps`, but orjson's UTF-8 bytes are returned as they are, not decoded: the C API takes
    UTF-8, so decoding them only for the call to encode them again would copy them twice."""
    if orjson is not None:
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise LroError(kind_at(where), f"{where}: cannot be serialised as JSON: {e}") from None


def json_text(value: Any, where: str) -> str:
    """A WIT `json` input: text passed verbatim (UTF-8 bytes decoded, never parsed or
    serialised again), any other value serialised."""
    text = json_utf8(value, where)
    return text.decode("utf-8") if isinstance(text, bytes) else text


def json_utf8(value: Any, where: str) -> "str | bytes":
    """A WIT `json` input as text to hand to the C API: a str as it is, bytes checked to be
    UTF-8 but not decoded, any other value serialised (`dumps_utf8`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = value if type(value) is bytes else bytes(value)
        if not data.isascii():  # ASCII is UTF-8; anything else is checked by decoding it
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise LroError(kind_at(where), f"{where}: JSON bytes must be UTF-8: {e.reason} at byte {e.start}") from None
        return data
    return dumps_utf8(value, where)


def snake(kebab: str) -> str:
    """A WIT name as the JSON form writes it: `schema-version` -> `schema_version`."""
    return kebab.replace("-", "_")


def field_names(ty: RecordType) -> list:
    """The JSON-form names of a record type's fields, in WIT order."""
    return list(_shape(ty).names)


def unknown_fields(where: str, given: Any, known: Any) -> LroError | None:
    """An error naming the keys of `given` that are not in `known`, or None."""
    unknown = sorted(set(given) - set(known))
    if not unknown:
        return None
    named = [f"{k} (now {RENAMED[k]})" if RENAMED.get(k) in known else k for k in unknown]
    return LroError(kind_at(where), f"{where}: unknown field(s) {', '.join(named)}")


# The component's types, read once. wasmtime-py builds a type's fields, cases and classes anew
# from the C API on every access, which cost a tiny call more than the component itself did; the
# types a call uses (its parameters and result, the config and event types) live as long as the
# loaded component, so each is turned once into this tree of plain shapes and kept.


class _Record:
    def __init__(self, ty: RecordType):
        self.fields = [(kebab, snake(kebab), _build(t)) for kebab, t in ty.fields]
        self.names = tuple(name for _, name, _ in self.fields)
        self.known = frozenset(self.names)


class _Option:
    def __init__(self, ty: OptionType):
        self.payload = _build(ty.payload)


class _List:
    def __init__(self, ty: ListType):
        self.element = _build(ty.element)


class _Enum:
    def __init__(self, ty: EnumType):
        self.names = tuple(ty.names)
        self.expected = " or ".join(map(repr, self.names))


class _Cases:
    """A variant's or result's cases, each as (name, payload shape or None, Python classes).
    wasmtime-py returns `Variant(tag, payload)` only when the Python classes of two cases
    overlap, else the bare payload (`tagged`)."""

    def __init__(self, cases: list, result: bool = False):
        self.result = result
        self.cases = [(name, None if t is None else _build(t), frozenset(_classes(t))) for name, t in cases]
        self.by_name = {name: shape for name, shape, _ in self.cases}
        seen: set = set()
        self.tagged = False
        for _, _, classes in self.cases:
            self.tagged |= bool(classes & seen)
            seen |= classes


class _Scalar:
    def __init__(self, kind: str, bits: int = 0):
        self.kind, self.bits = kind, bits


def _build(ty: Any) -> Any:
    if isinstance(ty, RecordType):
        return _Record(ty)
    if isinstance(ty, OptionType):
        return _Option(ty)
    if isinstance(ty, ListType):
        return _List(ty)
    if isinstance(ty, EnumType):
        return _Enum(ty)
    if isinstance(ty, ResultType):
        return _Cases([("ok", ty.ok), ("err", ty.err)], result=True)
    if isinstance(ty, VariantType):
        return _Cases(ty.cases)
    if isinstance(ty, String):
        return _Scalar("string")
    if isinstance(ty, Bool):
        return _Scalar("bool")
    for int_type, bits in ((U8, 8), (U32, 32), (U64, 64)):
        if isinstance(ty, int_type):
            return _Scalar("int", bits)
    return _Scalar(type(ty).__name__)  # not in this WIT: lower refuses it


# id(type) -> (type, shape); the type is kept so that its id is not reused.
_SHAPES: dict = {}


def _shape(ty: Any) -> Any:
    hit = _SHAPES.get(id(ty))
    if hit is None or hit[0] is not ty:
        hit = _SHAPES[id(ty)] = (ty, _build(ty))
    return hit[1]


def lower(ty: Any, value: Any, where: str) -> Any:
    """A JSON-form value -> the value wasmtime-py takes for `ty`; LroError naming `where` when
    it does not fit."""
    return _lower(_shape(ty), value, where)


def _lower(shape: Any, value: Any, where: str) -> Any:
    if isinstance(shape, _Record):
        if not isinstance(value, dict):
            raise bad(where, "an object", value)
        if not shape.known.issuperset(value):
            raise unknown_fields(where, value, shape.names)
        record = Record()
        for kebab, name, field in shape.fields:  # wasmtime-py reads record fields by kebab-case name
            setattr(record, kebab, _lower(field, value.get(name), f"{where}.{name}"))
        return record
    if isinstance(shape, _Option):
        return None if value is None else _lower(shape.payload, value, where)
    if isinstance(shape, _List):
        if not isinstance(value, (list, tuple)):
            raise bad(where, "an array", value)
        return [_lower(shape.element, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(shape, _Enum):
        if value not in shape.names:
            raise bad(where, shape.expected, value)
        return value
    kind = shape.kind if isinstance(shape, _Scalar) else type(shape).__name__
    if kind == "string":
        if isinstance(value, str):
            return value
        if where.rsplit(".", 1)[-1] in JSON_INPUTS and value is not None:
            return json_text(value, where)
        raise bad(where, "a string", value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad(where, "true or false", value)
        return value
    if kind == "int":
        bits = shape.bits
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << bits:
            raise bad(where, f"an integer from 0 to {(1 << bits) - 1}", value)
        return value
    raise TypeError(f"{where}: lro_wasm cannot pass a {kind}")  # not in this WIT


def _classes(ty: Any) -> set:
    found: set = set()
    if ty is None:
        found.add(object)
    else:
        ty.add_classes(found)
    return found


def _case(shape: _Cases, value: Any) -> tuple:
    """(case name, payload shape, payload) of a variant-like value, by wasmtime-py's rule
    (`_Cases`) for when a payload comes bare."""
    if shape.tagged:
        return value.tag, shape.by_name[value.tag], value.payload
    for name, payload, classes in shape.cases:
        if payload is None and value is None:
            return name, None, None
        if payload is not None and isinstance(value, tuple(classes)):
            return name, payload, value
    raise TypeError(f"a value of type {type(value).__name__} fits no case of {[c for c, _, _ in shape.cases]}")


def lift(ty: Any, value: Any) -> Any:
    """A wasmtime-py value of type `ty` -> the JSON form; a WIT error raises LroError."""
    return _lift(_shape(ty), value)


def _lift(shape: Any, value: Any) -> Any:
    if isinstance(shape, _Record):
        return {name: _lift(field, getattr(value, kebab)) for kebab, name, field in shape.fields}
    if isinstance(shape, _Cases):
        name, payload_shape, payload = _case(shape, value)
        if shape.result:
            if name == "err":
                error = _lift(payload_shape, payload)
                raise LroError(error["kind"], error["message"])
            return None if payload_shape is None else _lift(payload_shape, payload)
        lifted = None if payload_shape is None else _lift(payload_shape, payload)
        if isinstance(lifted, dict):  # outcome, tool-outcome, event
            return {"kind": name, **lifted}
        return {"kind": name, "message": lifted}  # error: every case carries a string
    if isinstance(shape, _Option):
        return None if value is None else _lift(shape.payload, value)
    if isinstance(shape, _List):
        return [_lift(shape.element, v) for v in value]
    return value  # string, bool, integer, enum name
