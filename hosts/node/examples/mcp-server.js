#!/usr/bin/env node
// An MCP server (stdio) whose tool results go through the lro component: a large result is
// written to a JSONL file and the model gets a descriptor instead; `lro_extract` then runs jq
// over that file. Run: LRO_DIR=/tmp/lro-mcp node examples/mcp-server.js
//
// Environment: LRO_DIR (offload directory; default a new private temp dir), LRO_THRESHOLD
// (tokens; default 1600).
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Lro, LroError } from '../lro.js';
import { getNote, searchNotes } from './notes.js';

const config = {
  dir: process.env.LRO_DIR || mkdtempSync(join(tmpdir(), 'lro-mcp-')),
  threshold: Number(process.env.LRO_THRESHOLD || 1600),
  native: true, // we offer lro_extract, so descriptors point the model to it
};
// stdout is the MCP channel: everything else goes to stderr.
const lro = new Lro({ onEvent: (e) => console.error(`lro: ${e.kind} ${e.path}`) });

const text = (t, isError = false) => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError } : {}) });

// No tool has an outputSchema: an offloaded result no longer matches one, and SDK clients reject
// results that do not (FACTS.md, "MCP").
const tools = [
  {
    name: 'search_notes',
    description: 'Search the team notes by topic word; returns every match as a JSON array.',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string' }, count: { type: 'integer', minimum: 1, maximum: 5000 } },
    },
    run: ({ query = '', count = 300 }) => text(JSON.stringify(searchNotes(query, count), null, 1)),
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
  {
    name: 'lro_extract',
    description: 'Extract values from an offloaded result file (a descriptor\'s file path) with a jq query '
      + '(run per record, or over all records with slurp) or a recipe number.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string' },
        recipe: { type: 'integer', minimum: 1, maximum: 10 },
        query: { type: 'string' },
        params: { type: 'object' },
        slurp: { type: 'boolean' },
        limit: { type: 'integer', minimum: 1 },
      },
      required: ['path'],
    },
    run: async (args) => {
      try {
        return text((await lro.extract(config, args)).text);
      } catch (e) {
        if (e instanceof LroError) return text(`${e.kind}: ${e.message}`, true);
        throw e;
      }
    },
  },
];

const server = new Server({ name: 'lro-notes-example', version: '0.1.0' }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })),
}));

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args = {} } = request.params;
  const tool = tools.find((t) => t.name === name);
  if (!tool) return text(`unknown tool ${name}`, true);
  const result = await tool.run(args);
  // Extraction output is sized by its own limit and must never be offloaded again.
  return name === 'lro_extract' ? result : offload(request, result);
});

/** Passes a tool result through interceptor.intercept; forwards what it says to forward. */
async function offload(request, result) {
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
    // Offloading is an optimisation: if it fails, the tool's own result still goes out.
    console.error(`lro: intercept failed, forwarding the result unchanged: ${e.message}`);
    return result;
  }
}

// Delete what earlier runs left behind and has expired (sweep needs the directory to exist).
mkdirSync(config.dir, { recursive: true, mode: 0o700 });
await lro.sweep(config, Date.now()).catch((e) => console.error(`lro: sweep failed: ${e.message}`));
await server.connect(new StdioServerTransport());
console.error(`lro-notes-example: offloading into ${config.dir}`);
