// withLro: large tool results of an MCP server on @modelcontextprotocol/sdk become descriptors
// of offloaded JSONL files, and the server offers `lro_extract` to read them.
//
//   import { withLro } from 'lro-wasm/mcp';
//   await withLro(server);                   // server: an McpServer (or a low-level Server)
//
// It hooks the server's own `tools/list` and `tools/call` request handlers, whenever they are
// set (McpServer sets them when the first tool is registered), so the SDK's handling stays in
// place underneath:
//   tools/list  → lro.rewriteTools: no outputSchema on tools whose results may be offloaded (a
//                 descriptor does not match it, and clients reject a result that breaks its
//                 tool's schema), and lro_extract appended as the component defines it;
//   tools/call  → the server's handler first (McpServer checks a result against the tool's
//                 outputSchema there, before it is offloaded), then lro.intercept on the result;
//                 lro_extract is answered by lro.callTool;
//   sweeping    → expired files deleted at start and every ttl/2 (1 s to 1 h), on an unref'd
//                 timer.
// Nothing is imported from the SDK: the hooks work on the server object the caller passes in, so
// there is never a second copy of the SDK, and the library alone needs none.
import { existsSync } from 'node:fs';
import { ENV_PREFIX, configLayers, envVar, loadConfig } from './config.js';
import { absoluteDir, defaultOutputDir } from './directory.js';
import { Lro, LroError } from './lro.js';

export { ENV_PREFIX, configLayers, envVar, loadConfig };

/** The options of withLro that are not `[prompt.offload]` keys. */
const OPTIONS = ['configFile', 'env', 'lro'];
/** Mark a server lro is installed on, and the handlers it installed (shared by copies of lro-wasm). */
const INSTALLED = Symbol.for('lro-wasm.installed');
const OURS = Symbol.for('lro-wasm.handler');

let shared = null; // the Lro of every server whose options bring none: at most one worker per process
const sweepers = new WeakMap(); // Lro → Map(config as JSON → sweeper): one timer per distinct config

/** Milliseconds between two sweeps for a time to live: half of it, from 1 s to 1 h. */
export function sweepInterval(ttlSeconds) {
  return Math.min(3_600_000, Math.max(1_000, Number(ttlSeconds) * 500));
}

/**
 * Adds lro to an `McpServer` of @modelcontextprotocol/sdk 1.x (a low-level `Server` is taken too)
 * and resolves to it, once the component has layered the configuration. Call it once per server,
 * before or after registering tools, before or after `connect`. Rejects with an LroError of kind
 * `invalid-config` naming the key and its source when a setting is wrong.
 */
export async function withLro(server, options = {}) {
  if (isServer(server)) return install(server, options, 'withLro options');
  if (!isServer(server?.server)) {
    throw new TypeError(`withLro: expected an McpServer (or a Server) of @modelcontextprotocol/sdk 1.x, got ${describe(server)}`);
  }
  await install(server.server, options, 'withLro options', (config) => {
    // McpServer would list the caller's tool and lro's under one name: refuse it now rather
    // than at the first tools/list.
    if (config.extract_tool && Object.hasOwn(server._registeredTools ?? {}, 'lro_extract')) {
      throw new LroError('invalid-input', 'withLro: the server already has a tool named lro_extract, the name of lro\'s own '
        + 'tool; rename it, or set extract_tool = false');
    }
  });
  return server;
}

/** withLro for a low-level `Server` of @modelcontextprotocol/sdk 1.x; resolves to it. */
export async function withLroServer(server, options = {}) {
  if (!isServer(server)) {
    const hint = isServer(server?.server) ? ': this is an McpServer, use withLro' : '';
    throw new TypeError(`withLroServer: expected a low-level Server of @modelcontextprotocol/sdk 1.x, got ${describe(server)}${hint}`);
  }
  return install(server, options, 'withLroServer options');
}

/** The parts of the SDK's Server (Protocol) the hooks rely on, there since 1.0. */
function isServer(s) {
  return s !== null && typeof s === 'object' && s._requestHandlers instanceof Map
    && typeof s.setRequestHandler === 'function' && typeof s.getClientCapabilities === 'function';
}

function describe(v) {
  if (v === null || typeof v !== 'object') return String(v);
  return `an object of class ${v.constructor?.name ?? 'Object'} (${Object.keys(v).slice(0, 6).join(', ') || 'no keys'})`;
}

async function install(server, options, source, check = () => {}) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${source}: expected an object, got ${describe(options)}`);
  }
  const { configFile = null, env = process.env, lro = null } = options;
  if (lro !== null && typeof lro?.intercept !== 'function') throw new TypeError(`${source}: lro must be an Lro, got ${describe(lro)}`);
  if (configFile !== null && typeof configFile !== 'string') throw new TypeError(`${source}: configFile must be a path, got ${describe(configFile)}`);
  if (server[INSTALLED]) throw new Error(`${source.split(' ')[0]}: lro is installed on this server already; call it once per server`);
  // Marked before the configuration is layered, so that a second call meanwhile is refused too.
  server[INSTALLED] = true;
  const theLro = lro ?? (shared ??= new Lro());
  let config;
  try {
    // The component's default is extract_tool off; a server that lists lro_extract turns it on
    // so that descriptors point the model at the tool rather than at a shell.
    config = await loadConfig(theLro, { base: { extract_tool: true }, options, env: env ?? {}, configFile, source, others: OPTIONS });
    check(config);
  } catch (e) {
    delete server[INSTALLED];
    throw e;
  }
  const setup = { server, config, lro: theLro };

  const hook = () => {
    for (const [method, make] of [['tools/list', listTools], ['tools/call', callTool]]) {
      const handler = server._requestHandlers.get(method);
      if (handler && !handler[OURS]) {
        const ours = make(setup, handler);
        ours[OURS] = true;
        server._requestHandlers.set(method, ours);
      }
    }
  };
  // A handler set later (McpServer sets both on its first registerTool) is hooked as it is set.
  const setRequestHandler = server.setRequestHandler;
  server.setRequestHandler = function (...args) {
    const out = setRequestHandler.apply(this, args);
    hook();
    return out;
  };
  hook();
  startSweeping(setup);
  return server;
}

/** tools/list: every page through rewriteTools; lro_extract is appended to the last page only. */
function listTools({ config, lro }, handler) {
  return async (request, extra) => {
    const result = await handler(request, extra);
    if (!Array.isArray(result?.tools)) return result;
    const page = result.nextCursor ? { ...config, extract_tool: false } : config;
    let tools;
    try {
      tools = JSON.parse(await lro.rewriteTools(page, result.tools));
    } catch (e) {
      // A bad setting the component refuses, or a tool of the server named lro_extract: the
      // client shows this message, which names it.
      throw new Error(`lro: tools/list could not be rewritten: ${e.kind ?? e.name}: ${e.message}`);
    }
    return { ...result, tools };
  };
}

/** tools/call: lro_extract answered here; every other result through intercept. */
function callTool({ server, config, lro }, handler) {
  return async (request, extra) => {
    const params = request?.params ?? {};
    if (params.name === 'lro_extract' && config.extract_tool) return extract(lro, config, params.arguments);
    const result = await handler(request, extra);
    // A task-augmented call is answered with the task, not with the tool's result.
    if (params.task || !Array.isArray(result?.content)) return result;
    return intercept(server, lro, config, params, result);
  };
}

const text = (t, isError = false) => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError } : {}) });

/** lro_extract: the arguments go to the component as they came; it checks them against the schema. */
async function extract(lro, config, args) {
  try {
    return text((await lro.callTool(config, args)).text);
  } catch (e) {
    // A bad path, a bad filter, an expired file: the model reads the message and tries again.
    if (e instanceof LroError) return text(`${e.kind}: ${e.message}`, true);
    throw e;
  }
}

/** A tool's result through interceptor.intercept; the result itself when that fails. */
async function intercept(server, lro, config, params, result) {
  const { name, arguments: args = {}, _meta } = params;
  // Newer protocols carry the client's capabilities in each request's _meta, older ones in
  // initialize; either tells the component whether a downstream LRO proxy offloads already.
  const meta = _meta && Object.keys(_meta).some((k) => k.startsWith('io.modelcontextprotocol/'))
    ? _meta
    : { capabilities: server.getClientCapabilities() ?? {}, clientInfo: server.getClientVersion?.() ?? {} };
  try {
    const out = await lro.intercept(config, { tool: name, arguments: args ?? {}, result, meta });
    return out.kind === 'unchanged' ? result : JSON.parse(out.result);
  } catch (e) {
    // An unusable directory or a failed write degrades inside the component; what gets here
    // (a result it cannot read, a limit, a bad setting) must not cost the caller the result.
    console.error(`lro: intercepting a ${name} result failed, forwarding it unchanged: ${e.kind ?? e.name}: ${e.message}`);
    return result;
  }
}

/**
 * Checks the configuration with the component, sweeps at once and then every sweepInterval(ttl):
 * once per Lro and configuration, however many servers share them.
 */
function startSweeping({ config, lro }) {
  const key = JSON.stringify(config, (_, v) => (typeof v === 'bigint' ? `${v}` : v));
  let byConfig = sweepers.get(lro);
  if (!byConfig) sweepers.set(lro, (byConfig = new Map()));
  if (byConfig.has(key)) return;
  const sweeper = { running: false, lastError: null, timer: null };
  byConfig.set(key, sweeper);
  const dir = config.output_dir ? absoluteDir(config.output_dir) : defaultOutputDir();
  const sweep = async () => {
    // Nothing was ever written there: nothing to delete (sweep needs the directory to exist).
    if (sweeper.running || !existsSync(dir)) return;
    sweeper.running = true;
    try {
      await lro.sweep(config, Date.now());
      sweeper.lastError = null;
    } catch (e) {
      // Stopped by lro.close() (the server is shutting down): nothing went wrong.
      if (e.closed) return;
      const message = `${e.kind ?? e.name}: ${e.message}`;
      // Said once, not at every interval, until it changes or a sweep works again.
      if (message !== sweeper.lastError) console.error(`lro: sweeping ${dir} failed: ${message}`);
      sweeper.lastError = message;
    } finally {
      sweeper.running = false;
    }
  };
  (async () => {
    // What the component refuses of the configuration (a `prefix` with a `/`) is said at start,
    // not first at a tools/list.
    try {
      await lro.rewriteTools(config, []);
    } catch (e) {
      // Stopped by lro.close() (the server is shutting down): nothing to report.
      if (!e.closed) {
        const what = e.kind === 'invalid-config' ? 'the configuration is refused' : 'the configuration could not be checked';
        console.error(`lro: ${what}: ${e.kind ?? e.name}: ${e.message}`);
      }
    }
    await sweep();
    // The whole config: the component layered it over its defaults.
    sweeper.timer = setInterval(sweep, sweepInterval(config.ttl_seconds));
    // The sweeper must never be what keeps a server's process alive.
    sweeper.timer.unref();
  })().catch((e) => e.closed || console.error(`lro: cannot start sweeping ${dir}: ${e.kind ?? e.name}: ${e.message}`));
}
