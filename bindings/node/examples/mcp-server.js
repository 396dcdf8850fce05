#!/usr/bin/env node
// An MCP server (stdio, the SDK's McpServer) whose tool results go through the lro component: a
// large result is written to a JSONL file and the model gets a descriptor instead; the
// `lro_extract` tool then runs recipes or jq over that file.
//
//   ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR=/tmp/lro-mcp node examples/mcp-server.js
//
// lro comes in through withLro (mcp.js), which reads the configuration as the `lro` command
// does: the spec's ATLATL_PROMPT__OFFLOAD__* variables (OUTPUT_DIR, THRESHOLD_TOKENS, TTL_SECONDS,
// ...), or a TOML file named by LRO_CONFIG here. Left unset, the offload directory is the default
// one (`lro-{uid}` in the system temporary directory) and `extract_tool` is on. The tools are
// written as for any McpServer; withLro does the rest:
//   tools/list  → no outputSchema on tools whose results may be offloaded (a descriptor does not
//                 match the schema, and clients reject a result that breaks it), and
//                 lro_extract appended exactly as the component defines it;
//   tools/call  → every result through the component's intercept: forwarded as it is, or a
//                 descriptor, or a truncation; lro_extract calls run in the component;
//   expired files are swept at start and every ttl/2.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { Lro, LroError } from '../lro.js';
import { withLro } from '../mcp.js';
import { getNote, recallMemories, searchNotes } from './notes.js';

const text = (t, isError = false) => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError } : {}) });
const countSchema = z.number().int().min(1).max(5000).optional();

const server = new McpServer({ name: 'lro-notes-example', version: '0.1.0' });

server.registerTool('search_notes', {
  description: 'Search the team notes by topic word; returns every match.',
  inputSchema: { query: z.string().optional(), count: countSchema },
  outputSchema: { notes: z.array(z.looseObject({ id: z.string() })) },
}, async ({ query = '', count = 300 }) => {
  const notes = searchNotes(query, count);
  return { ...text(JSON.stringify(notes, null, 1)), structuredContent: { notes } };
});

server.registerTool('recall_memories', {
  description: 'Recall the team\'s memories about a topic word, best match first.',
  inputSchema: { query: z.string().optional(), detail: z.enum(['light', 'medium', 'full']).optional(), count: countSchema },
}, async ({ query = '', detail = 'light', count = 120 }) => text(JSON.stringify({ memories: recallMemories(query, detail, count) })));

server.registerTool('get_note', {
  description: 'One note by id (e.g. "note-7").',
  inputSchema: { id: z.string() },
}, async ({ id }) => {
  const note = getNote(id);
  return note ? text(JSON.stringify(note)) : text(`no note ${id}`, true);
});

// Our own Lro, for its events (stdout is the MCP channel: they go to stderr); withLro makes a
// shared one when given none. A bad setting stops the server here, naming the key and where it
// came from.
try {
  await withLro(server, {
    configFile: process.env.LRO_CONFIG || null,
    lro: new Lro({ onEvent: (e) => console.error(`lro: ${e.kind} ${e.path}`) }),
  });
} catch (e) {
  if (!(e instanceof LroError)) throw e;
  console.error(`lro-notes-example: ${e.kind}: ${e.message}`);
  process.exit(1);
}
await server.connect(new StdioServerTransport());
console.error('lro-notes-example: ready');
