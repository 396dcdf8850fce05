// End to end: the SDK's own Client spawns examples/mcp-server.js (an McpServer with withLro) over
// stdio. The tools it lists are rewritten by the component (no outputSchema where results may be
// offloaded, lro_extract exactly as the component defines it); a large result comes back as a
// descriptor of a private file; every lro_extract call the descriptor's guidance prints works as
// printed; lro_extract reads exactly the expected records; a small result stays inline.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { getNote, searchNotes } from '../examples/notes.js';
import { Lro } from '../lro.js';
import { guidanceCalls, HOST, requireComponent } from './support.js';

requireComponent();

describe('examples/mcp-server.js through the MCP SDK client', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lro-mcp-test-'));
  const client = new Client({ name: 'lro-example-test', version: '0.0.0' });
  const lro = new Lro();
  let stderr = '';
  const descriptors = {};

  before(async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(HOST, 'examples', 'mcp-server.js')],
      env: { ...process.env, ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR: dir },
      stderr: 'pipe',
    });
    transport.stderr.on('data', (chunk) => { stderr += chunk; });
    await client.connect(transport);
  });
  after(async () => {
    await client.close();
    lro.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const textOf = (result) => {
    assert.equal(result.content.length, 1, JSON.stringify(result));
    assert.equal(result.content[0].type, 'text');
    return result.content[0].text;
  };

  it('lists its tools without outputSchema, and lro_extract exactly as toolDefinition() gives it', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['search_notes', 'recall_memories', 'get_note', 'lro_extract']);
    for (const t of tools) assert.equal(t.outputSchema, undefined, `${t.name} still has an outputSchema`);
    assert.deepEqual(tools.at(-1), JSON.parse(await lro.toolDefinition()));
  });

  it('a large result comes back as a descriptor of a private file in the offload directory', async () => {
    const result = await client.callTool({ name: 'search_notes', arguments: {} });
    assert.notEqual(result.isError, true, textOf(result));
    const descriptor = JSON.parse(textOf(result));
    assert.equal(descriptor.offloaded, true);
    const files = Object.values(descriptor.files);
    assert.equal(files.length, 1, JSON.stringify(descriptor.files));
    assert.equal(dirname(files[0]), dir);
    assert.ok(existsSync(files[0]), files[0]);
    assert.equal(statSync(files[0]).mode & 0o777, 0o600);
    assert.match(descriptor.guidance, /lro_extract/, 'extract_tool: the guidance points to lro_extract');
    assert.match(stderr, /offload-created/, 'the event reached the server callback');
    descriptors.notes = descriptor;
  });

  it('memory records come back as a descriptor with recipes', async () => {
    const result = await client.callTool({ name: 'recall_memories', arguments: { query: '', detail: 'medium' } });
    assert.notEqual(result.isError, true, textOf(result));
    const descriptor = JSON.parse(textOf(result));
    assert.equal(descriptor.offloaded, true);
    assert.ok(existsSync(descriptor.file_path), JSON.stringify(descriptor).slice(0, 300));
    descriptors.memories = descriptor;
  });

  it('every lro_extract call the guidance prints works exactly as printed', async () => {
    const calls = Object.values(descriptors).flatMap((d) => guidanceCalls(d.guidance));
    // Both descriptors' examples: a query (generic results), recipes with and without params.
    assert.ok(calls.some((a) => 'query' in a), JSON.stringify(calls));
    assert.ok(calls.some((a) => a.recipe === 2 && a.params?.namespace), JSON.stringify(calls));
    assert.ok(calls.length >= 4, JSON.stringify(calls));
    for (const args of calls) {
      const result = await client.callTool({ name: 'lro_extract', arguments: args });
      assert.notEqual(result.isError, true, `${JSON.stringify(args)}: ${textOf(result)}`);
    }
  });

  it('lro_extract with a query returns exactly the expected records', async () => {
    const path = Object.values(descriptors.notes.files)[0];
    const result = await client.callTool({
      name: 'lro_extract',
      arguments: { file_path: path, query: 'select(.priority == $p and .topic == "cache") | .id', params: { p: 5 }, limit: 100000 },
    });
    assert.notEqual(result.isError, true, textOf(result));
    const expected = searchNotes('', 300).filter((n) => n.priority === 5 && n.topic === 'cache').map((n) => JSON.stringify(n.id));
    assert.ok(expected.length > 5, 'the query must select some, not all');
    assert.deepEqual(textOf(result).split('\n'), expected);

    const count = await client.callTool({ name: 'lro_extract', arguments: { file_path: path, query: 'length', slurp: true } });
    assert.equal(textOf(count), '300');
  });

  it('lro_extract errors are tool errors carrying the message, not crashes', async () => {
    const outside = await client.callTool({ name: 'lro_extract', arguments: { file_path: '/etc/passwd', query: '.' } });
    assert.equal(outside.isError, true);
    assert.match(textOf(outside), /^outside-directory: /);
    // The old argument name: the component names what is wrong.
    const path = Object.values(descriptors.notes.files)[0];
    const misnamed = await client.callTool({ name: 'lro_extract', arguments: { path, query: '.' } });
    assert.equal(misnamed.isError, true);
    assert.match(textOf(misnamed), /^invalid-request: .*`path`/);
  });

  it('a small result stays inline, unchanged', async () => {
    const result = await client.callTool({ name: 'get_note', arguments: { id: 'note-7' } });
    assert.deepEqual(JSON.parse(textOf(result)), getNote('note-7'));
    assert.equal(result.isError, undefined);
  });
});
