// End to end: the SDK's own Client spawns examples/mcp-server.js over stdio; a large result
// comes back as a descriptor of a file in the offload directory, lro_extract reads exactly the
// expected records from it, and a small result stays inline.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { getNote, searchNotes } from '../examples/notes.js';
import { HOST, requireComponent } from './support.js';

requireComponent();

describe('examples/mcp-server.js through the MCP SDK client', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lro-mcp-test-'));
  const client = new Client({ name: 'lro-example-test', version: '0.0.0' });
  let stderr = '';
  let descriptor;

  before(async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(HOST, 'examples', 'mcp-server.js')],
      env: { ...process.env, LRO_DIR: dir },
      stderr: 'pipe',
    });
    transport.stderr.on('data', (chunk) => { stderr += chunk; });
    await client.connect(transport);
  });
  after(async () => {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const textOf = (result) => {
    assert.equal(result.content.length, 1, JSON.stringify(result));
    assert.equal(result.content[0].type, 'text');
    return result.content[0].text;
  };

  it('lists the tools, none with an outputSchema', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['get_note', 'lro_extract', 'search_notes']);
    for (const t of tools) assert.equal(t.outputSchema, undefined, t.name);
  });

  it('a large result comes back as a descriptor of a private file in the offload directory', async () => {
    const result = await client.callTool({ name: 'search_notes', arguments: {} });
    assert.notEqual(result.isError, true, textOf(result));
    descriptor = JSON.parse(textOf(result));
    assert.equal(descriptor.offloaded, true);
    const files = Object.values(descriptor.files);
    assert.equal(files.length, 1, JSON.stringify(descriptor.files));
    assert.equal(dirname(files[0]), dir);
    assert.ok(existsSync(files[0]), files[0]);
    assert.equal(statSync(files[0]).mode & 0o777, 0o600);
    assert.match(descriptor.guidance, /lro_extract/, 'native: the guidance points to lro_extract');
    assert.match(stderr, /offload-created/, 'the event reached the server callback');
  });

  it('lro_extract with a query returns exactly the expected records', async () => {
    const path = Object.values(descriptor.files)[0];
    const result = await client.callTool({
      name: 'lro_extract',
      arguments: { path, query: 'select(.priority == $p and .topic == "cache") | .id', params: { p: 5 }, limit: 100000 },
    });
    assert.notEqual(result.isError, true, textOf(result));
    const expected = searchNotes('', 300).filter((n) => n.priority === 5 && n.topic === 'cache').map((n) => JSON.stringify(n.id));
    assert.ok(expected.length > 5, 'the query must select some, not all');
    assert.deepEqual(textOf(result).split('\n'), expected);

    const count = await client.callTool({ name: 'lro_extract', arguments: { path, query: 'length', slurp: true } });
    assert.equal(textOf(count), '300');
  });

  it('lro_extract outside the directory is a tool error, not a crash', async () => {
    const result = await client.callTool({ name: 'lro_extract', arguments: { path: '/etc/passwd', query: '.' } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^outside-directory: /);
  });

  it('a small result stays inline, unchanged', async () => {
    const result = await client.callTool({ name: 'get_note', arguments: { id: 'note-7' } });
    assert.deepEqual(JSON.parse(textOf(result)), getNote('note-7'));
    assert.equal(result.isError, undefined);
  });
});
