"""WIT `json` inputs: JSON text (str or UTF-8 bytes) passed as it is, never parsed or serialised
again; Python values serialised by orjson when it is installed, else by json, with the same text
for everything json serialises."""

import datetime
import json

import pytest

from lro_wasm import LroError, _convert

RECORDS = [{"id": f"m{i}", "namespace": "_semantic/x", "title": f"Title {i} é ✓"} for i in range(100)]
SAMPLES = [
    RECORDS,
    {"nested": {"list": [1, -2, 3.5, 1e16, 0.1, True, False, None], "text": "quote \" backslash \\ tab \t é \u2028 😀"}},
    [], {}, "plain", 0, 2**63 - 1,
]


def data_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f][1:]


@pytest.mark.parametrize("form", ["list", "str", "bytes", "bytearray", "memoryview"])
def test_records_may_be_json_text_or_bytes(lro, tmp_path, form, monkeypatch):
    text = json.dumps(RECORDS)
    given = {"list": RECORDS, "str": text, "bytes": text.encode(), "bytearray": bytearray(text.encode()),
             "memoryview": memoryview(text.encode())}[form]
    if form != "list":
        # Text is handed over as it is: serialising it again would be a bug.
        for serialiser in ("dumps", "dumps_utf8"):
            monkeypatch.setattr(_convert, serialiser, lambda *_: pytest.fail("JSON text was serialised again"))
    out = lro.offload(lro.config(output_dir=str(tmp_path), threshold_tokens=100), {"operation": "list", "records": given})
    assert out["kind"] == "offloaded" and out["count"] == len(RECORDS), out
    assert data_lines(out["path"]) == RECORDS


def test_bytes_that_are_not_utf8_are_an_error_naming_the_field(lro, tmp_path):
    with pytest.raises(LroError) as caught:
        lro.offload(lro.config(output_dir=str(tmp_path)), {"operation": "list", "records": b'[{"a": "\xff"}]'})
    assert caught.value.kind == "invalid-input"
    assert caught.value.message == "request.records: JSON bytes must be UTF-8: invalid start byte at byte 8"


def test_orjson_is_installed_for_the_tests():
    # requirements.txt installs it, so both serialisers are tested below; never skipped.
    assert _convert.orjson is not None, "orjson is not installed: .venv/bin/pip install -r bindings/python/requirements.txt"


@pytest.mark.parametrize("serialiser", ["orjson", "json"])
def test_both_serialisers_write_what_json_writes(serialiser, monkeypatch):
    if serialiser == "json":
        monkeypatch.setattr(_convert, "orjson", None)
    else:
        assert _convert.orjson is not None, "orjson is not installed"
    for value in SAMPLES + [{1: "int key"}, 2**70]:  # the last two: orjson refuses them, json takes them
        assert _convert.dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False), value


@pytest.mark.parametrize("serialiser", ["orjson", "json"])
def test_a_value_neither_serialises_is_an_error_naming_the_field(lro, tmp_path, serialiser, monkeypatch):
    if serialiser == "json":
        monkeypatch.setattr(_convert, "orjson", None)
    with pytest.raises(LroError) as caught:
        lro.offload(lro.config(output_dir=str(tmp_path)), {"operation": "list", "records": [{"tags": {"a", "b"}}]})
    assert caught.value.kind == "invalid-input"
    assert caught.value.message.startswith("request.records: cannot be serialised as JSON: "), caught.value


def test_orjson_also_serialises_datetimes_which_json_refuses(monkeypatch):
    when = datetime.datetime(2026, 11, 23, 9, 30)
    assert _convert.dumps({"at": when}) == '{"at":"2026-11-23T09:30:00"}'
    monkeypatch.setattr(_convert, "orjson", None)
    with pytest.raises(LroError) as caught:
        _convert.dumps({"at": when}, "request.records")
    assert "datetime is not JSON serializable" in caught.value.message
