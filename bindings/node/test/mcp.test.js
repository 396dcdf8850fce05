// withLro and withLroServer (mcp.js) in process, driven by the SDK's own Client over its
// in-memory transport: the tools listed (lro_extract added, outputSchema dropped where results may
// be offloaded, pages), tool results intercepted (offloaded, unchanged, forwarded when intercept
// fails), lro_extract answered, handlers set before and after, sweeping at start and periodically
// on a timer that never keeps the process alive, and the errors of a wrong call.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { defaultOutputDir, Lro, LroError } from '../lro.js';
import { sweepInterval, withLro, withLroServer } from '../mcp.js';
import { HOST, requireComponent } from './support.js';

requireComponent();

const root = mkdtempSync(join(tmpdir(), 'lro-withlro-test-'));
after(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `out-${dirs++}`);

const records = Array.from({ length: 400 }, (_, i) => ({ id: `r${i}`, name: `record ${i}`, tags: ['alpha', 'beta'], size: i * 7 }));
const schema = { type: 'object', properties: { records: { type: 'array' } }, required: ['records'] };
const TOOLS = [
  { name: 'big', description: 'many records', inputSchema: { type: 'object' }, outputSchema: schema },
  { name: 'small', description: 'one line', inputSchema: { type: 'object' } },
  { name: 'failing', description: 'a large error', inputSchema: { type: 'object' } },
  { name: 'kept', description: 'many records, never offloaded', inputSchema: { type: 'object' }, outputSchema: schema },
];
const RESULTS = {
  big: () => ({ content: [{ type: 'text', text: JSON.stringify({ records }) }], structuredContent: { records } }),
  small: () => ({ content: [{ type: 'text', text: 'hello' }] }),
  failing: () => ({ content: [{ type: 'text', text: 'x '.repeat(20_000) }], isError: true }),
  kept: () => RESULTS.big(),
  lro_extract: () => ({ content: [{ type: 'text', text: 'the server\'s own lro_extract' }] }),
};
/** `kept` is never offloaded: its outputSchema must stay. */
const KEEP = { tools: [{ name: 'kept', enabled: false }] };

/** A low-level Server with TOOLS; `pageSize` splits tools/list into pages. */
function serverWithTools(pageSize = Infinity) {
  const server = new Server({ name: 'lro-test', version: '0.0.0' }, { capabilities: { tools: {} } });
  const setHandlers = () => {
    server.setRequestHandler(ListToolsRequestSchema, (request) => {
      const from = Number(request.params?.cursor ?? 0);
      const page = TOOLS.slice(from, from + pageSize);
      const next = from + pageSize < TOOLS.length ? { nextCursor: String(from + pageSize) } : {};
      return { tools: page, ...next };
    });
    server.setRequestHandler(CallToolRequestSchema, (request) => RESULTS[request.params.name]());
  };
  return { server, setHandlers };
}

/** A Client of the SDK connected to `server` in memory. */
async function connect(server) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'lro-test-client', version: '0.0.0' });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  return client;
}

/** Every tool over every page. */
async function listAll(client) {
  const pages = [];
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    pages.push(page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return pages;
}

const textOf = (result) => {
  assert.equal(result.content.length, 1, JSON.stringify(result).slice(0, 300));
  return result.content[0].text;
};
/** The data lines of an LRO file (after the header), parsed. */
const dataLines = (path) => readFileSync(path, 'utf8').trimEnd().split('\n').slice(1).map((l) => JSON.parse(l));

/** console.error's lines while `fn` runs (the hooks report there). */
async function stderrOf(fn) {
  const lines = [];
  const original = console.error;
  console.error = (...args) => lines.push(args.join(' '));
  try {
    await fn(lines);
  } finally {
    console.error = original;
  }
  return lines;
}

async function waitFor(condition, what, ms = 10_000) {
  const until = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > until) assert.fail(`waited ${ms} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('withLroServer on a low-level Server whose handlers are set first', () => {
  const lro = new Lro();
  const dir = freshDir();
  const { server, setHandlers } = serverWithTools();
  let client;
  before(async () => {
    setHandlers();
    assert.equal(await withLroServer(server, { lro, output_dir: dir, ...KEEP }), server, 'resolves to the server');
    client = await connect(server);
  });
  after(async () => {
    await client.close();
    lro.close();
  });

  it('lists lro_extract as the component defines it, and drops outputSchema where results may be offloaded', async () => {
    const [tools] = await listAll(client);
    assert.deepEqual(tools.map((t) => t.name), ['big', 'small', 'failing', 'kept', 'lro_extract']);
    assert.equal(tools[0].outputSchema, undefined, 'big may be offloaded');
    assert.deepEqual(tools[3].outputSchema, schema, 'kept is never offloaded: its schema stays');
    assert.deepEqual(tools[4], JSON.parse(await lro.toolDefinition()));
  });

  it('a large result becomes a descriptor of a file holding exactly the records', async () => {
    const result = await client.callTool({ name: 'big', arguments: {} });
    const descriptor = JSON.parse(textOf(result));
    assert.equal(descriptor.offloaded, true);
    assert.deepEqual(result.structuredContent, descriptor, 'the structured content is the descriptor too');
    const path = descriptor.files.records;
    assert.equal(dirname(path), dir);
    assert.deepEqual(dataLines(path), records);
    assert.match(descriptor.guidance, /lro_extract\(/, 'extract_tool is on by default: the guidance points to the tool');

    const count = await client.callTool({ name: 'lro_extract', arguments: { file_path: path, query: 'length', slurp: true } });
    assert.equal(textOf(count), String(records.length));
    const outside = await client.callTool({ name: 'lro_extract', arguments: { file_path: '/etc/passwd', query: '.' } });
    assert.equal(outside.isError, true);
    assert.match(textOf(outside), /^outside-directory: /);
  });

  it('small results, error results and tools configured off pass unchanged', async () => {
    for (const name of ['small', 'failing', 'kept']) {
      const result = await client.callTool({ name, arguments: {} });
      assert.deepEqual(result, RESULTS[name](), name);
    }
  });
});

describe('withLroServer before the handlers are set, and on paginated lists', () => {
  it('hooks handlers set afterwards, and lists lro_extract once, on the last page', async () => {
    const lro = new Lro();
    const { server, setHandlers } = serverWithTools(3);
    await withLroServer(server, { lro, output_dir: freshDir() });
    setHandlers();
    const client = await connect(server);
    try {
      const pages = await listAll(client);
      assert.deepEqual(pages.map((p) => p.map((t) => t.name)), [['big', 'small', 'failing'], ['kept', 'lro_extract']]);
      assert.equal(pages[1][0].outputSchema, undefined, 'not configured off here: kept may be offloaded');
      const descriptor = JSON.parse(textOf(await client.callTool({ name: 'big', arguments: {} })));
      assert.deepEqual(dataLines(descriptor.files.records), records);
    } finally {
      await client.close();
      lro.close();
    }
  });

  it('extract_tool = false: no lro_extract, and a call of that name goes to the server', async () => {
    const lro = new Lro();
    const { server, setHandlers } = serverWithTools();
    setHandlers();
    await withLroServer(server, { lro, output_dir: freshDir(), extract_tool: false });
    const client = await connect(server);
    try {
      const [tools] = await listAll(client);
      assert.ok(!tools.some((t) => t.name === 'lro_extract'));
      assert.deepEqual(await client.callTool({ name: 'lro_extract', arguments: {} }), RESULTS.lro_extract());
      const descriptor = JSON.parse(textOf(await client.callTool({ name: 'big', arguments: {} })));
      assert.doesNotMatch(descriptor.guidance, /lro_extract\(/, 'the guidance points to jq instead');
    } finally {
      await client.close();
      lro.close();
    }
  });
});

describe('a failing intercept', () => {
  it('forwards the tool\'s own result, and says why on stderr', async () => {
    // A 1 ms limit: every intercept of a large result is stopped by it.
    const lro = new Lro({ timeout: 1 });
    const { server, setHandlers } = serverWithTools();
    setHandlers();
    let client;
    const lines = await stderrOf(async () => {
      await withLroServer(server, { lro, output_dir: freshDir() });
      client = await connect(server);
      const result = await client.callTool({ name: 'big', arguments: {} });
      assert.deepEqual(result, RESULTS.big());
    });
    await client.close();
    lro.close();
    assert.ok(lines.some((l) => /^lro: intercepting a big result failed, forwarding it unchanged: timeout: /.test(l)), lines.join('\n'));
  });
});

describe('withLro on an McpServer', () => {
  const lro = new Lro();
  after(() => lro.close());

  /** An McpServer with a zod outputSchema tool whose result is large. */
  function mcpServer() {
    const server = new McpServer({ name: 'lro-test', version: '0.0.0' });
    const register = () => server.registerTool('search', {
      description: 'records',
      inputSchema: { q: z.string().optional() },
      outputSchema: { records: z.array(z.object({ id: z.string(), name: z.string(), tags: z.array(z.string()), size: z.number() })) },
    }, async () => RESULTS.big());
    return { server, register };
  }

  it('offloads a result of a tool with an outputSchema: neither the server\'s check nor the client\'s rejects the descriptor', async () => {
    const { server, register } = mcpServer();
    // Before any tool: McpServer sets its tools/* handlers at the first registerTool.
    assert.equal(await withLro(server, { lro, output_dir: freshDir() }), server);
    register();
    server.registerTool('late', { description: 'registered after withLro' }, async () => RESULTS.small());
    const client = await connect(server);
    try {
      const [tools] = await listAll(client);
      assert.deepEqual(tools.map((t) => t.name), ['search', 'late', 'lro_extract']);
      assert.equal(tools[0].outputSchema, undefined);
      // listTools made the client cache the output validators: none for `search` now.
      const result = await client.callTool({ name: 'search', arguments: {} });
      assert.notEqual(result.isError, true, textOf(result));
      const descriptor = JSON.parse(textOf(result));
      assert.deepEqual(dataLines(descriptor.files.records), records);
      assert.deepEqual(await client.callTool({ name: 'late', arguments: {} }), RESULTS.small());
    } finally {
      await client.close();
    }
  });

  it('a tool of the server named lro_extract is refused at once', async () => {
    const server = new McpServer({ name: 'lro-test', version: '0.0.0' });
    server.registerTool('lro_extract', { description: 'mine' }, async () => RESULTS.small());
    await assert.rejects(() => withLro(server, { lro }), (e) => e instanceof LroError && e.kind === 'invalid-input'
      && /already has a tool named lro_extract/.test(e.message));
    // With extract_tool off the name is the server's own.
    await withLro(new McpServer({ name: 'other', version: '0.0.0' }), { lro, extract_tool: false, output_dir: freshDir() });
  });

  it('wrong calls say what was wrong', async () => {
    const { server } = mcpServer();
    await assert.rejects(() => withLro({}, {}), /^TypeError: withLro: expected an McpServer \(or a Server\) of @modelcontextprotocol\/sdk 1\.x, got an object of class Object/);
    await assert.rejects(() => withLroServer(server), /this is an McpServer, use withLro/);
    await assert.rejects(() => withLro(server, { lro: {} }), /withLro options: lro must be an Lro/);
    await assert.rejects(() => withLro(server, { threshold: 5 }), (e) => e instanceof LroError && e.kind === 'invalid-config'
      && e.message.startsWith('unknown key prompt.offload.threshold in withLro options (now threshold_tokens); known keys: '));
    await assert.rejects(() => withLro(server, { env: { ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS: 'lots' } }),
      { message: 'prompt.offload.threshold_tokens (from ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS): expected a whole number from 0 to 4294967295, got "lots"' });
    const file = join(root, 'bad.toml');
    writeFileSync(file, '[prompt.offload]\ndir = "/tmp"\n');
    await assert.rejects(() => withLro(server, { configFile: file }), { message: new RegExp(`^unknown key prompt.offload.dir in ${file} \\(now output_dir\\)`) });
    await withLro(server, { lro, output_dir: freshDir() });
    await assert.rejects(() => withLro(server, { lro }), /^Error: withLro: lro is installed on this server already/);
  });

  it('a setting the component refuses is said on stderr at start, and tools/list answers with it', async () => {
    const { server, register } = mcpServer();
    register();
    let client;
    const lines = await stderrOf(async (seen) => {
      await withLro(server, { lro, prefix: 'a/b', output_dir: freshDir() });
      await waitFor(() => seen.some((l) => l.startsWith('lro: the configuration is refused: invalid-config: prefix must be')), 'the start check');
      client = await connect(server);
      await assert.rejects(client.listTools(), /lro: tools\/list could not be rewritten: invalid-config: prefix must be/);
      // The tool still answers, with its own result.
      assert.deepEqual(await client.callTool({ name: 'search', arguments: {} }), RESULTS.big());
    });
    await client.close();
    assert.ok(lines.some((l) => l.startsWith('lro: intercepting a search result failed, forwarding it unchanged: invalid-config')), lines.join('\n'));
  });
});

describe('the offload directory', () => {
  it('is the lro command\'s default directory when none is configured', async (t) => {
    const { server, setHandlers } = serverWithTools();
    setHandlers();
    // The process's shared Lro: no `lro` option.
    await withLroServer(server, { env: {} });
    const client = await connect(server);
    const descriptor = JSON.parse(textOf(await client.callTool({ name: 'big', arguments: {} })));
    await client.close();
    const path = descriptor.files.records;
    t.after(() => rmSync(path, { force: true }));
    assert.equal(dirname(path), defaultOutputDir());
  });
});

describe('sweeping', () => {
  it('the interval is half the time to live, from 1 s to 1 h', () => {
    assert.deepEqual([0, 1, 2, 10, 3600, 7200, 7201, 10n ** 12n].map(sweepInterval),
      [1000, 1000, 1000, 5000, 1_800_000, 3_600_000, 3_600_000, 3_600_000]);
  });

  it('at start, then periodically: files expire and are deleted without a call', async () => {
    const dir = freshDir();
    const lro = new Lro();
    const sweeps = [];
    const sweep = lro.sweep.bind(lro);
    lro.sweep = async (...args) => {
      // Dated when called: the timer's ticks, not how long each sweep took.
      const at = Date.now();
      const report = await sweep(...args);
      sweeps.push({ at, deleted: report.deleted.length });
      return report;
    };
    const config = { output_dir: dir, ttl_seconds: 0 };
    // Left by an earlier run: expired as soon as it is written (ttl 0).
    const old = await lro.offload(config, { operation: 'recall', records });
    assert.equal(old.kind, 'offloaded');
    const { server, setHandlers } = serverWithTools();
    setHandlers();
    await withLroServer(server, { lro, ...config });
    await waitFor(() => sweeps.length >= 1, 'the first sweep');
    assert.equal(sweeps[0].deleted, 1, 'the sweep at start deletes what an earlier run left');
    assert.ok(!existsSync(old.path));

    const client = await connect(server);
    const descriptor = JSON.parse(textOf(await client.callTool({ name: 'big', arguments: {} })));
    await client.close();
    const made = descriptor.files.records;
    assert.ok(existsSync(made));
    const start = sweeps.length;
    await waitFor(() => !existsSync(made), 'a periodic sweep to delete the new file');
    assert.ok(sweeps.slice(start).some((s) => s.deleted === 1), JSON.stringify(sweeps));
    const gaps = sweeps.slice(1).map((s, i) => s.at - sweeps[i].at);
    assert.ok(gaps.every((g) => g >= 900), `sweeps 1 s apart (ttl 0 is clamped to 1 s): ${gaps}`);
    lro.close();
  });

  it('the timer never keeps the process alive', () => {
    // A server process that installs lro and then has nothing left to do must end on its own.
    const script = `
      import { Server } from '@modelcontextprotocol/sdk/server/index.js';
      import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
      import { Lro } from './lro.js';
      import { withLroServer } from './mcp.js';
      const server = new Server({ name: 'x', version: '0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
      const lro = new Lro();
      let started = false;
      // The sweeper's timer, seen as it is set.
      const setInterval = globalThis.setInterval;
      globalThis.setInterval = (...args) => { started = true; return setInterval(...args); };
      await withLroServer(server, { lro, output_dir: ${JSON.stringify(freshDir())} });
      while (!started) await new Promise((r) => setTimeout(r, 20));
      console.log('timer set');
    `;
    const began = Date.now();
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: HOST, encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.signal, null, `the process did not end by itself in 30 s; stderr: ${run.stderr}`);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'timer set');
    assert.ok(Date.now() - began < 30_000);
  });
});
