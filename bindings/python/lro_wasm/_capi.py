"""The component's calls through wasmtime's C API, with the JSON form written into and read out of
the C API's values directly (the fast path; `_convert` holds the public-API path it replaces).

wasmtime-py's `Func.__call__` fetches the function's type from the C API on every call and walks
it, building every record field list and variant case list again, and copies each string three
times on its way in (`str.encode`, `from_buffer_copy`, `memmove`). Here each function's
parameters and result are compiled once, from the same shapes `_convert` reads, into lowerers
that write `wasmtime_component_val_t`s with `struct` and lifters that read them back. Every
buffer a call's parameters use is owned by Python: wasmtime only borrows its arguments (its C
API converts them into Rust values, copying what it keeps, before the call starts), so a string
is handed to it as a pointer into the Python object that holds its UTF-8 text, never copied
before wasmtime copies it. The result is wasmtime's to allocate and ours to delete, once.

This relies on wasmtime-py's private `_ffi` bindings and on the C API's layout, so it is used
only on the wasmtime-py series it was written against, after checking that layout
(`unavailable()`); on anything else lro_wasm calls the component through wasmtime-py's public
API instead, which gives the same results.

It waits on wasmtime-py: the nearest open issue is bytecodealliance/wasmtime-py#137 (the cost of
converting arguments and results, for core functions); docs/UPSTREAM.md has the report for
components, and tests/test_fast_path.py fails when `Func.__call__` stops reading the function's
type on every call."""

from __future__ import annotations

import ctypes
import importlib.metadata
import struct
import sys
from typing import Any, Callable, Optional

from wasmtime import WasmtimeError

from ._convert import (
    _Cases,
    _Enum,
    _List,
    _Option,
    _Record,
    _Scalar,
    JSON_INPUTS,
    bad,
    json_utf8,
    unknown_fields,
)

# The wasmtime-py series whose `_ffi` and C API layout this module was written against
# (pyproject.toml pins wasmtime>=50.0.1,<51).
SERIES = "50."


def _version() -> str:
    try:
        return importlib.metadata.version("wasmtime")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _layout_problem() -> Optional[str]:
    """What differs from the C API layout this module writes, or None."""
    if sys.implementation.name != "cpython":
        return f"{sys.implementation.name} (the fast path needs CPython's C API)"
    if sys.byteorder != "little" or ctypes.sizeof(ctypes.c_void_p) != 8:
        return "not a little-endian 64-bit platform"
    try:
        from wasmtime import _ffi as ffi

        val, entry = ffi.wasmtime_component_val_t, ffi.wasmtime_component_valrecord_entry_t
        expected = {
            "sizeof(val)": (ctypes.sizeof(val), 32),
            "sizeof(record entry)": (ctypes.sizeof(entry), 48),
            "val.of": (val.of.offset, 8),
            "record entry.val": (entry.val.offset, 16),
            "byte vec.data": (ffi.wasm_byte_vec_t.data.offset, 8),
            "list.data": (ffi.wasmtime_component_vallist_t.data.offset, 8),
            "record.data": (ffi.wasmtime_component_valrecord_t.data.offset, 8),
            "variant.val": (ffi.wasmtime_component_valvariant_t.val.offset, 16),
            "result.val": (ffi.wasmtime_component_valresult_t.val.offset, 8),
        }
        kinds = {"BOOL": 0, "S8": 1, "U8": 2, "S16": 3, "U16": 4, "S32": 5, "U32": 6, "S64": 7,
                 "U64": 8, "F32": 9, "F64": 10, "CHAR": 11, "STRING": 12, "LIST": 13, "RECORD": 14,
                 "TUPLE": 15, "VARIANT": 16, "ENUM": 17, "OPTION": 18, "RESULT": 19, "FLAGS": 20}
        for kind, code in kinds.items():
            expected[f"WASMTIME_COMPONENT_{kind}"] = (getattr(ffi, f"WASMTIME_COMPONENT_{kind}").value, code)
        for name in ("wasmtime_component_func_call", "wasmtime_component_val_delete",
                     "wasmtime_component_linker_instance_add_func", "wasmtime_component_func_callback_t",
                     "wasmtime_error_new"):
            getattr(ffi, name)
        from wasmtime import _bindings

        _bindings._wasmtime_component_func_call, _bindings._wasmtime_component_val_delete
    except (ImportError, AttributeError) as e:
        return f"wasmtime-py's private bindings changed: {e}"
    wrong = [f"{what} is {got}, not {want}" for what, (got, want) in expected.items() if got != want]
    return "; ".join(wrong) or None


def unavailable() -> Optional[str]:
    """Why the fast path cannot be used with the installed wasmtime-py, or None when it can."""
    version = _version()
    if not version.startswith(SERIES):
        return f"wasmtime-py {version} is not the {SERIES}x series the fast path was written against"
    return _layout_problem()


REASON = unavailable()
AVAILABLE = REASON is None

if AVAILABLE:
    from wasmtime import _ffi as ffi

    _VAL = ffi.wasmtime_component_val_t
    from wasmtime import _bindings

    # The ctypes functions themselves, without wasmtime-py's wrapper frame.
    _call = _bindings._wasmtime_component_func_call
    _delete = _bindings._wasmtime_component_val_delete
    _error_new = ffi.wasmtime_error_new

    # Pointers to a Python object's own UTF-8 text: an ASCII str's characters are its UTF-8, and
    # a bytes object holds its bytes; neither is copied.
    _str_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
    _str_utf8.restype = ctypes.c_void_p
    _str_utf8.argtypes = [ctypes.py_object, ctypes.c_void_p]
    _bytes_data = ctypes.pythonapi.PyBytes_AsString
    _bytes_data.restype = ctypes.c_void_p
    _bytes_data.argtypes = [ctypes.py_object]

    _no_finalizer = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _data: None)

_string_at = ctypes.string_at
_addressof = ctypes.addressof

# Kinds (WASMTIME_COMPONENT_*) and the layouts written: a value is its kind byte, 7 bytes of
# padding and its payload (8..32); a record entry is its name (size, data) and a value.
BOOL, S8, U8, S16, U16, S32, U32, S64, U64, F32, F64, CHAR, STRING, LIST, RECORD, TUPLE, VARIANT, \
    ENUM, OPTION, RESULT, FLAGS = range(21)
VAL, ENTRY = 32, 48
_VEC = struct.Struct("<B7xQQ")  # string, enum, list, record: kind, size, data
_PTR = struct.Struct("<B7xQ")  # option: kind, payload or NULL
_U8 = struct.Struct("<B7xB")
_U32 = struct.Struct("<B7xI")
_U64 = struct.Struct("<B7xQ")
_NAME = struct.Struct("<QQ")
_SIZE_DATA = struct.Struct("<8xQQ")  # read from a value: size, data
_VARIANT = struct.Struct("<8xQQQ")  # name size, name data, payload or NULL
_OPTION = struct.Struct("<8xQ")
_RESULT = struct.Struct("<8x?7xQ")
_SCALARS = {S8: struct.Struct("<8xb"), U8: struct.Struct("<8xB"), S16: struct.Struct("<8xh"),
            U16: struct.Struct("<8xH"), S32: struct.Struct("<8xi"), U32: struct.Struct("<8xI"),
            S64: struct.Struct("<8xq"), U64: struct.Struct("<8xQ"), F32: struct.Struct("<8xf"),
            F64: struct.Struct("<8xd")}
_INTS = {8: (U8, _U8), 32: (U32, _U32), 64: (U64, _U64)}


def _utf8(text: Any, keep: list) -> tuple:
    """(size, address) of `text`'s UTF-8 (a str, or bytes already checked to be UTF-8), kept
    alive in `keep` until the call returns. A str that is not ASCII is encoded once."""
    if isinstance(text, str):
        if text.isascii():
            keep.append(text)
            return len(text), _str_utf8(text, None)
        text = text.encode("utf-8")
    keep.append(text)
    return len(text), _bytes_data(text)


# ---- lowering: the JSON form -> C values ---------------------------------------------------
# A lowerer is `lower(value, where, buf, off, keep)`: it checks `value` exactly as
# `_convert._lower` does (the same LroErrors naming `where`) and writes it as the C value at
# `buf[off:off + 32]`, appending every buffer it points to to `keep`.


def lowerer(shape: Any, name: Optional[str]) -> Callable:
    """The lowerer of a value of `shape` that is the field or parameter `name` (its JSON-form
    name: a WIT `json` input when it is in JSON_INPUTS), or a list element (None)."""
    if isinstance(shape, _Record):
        return _record_lowerer(shape)
    if isinstance(shape, _Option):
        return _option_lowerer(lowerer(shape.payload, name))
    if isinstance(shape, _List):
        return _list_lowerer(lowerer(shape.element, None))
    if isinstance(shape, _Enum):
        return _enum_lowerer(shape)
    kind = shape.kind if isinstance(shape, _Scalar) else type(shape).__name__
    if kind == "string":
        return _string_lowerer(name in JSON_INPUTS)
    if kind == "bool":
        return _bool_lower
    if kind == "int":
        return _int_lowerer(shape.bits)

    def cannot(value: Any, where: str, buf: Any, off: int, keep: list) -> None:
        raise TypeError(f"{where}: lro_wasm cannot pass a {kind}")  # not in this WIT

    return cannot


def _record_lowerer(shape: _Record) -> Callable:
    n = len(shape.fields)
    names = [kebab.encode("utf-8") for kebab, _, _ in shape.fields]  # kept alive by `lower`'s default
    template = bytearray(ENTRY * n)  # the entries with their names, copied for each value
    for i, encoded in enumerate(names):
        _NAME.pack_into(template, ENTRY * i, len(encoded), _bytes_data(encoded))
    template = bytes(template)
    entries_type = ctypes.c_char * (ENTRY * n)
    fields = [(name, lowerer(field, name), ENTRY * i + 16) for i, (_, name, field) in enumerate(shape.fields)]
    known, ordered = shape.known, shape.names

    def lower(value: Any, where: str, buf: Any, off: int, keep: list, names: list = names) -> None:
        if not isinstance(value, dict):
            raise bad(where, "an object", value)
        if not known.issuperset(value):
            raise unknown_fields(where, value, ordered)
        entries = entries_type.from_buffer_copy(template)
        keep.append(entries)
        get = value.get
        for name, field, at in fields:
            field(get(name), f"{where}.{name}", entries, at, keep)
        _VEC.pack_into(buf, off, RECORD, n, _addressof(entries))

    return lower


def _option_lowerer(payload: Callable) -> Callable:
    slot_type = ctypes.c_char * VAL

    def lower(value: Any, where: str, buf: Any, off: int, keep: list) -> None:
        if value is None:
            _PTR.pack_into(buf, off, OPTION, 0)
            return
        slot = slot_type()
        keep.append(slot)
        payload(value, where, slot, 0, keep)
        _PTR.pack_into(buf, off, OPTION, _addressof(slot))

    return lower


def _list_lowerer(element: Callable) -> Callable:
    def lower(value: Any, where: str, buf: Any, off: int, keep: list) -> None:
        if not isinstance(value, (list, tuple)):
            raise bad(where, "an array", value)
        items = (ctypes.c_char * (VAL * len(value)))()
        keep.append(items)
        for i, item in enumerate(value):
            element(item, f"{where}[{i}]", items, VAL * i, keep)
        _VEC.pack_into(buf, off, LIST, len(value), _addressof(items))

    return lower


def _enum_lowerer(shape: _Enum) -> Callable:
    encoded = {name: name.encode("utf-8") for name in shape.names}  # kept alive by `lower`'s default
    cases = {name: (len(b), _bytes_data(b)) for name, b in encoded.items()}
    expected = shape.expected

    def lower(value: Any, where: str, buf: Any, off: int, keep: list, encoded: dict = encoded) -> None:
        case = cases.get(value) if isinstance(value, str) else None
        if case is None:
            raise bad(where, expected, value)
        _VEC.pack_into(buf, off, ENUM, case[0], case[1])

    return lower


def _string_lowerer(json_input: bool) -> Callable:
    if json_input:  # text passed as it is (UTF-8 bytes checked), any other value serialised
        def lower(value: Any, where: str, buf: Any, off: int, keep: list) -> None:
            if value is None:
                raise bad(where, "a string", value)
            size, data = _utf8(value if isinstance(value, str) else json_utf8(value, where), keep)
            _VEC.pack_into(buf, off, STRING, size, data)
    else:
        def lower(value: Any, where: str, buf: Any, off: int, keep: list) -> None:
            if not isinstance(value, str):
                raise bad(where, "a string", value)
            size, data = _utf8(value, keep)
            _VEC.pack_into(buf, off, STRING, size, data)
    return lower


def _bool_lower(value: Any, where: str, buf: Any, off: int, keep: list) -> None:
    if not isinstance(value, bool):
        raise bad(where, "true or false", value)
    _U8.pack_into(buf, off, BOOL, value)


def _int_lowerer(bits: int) -> Callable:
    kind, layout = _INTS[bits]
    limit, expected = 1 << bits, f"an integer from 0 to {(1 << bits) - 1}"

    def lower(value: Any, where: str, buf: Any, off: int, keep: list) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < limit:
            raise bad(where, expected, value)
        layout.pack_into(buf, off, kind, value)

    return lower


# ---- lifting: C values -> the JSON form ------------------------------------------------------
# A lifter is `lift(blob, off)`: the JSON form of the C value at `blob[off:off + 32]` (bytes
# copied out of wasmtime's memory), as `_convert._lift` gives it.


def lifter(shape: Any) -> Callable:
    if isinstance(shape, _Record):
        return _record_lifter(shape)
    if isinstance(shape, _Cases):
        return _cases_lifter(shape)
    if isinstance(shape, _Option):
        return _option_lifter(lifter(shape.payload))
    if isinstance(shape, _List):
        return _list_lifter(lifter(shape.element))
    return _scalar_lift  # string, bool, integer, enum name: by the value's own kind


def _record_lifter(shape: _Record) -> Callable:
    n = len(shape.fields)
    fields = [(name, lifter(field), ENTRY * i + 16) for i, (_, name, field) in enumerate(shape.fields)]

    def lift(blob: bytes, off: int) -> dict:
        size, data = _SIZE_DATA.unpack_from(blob, off)
        if blob[off] != RECORD or size != n:
            raise TypeError(f"expected a record of {n} fields, got kind {blob[off]} of {size}")
        entries = _string_at(data, ENTRY * n)
        return {name: field(entries, at) for name, field, at in fields}

    return lift


def _cases_lifter(shape: _Cases) -> Callable:
    payloads = {name.encode("utf-8"): (name, None if payload is None else lifter(payload))
                for name, payload, _ in shape.cases}
    result = shape.result

    def lift(blob: bytes, off: int) -> Any:
        if result:
            is_ok, pointer = _RESULT.unpack_from(blob, off)
            name, payload = payloads[b"ok" if is_ok else b"err"]
        else:
            size, data, pointer = _VARIANT.unpack_from(blob, off)
            name, payload = payloads[_string_at(data, size)]
        lifted = None if payload is None else payload(_string_at(pointer, VAL), 0)
        if result:
            if name == "err":
                from ._errors import LroError

                raise LroError(lifted["kind"], lifted["message"])
            return lifted
        if isinstance(lifted, dict):  # outcome, tool-outcome, event
            return {"kind": name, **lifted}
        return {"kind": name, "message": lifted}  # error: every case carries a string

    return lift


def _option_lifter(payload: Callable) -> Callable:
    def lift(blob: bytes, off: int) -> Any:
        (pointer,) = _OPTION.unpack_from(blob, off)
        return None if not pointer else payload(_string_at(pointer, VAL), 0)

    return lift


def _list_lifter(element: Callable) -> Callable:
    def lift(blob: bytes, off: int) -> list:
        size, data = _SIZE_DATA.unpack_from(blob, off)
        items = _string_at(data, VAL * size)
        return [element(items, VAL * i) for i in range(size)]

    return lift


def _scalar_lift(blob: bytes, off: int) -> Any:
    kind = blob[off]
    if kind == STRING or kind == ENUM:
        size, data = _SIZE_DATA.unpack_from(blob, off)
        return _string_at(data, size).decode("utf-8")
    if kind == BOOL:
        return blob[off + 8] != 0
    if kind == CHAR:
        return chr(_SCALARS[U32].unpack_from(blob, off)[0])
    layout = _SCALARS.get(kind)
    if layout is None:
        raise TypeError(f"lro_wasm cannot read a value of kind {kind}")  # not in this WIT
    return layout.unpack_from(blob, off)[0]


# ---- calls -------------------------------------------------------------------------------------


class Signature:
    """A function's parameters and result, compiled once."""

    def __init__(self, params: list, result: Any):
        """`params`: [(JSON-form name, shape)]; `result`: the result's shape, or None."""
        self.names = [name for name, _ in params]
        self.lowerers = [lowerer(shape, name) for name, shape in params]
        # The fields of record parameters, for `set_field`: {(parameter, name): (index, lowerer)}.
        self.fields = {(i, name): (k, lowerer(field, name))
                       for i, (_, shape) in enumerate(params) if isinstance(shape, _Record)
                       for k, (_, name, field) in enumerate(shape.fields)}
        self.lift = None if result is None else lifter(result)
        self.params_type = _VAL * len(params)

    def lower(self, args: list, lowered: "Optional[Lowered]" = None) -> "Lowered":
        """`args` as the C values of the parameters, after those `lowered` already holds (a
        `lower` of the first ones); LroError naming the first that does not fit."""
        if lowered is None:
            lowered = Lowered(self.params_type(), [])
        start = lowered.count
        for i, value in enumerate(args, start):
            self.lowerers[i](value, self.names[i], lowered.params, VAL * i, lowered.keep)
        lowered.count = start + len(args)
        return lowered

    def set_field(self, lowered: "Lowered", param: int, name: str, value: Any) -> None:
        """Replaces the field `name` of the record parameter `param`, already lowered."""
        index, lower = self.fields[(param, name)]
        size, entries = _SIZE_DATA.unpack_from(lowered.params, VAL * param)
        lower(value, f"{self.names[param]}.{name}", (ctypes.c_char * (ENTRY * size)).from_address(entries),
              ENTRY * index + 16, lowered.keep)


class Lowered:
    """A call's parameters as C values, and every buffer they point to."""

    __slots__ = ("params", "keep", "count")

    def __init__(self, params: Any, keep: list):
        self.params, self.keep, self.count = params, keep, 0


def check(shape_lowerer: Callable, value: Any, where: str) -> None:
    """Checks `value` as lowering it would, and throws the C value away."""
    shape_lowerer(value, where, (ctypes.c_char * VAL)(), 0, [])


class Result:
    """A result wasmtime allocated: lifted once, and deleted then or when dropped unread."""

    __slots__ = ("value", "live")

    def __init__(self) -> None:
        self.value, self.live = _VAL(), False

    def lift(self, lift: Callable) -> Any:
        try:
            return lift(_string_at(_addressof(self.value), VAL), 0)
        finally:
            self.free()

    def free(self) -> None:
        if self.live:
            self.live = False
            _delete(ctypes.byref(self.value))

    def __del__(self) -> None:
        self.free()


def call(func: Any, store: Any, signature: Signature, lowered: Lowered) -> Optional[Result]:
    """Calls the component function `func` (wasmtime-py's) in `store` with `lowered`; the
    result, unread, or None for a function with none. A trap raises WasmtimeError."""
    params = lowered.params
    if signature.lift is None:
        err = _call(ctypes.byref(func._func), store._context(), params, len(params), None, 0)
        result = None
    else:
        result = Result()
        err = _call(ctypes.byref(func._func), store._context(), params, len(params),
                    ctypes.byref(result.value), 1)
        result.live = not err
    if err:
        raise WasmtimeError._from_ptr(err)
    return result


def add_func(linker_instance: Any, name: str, params: list, receive: Callable) -> Any:
    """Defines the import `name` in `linker_instance` (wasmtime-py's LinkerInstance) as a
    function taking `params` ([shape]) and returning nothing: `receive(*values)` gets the
    arguments in the JSON form. An exception from it (or from lifting them) cannot unwind
    through wasmtime: the guest's call fails with a wasmtime error naming it, which the call
    raises as a trap. Returns the C callback, which must live as long as the linker."""
    lifters = [lifter(shape) for shape in params]
    count = len(params)

    def callback(_data: Any, _context: Any, _type: Any, args: Any, nargs: int, _results: Any, _nresults: int) -> int:
        try:
            if nargs != count:
                raise TypeError(f"{name}: called with {nargs} arguments, not {count}")
            blob = _string_at(ctypes.cast(args, ctypes.c_void_p).value, VAL * count)
            receive(*[lift(blob, VAL * i) for i, lift in enumerate(lifters)])
            return 0
        except BaseException as e:  # noqa: an exception cannot unwind through wasmtime
            message = f"{name}: {type(e).__name__}: {e}".encode("utf-8", "replace")
            return ctypes.cast(_error_new(ctypes.create_string_buffer(message)), ctypes.c_void_p).value or 0

    c_callback = ffi.wasmtime_component_func_callback_t(callback)
    encoded = name.encode("utf-8")
    err = ffi.wasmtime_component_linker_instance_add_func(
        linker_instance.ptr(), ctypes.create_string_buffer(encoded), len(encoded), c_callback, None, _no_finalizer)
    if err:
        raise WasmtimeError._from_ptr(err)
    return c_callback

