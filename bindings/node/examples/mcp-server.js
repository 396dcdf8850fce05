#!/usr/bin/env node
// An MCP server (stdio) whose tool results go through the lro component: a large result is
// written to a JSONL file and the model gets a descriptor instead; the `lro_extract` tool then
// runs recipes or jq over that file.
//
//   ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR=/tmp/lro-mcp node examples/mcp-server.js
//
// Environment: two of the spec's configuration variables, ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR
// (default: empty, the default directory `lro-{uid}` in the system temporary directory) and
// ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS (default: the component's, 1600). Every other setting
// is the component's default, but `extract_tool`: on.
//
// The three places a server wires the component in:
//   tools/list  → lro.rewriteTools: drops outputSchema from tools whose results may be offloaded
//                 (a descriptor does not match the schema, and clients reject a result that
//                 breaks it) and appends lro_extract exactly as the component defines it;
//   tools/call  → lro.intercept on every result: forwards it, or a descriptor, or a truncation;
//   lro_extract → lro.callTool with the call's arguments as they came.
import { mkdirSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { defaultOutputDir, Lro, LroError } from '../lro.js';
import { getNote, recallMemories, searchNotes } from './notes.js';

const config = { extract_tool: true }; // we offer lro_extract, so descriptors point the model to it
for (const key of ['output_dir', 'threshold_tokens']) {
  const value = process.env[`ATLATL_PROMPT__OFFLOAD__${key.toUpperCase()}`];
  // A number when it looks like one; anything else is passed on, and refused naming the key.
  if (value !== undefined) config[key] = /^\d+$/.test(value) ? Number(value) : value;
}
// stdout is the MCP channel: everything else goes to stderr.
const lro = new Lro({ onEvent: (e) => console.error(`lro: ${e.kind} ${e.path}`) });

const text = (t, isError = false) => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError } : {}) });

// The server's own tools, as it would list them without LRO.
const tools = [
  {
    name: 'search_notes',
    description: 'Search the team notes by topic word; returns every match.',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string' }, count: { type: 'integer', minimum: 1, maximum: 5000 } },
    },
    outputSchema: {
      type: 'object',
      properties: { notes: { type: 'array', items: { type: 'object' } } },
      required: ['notes'],
    },
    run: ({ query = '', count = 300 }) => {
      const notes = searchNotes(query, count);
      return { ...text(JSON.stringify(notes, null, 1)), structuredContent: { notes } };
    },
  },
  {
    name: 'recall_memories',
    description: 'Recall the team\'s memories about a topic word, best match first.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string' },
        detail: { type: 'string', enum: ['light', 'medium', 'full'] },
        count: { type: 'integer', minimum: 1, maximum: 5000 },
      },
    },
    run: ({ query = '', detail = 'light', count = 120 }) =>
      text(JSON.stringify({ memories: recallMemories(query, detail, count) })),
  },
  {
    name: 'get_note',
    description: 'One note by id (e.g. "note-7").',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    run: ({ id }) => {
      const note = getNote(id);
      return note ? text(JSON.stringify(note)) : text(`no note ${id}`, true);
    },
  },
];

const server = new Server({ name: 'lro-notes-example', version: '0.1.0' }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async () => {
  const listed = tools.map(({ run, ...tool }) => tool);
  return { tools: JSON.parse(await lro.rewriteTools(config, listed)) };
});

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args } = request.params;
  // Extraction output is sized by its own limit and is never offloaded again.
  if (name === 'lro_extract') return extract(args);
  const tool = tools.find((t) => t.name === name);
  const result = tool ? await tool.run(args ?? {}) : text(`unknown tool ${name}`, true);
  return intercept(request, result);
});

/** lro_extract: the arguments go to the component unchanged; it checks them against the schema. */
async function extract(args) {
  try {
    return text((await lro.callTool(config, args)).text);
  } catch (e) {
    // A bad path, a bad filter, an expired file: the model reads the message and tries again.
    if (e instanceof LroError) return text(`${e.kind}: ${e.message}`, true);
    throw e;
  }
}

/** Passes a tool result through interceptor.intercept; forwards what it says to forward. */
async function intercept(request, result) {
  const { name, arguments: args = {}, _meta } = request.params;
  // Newer protocols carry the client's capabilities in each request's _meta; older ones in
  // initialize. Either tells the component whether a downstream LRO proxy offloads already.
  const meta = _meta && Object.keys(_meta).some((k) => k.startsWith('io.modelcontextprotocol/'))
    ? _meta
    : { capabilities: server.getClientCapabilities() ?? {}, clientInfo: server.getClientVersion() ?? {} };
  try {
    const out = await lro.intercept(config, { tool: name, arguments: args, result, meta });
    return out.kind === 'unchanged' ? result : JSON.parse(out.result);
  } catch (e) {
    // Only a malformed result gets here (an unusable directory degrades instead): forward the
    // tool's own result rather than lose it.
    console.error(`lro: intercept failed, forwarding the result unchanged: ${e.message}`);
    return result;
  }
}

// Delete what earlier runs left behind and has expired (sweep needs the directory to exist). A
// bad setting stops the server here, naming the key, without a stack trace.
const dir = config.output_dir || defaultOutputDir();
mkdirSync(dir, { recursive: true, mode: 0o700 });
try {
  await lro.sweep(config, Date.now());
} catch (e) {
  if (e instanceof LroError && e.kind === 'invalid-config') {
    console.error(`lro-notes-example: ${e.kind}: ${e.message}`);
    process.exit(1);
  }
  console.error(`lro: sweep failed: ${e.message}`);
}
await server.connect(new StdioServerTransport());
console.error(`lro-notes-example: offloading into ${dir}`);
