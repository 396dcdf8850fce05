"""End to end: examples/mcp_server.py spawned over stdio and driven by the MCP SDK's own client.
`tools/list` is rewritten (no outputSchema on offloadable tools, `lro_extract` exactly as the
component defines it); large results in each of the SDK's shapes come back as descriptors; every
`lro_extract(...)` call the descriptors' guidance prints works as printed; `lro_extract` returns
exactly the records the generators made; a small result stays inline."""

import asyncio
import json
import os
import stat
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import HOST_DIR, guidance_calls
from lro_wasm import Lro

EXAMPLE = HOST_DIR / "examples" / "mcp_server.py"
sys.path.insert(0, str(EXAMPLE.parent))

from mcp_server import build_server, generate_memories, generate_notes  # noqa: E402

OFFLOADABLE = {"search_notes", "recall_memories", "list_memories"}


def server(wasm, dir):
    # The package from this source tree (PYTHONPATH), the component from LRO_WASM.
    env = {"PYTHONPATH": str(HOST_DIR), "LRO_WASM": wasm, "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(dir)}
    if "LRO_CACHE_DIR" in os.environ:
        env["LRO_CACHE_DIR"] = os.environ["LRO_CACHE_DIR"]
    return StdioServerParameters(command=sys.executable, args=[str(EXAMPLE)], env=env)


def lines(result):
    assert not result.is_error, result.content
    [content] = result.content
    return content.text.split("\n")


def test_guidance_calls_are_read_as_printed():
    text = ('- Filter: lro_extract(file_path="/d/a b.jsonl", recipe=2, params={"namespace": "_semantic"})\n'
            'e.g. lro_extract(file_path="/d/f.jsonl", query="select(.x == \\"y)\\")"), or with slurp=true')
    assert guidance_calls(text) == [
        {"file_path": "/d/a b.jsonl", "recipe": 2, "params": {"namespace": "_semantic"}},
        {"file_path": "/d/f.jsonl", "query": 'select(.x == "y)")'},
    ]


def test_the_sdk_gives_a_str_tool_an_output_schema(wasm, tmp_path, monkeypatch):
    # What the rewrite of tools/list is for: without it, recall_memories would promise
    # `{"result": string}` and its descriptor would break that promise.
    monkeypatch.setenv("LRO_WASM", wasm)
    monkeypatch.setenv("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", str(tmp_path))
    tools = {t.name: t for t in asyncio.run(build_server().list_tools())}
    assert tools["recall_memories"].output_schema is not None


async def offloaded(client, tool, arguments=None):
    result = await client.call_tool(tool, arguments or {})
    assert not result.is_error, result.content
    [content] = result.content
    descriptor = json.loads(content.text)
    assert descriptor["offloaded"] is True, descriptor
    return descriptor


async def session(wasm, dir):
    definition = json.loads(Lro(wasm).tool_definition())
    async with Client(server(wasm, dir), read_timeout_seconds=60) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == OFFLOADABLE | {"lro_extract"}
        # Results that may be offloaded must not promise an output schema.
        assert all(tools[name].output_schema is None for name in OFFLOADABLE)
        assert tools["lro_extract"].model_dump(by_alias=True, exclude_none=True, mode="json") == definition

        notes = await offloaded(client, "search_notes")
        assert notes["summary"]["results"]["count"] == 300
        notes_path = notes["files"]["results"]
        assert os.path.dirname(notes_path) == os.path.realpath(dir)
        recalled = await offloaded(client, "recall_memories")  # structuredContent {"result": "<json>"}
        listed = await offloaded(client, "list_memories")  # one text block per record

        # Every call the guidance prints, exactly as printed.
        for descriptor in (notes, recalled, listed):
            calls = guidance_calls(descriptor["guidance"])
            assert calls, descriptor["guidance"]  # native: the tool, not a shell
            for arguments in calls:
                result = await client.call_tool("lro_extract", arguments)
                assert not result.is_error, (arguments, result.content)

        # The memory tools' results were offloaded as the records they are.
        for descriptor in (recalled, listed):
            assert descriptor["summary"]["count"] == 120, descriptor["summary"]
            counted = await client.call_tool("lro_extract", {"file_path": descriptor["file_path"],
                                                             "query": "length", "slurp": True})
            assert lines(counted) == ["120"]

        filter = 'select(.author == "grace" and .priority >= 4)'
        picked = await client.call_tool("lro_extract", {"file_path": notes_path, "query": filter, "limit": 100_000})
        want = [n for n in generate_notes() if n["author"] == "grace" and n["priority"] >= 4]
        assert len(want) > 10
        assert [json.loads(line) for line in lines(picked)] == want

        small = await client.call_tool("search_notes", {"count": 3})
        [content] = small.content
        assert json.loads(content.text) == generate_notes(3)

        # Errors come back as isError results carrying the LroError.
        refused = await client.call_tool("lro_extract", {"file_path": "/etc/passwd", "query": "."})
        assert refused.is_error and refused.content[0].text.startswith("outside-directory: "), refused.content
        unknown = await client.call_tool("lro_extract", {"file_path": notes_path, "recipe": 1, "colour": "red"})
        assert unknown.is_error and "invalid-request" in unknown.content[0].text, unknown.content
        return notes_path, recalled["file_path"], listed["file_path"]


def test_mcp_server_offloads_large_results_and_extracts_them(wasm, tmp_path):
    dir = tmp_path / "offload"
    notes, recalled, listed = asyncio.run(asyncio.wait_for(session(wasm, dir), timeout=120))
    # One private file per large result, each a header and the records.
    assert sorted(os.listdir(dir)) == sorted(os.path.basename(p) for p in (notes, recalled, listed))
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in (notes, recalled, listed))
    with open(notes) as f:
        assert [json.loads(line) for line in f][1:] == generate_notes()
    for path in (recalled, listed):
        with open(path) as f:
            records = [json.loads(line) for line in f]
        assert records[0]["type"] == "lro_header" and len(records) == 121
        assert [r["id"] for r in records[1:]] == [m["id"] for m in generate_memories()]
