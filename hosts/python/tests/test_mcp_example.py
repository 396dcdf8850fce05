"""End to end: examples/mcp_server.py spawned over stdio and driven by the MCP SDK's own client.
A large tool result comes back as a descriptor, `lro_extract` returns exactly the records the
generator made, and a small result stays inline."""

import asyncio
import json
import os
import stat
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import HOST_DIR

EXAMPLE = HOST_DIR / "examples" / "mcp_server.py"
sys.path.insert(0, str(EXAMPLE.parent))

from mcp_server import generate_notes  # noqa: E402


def server(wasm, dir):
    env = {"LRO_WASM": wasm, "LRO_OFFLOAD_DIR": str(dir)}
    if "LRO_CACHE_DIR" in os.environ:
        env["LRO_CACHE_DIR"] = os.environ["LRO_CACHE_DIR"]
    return StdioServerParameters(command=sys.executable, args=[str(EXAMPLE)], env=env)


def lines(result):
    assert not result.is_error, result.content
    [content] = result.content
    return content.text.split("\n")


async def session(wasm, dir):
    async with Client(server(wasm, dir), read_timeout_seconds=60) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"search_notes", "lro_extract"}
        # Results that may be offloaded must not promise an output schema.
        assert all(t.output_schema is None for t in tools.values())

        big = await client.call_tool("search_notes", {})
        [content] = big.content
        descriptor = json.loads(content.text)
        assert descriptor["offloaded"] is True
        assert descriptor["summary"]["results"]["count"] == 300
        path = descriptor["files"]["results"]
        assert os.path.dirname(path) == os.path.realpath(dir)
        assert "lro_extract(file_path=" in descriptor["guidance"]  # native: the tool, not a shell

        filter = 'select(.author == "grace" and .priority >= 4)'
        picked = await client.call_tool("lro_extract", {"file_path": path, "query": filter, "limit": 100_000})
        want = [n for n in generate_notes() if n["author"] == "grace" and n["priority"] >= 4]
        assert len(want) > 10
        assert [json.loads(line) for line in lines(picked)] == want

        counted = await client.call_tool("lro_extract", {"file_path": path, "query": "length", "slurp": True})
        assert lines(counted) == ["300"]

        small = await client.call_tool("search_notes", {"count": 3})
        [content] = small.content
        assert json.loads(content.text) == generate_notes(3)

        refused = await client.call_tool("lro_extract", {"file_path": "/etc/passwd", "query": "."})
        assert refused.is_error and "outside-directory" in refused.content[0].text, refused.content
        return path


def test_mcp_server_offloads_large_results_and_extracts_them(wasm, tmp_path):
    dir = tmp_path / "offload"
    path = asyncio.run(asyncio.wait_for(session(wasm, dir), timeout=120))
    # One file, for the one large result: private, a header and the 300 records.
    assert os.listdir(dir) == [os.path.basename(path)]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as f:
        records = [json.loads(line) for line in f][1:]
    assert records == generate_notes()
