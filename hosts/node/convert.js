// The JSON form of WIT values (docs/HOSTS.md) to and from the JS form jco uses.
//
// jco form: records with camelCase fields, variants as {tag, val}, enums as strings, option as
// the value or undefined, u64 as BigInt, `json` as a string.

export class LroError extends Error {
  /** kind: a WIT error case ("not-found", ...) or a host one ("timeout", "memory-limit", ...). */
  constructor(kind, message) {
    super(message);
    this.name = 'LroError';
    this.kind = kind;
  }
}

const snake = (key) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** jco form → JSON form: variants gain `kind`, fields become snake_case, BigInt becomes Number. */
export function toJson(value) {
  if (typeof value === 'bigint') return Number(value);
  if (value === undefined) return null;
  if (Array.isArray(value)) return value.map(toJson);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  if (keys.length === 2 && 'tag' in value && 'val' in value) {
    return { kind: value.tag, ...toJson(value.val) };
  }
  return Object.fromEntries(keys.map((k) => [snake(k), toJson(value[k])]));
}

// ---- JSON form → jco form, checking types so a bad argument is a clear LroError, never a
// TypeError from deep inside jco's lowering code.

const describeValue = (v) => (v === undefined ? 'nothing' : JSON.stringify(v) ?? String(v));

function check(ok, kind, what, expected, value) {
  if (!ok) throw new LroError(kind, `${what}: expected ${expected}, got ${describeValue(value)}`);
}

const isU32 = (v) => Number.isInteger(v) && v >= 0 && v <= 0xffffffff;

function u32(v, what, kind = 'invalid-input') {
  check(isU32(v), kind, what, 'an integer from 0 to 4294967295', v);
  return v;
}

function u64(v, what, kind = 'invalid-input') {
  const ok = (typeof v === 'bigint' && v >= 0n && v < 2n ** 64n) || (Number.isSafeInteger(v) && v >= 0);
  check(ok, kind, what, 'a non-negative integer', v);
  return BigInt(v);
}

function bool(v, what, kind = 'invalid-input') {
  check(typeof v === 'boolean', kind, what, 'true or false', v);
  return v;
}

function str(v, what, kind = 'invalid-input') {
  check(typeof v === 'string', kind, what, 'a string', v);
  return v;
}

function oneOf(v, cases, what, kind = 'invalid-input') {
  check(cases.includes(v), kind, what, `one of ${cases.join(', ')}`, v);
  return v;
}

const absent = (v) => v === undefined || v === null;
const option = (v, f) => (absent(v) ? undefined : f(v));

/** `json` as input: a string verbatim, anything else serialised compactly. */
function json(v, what) {
  if (typeof v === 'string') return v;
  const text = JSON.stringify(v);
  check(text !== undefined, 'invalid-input', what, 'JSON text or a JSON value', v);
  return text;
}

function object(v, what, kind = 'invalid-input') {
  check(v !== null && typeof v === 'object' && !Array.isArray(v), kind, what, 'an object', v);
  return v;
}

function known(v, fields, what, kind) {
  for (const key of Object.keys(v)) {
    if (!fields.includes(key)) {
      throw new LroError(kind, `${what}: unknown field "${key}" (known: ${fields.join(', ')})`);
    }
  }
}

export const DETAILS = ['light', 'medium', 'full'];
const OPERATIONS = ['recall', 'search', 'list', 'inject'];

/** The defaults of `[prompt.offload]` (docs/HOSTS.md, "Config"). */
export const CONFIG_DEFAULTS = Object.freeze({
  enabled: true, threshold: 1600, ttl: 3600, prefix: 'atlatl', descriptor: 'full',
  native: false, schema_version: '0.1', recipes: 'v2', tools: [],
  max_bytes: 1073741824, max_files: 1000,
});
// The fields a caller may set. `dir_problem` is not one: the host sets it (lro.js) when it finds
// the directory unusable, and a caller setting it would make every offload degrade.
const CONFIG_FIELDS = ['dir', ...Object.keys(CONFIG_DEFAULTS)];
const HOST_ONLY_FIELDS = ['dir_problem'];
const TOOL_FIELDS = ['name', 'enabled', 'threshold', 'sections', 'inline_keys'];

/** A partial config in JSON form → a complete jco config (dir left as given). */
export function config(partial) {
  const k = 'invalid-config';
  const given = object(partial ?? {}, 'config', k);
  for (const key of HOST_ONLY_FIELDS) {
    if (key in given) throw new LroError(k, `config.${key}: set by the host, never by callers`);
  }
  known(given, CONFIG_FIELDS, 'config', k);
  const c = { ...CONFIG_DEFAULTS };
  for (const [key, value] of Object.entries(given)) if (value !== undefined) c[key] = value;
  const strings = (v, what) => option(v, (list) => {
    check(Array.isArray(list), k, what, 'a list of strings', list);
    return list.map((s, i) => str(s, `${what}[${i}]`, k));
  });
  check(Array.isArray(c.tools), k, 'config.tools', 'a list', c.tools);
  return {
    enabled: bool(c.enabled, 'config.enabled', k),
    threshold: u32(c.threshold, 'config.threshold', k),
    ttl: u64(c.ttl, 'config.ttl', k),
    dir: str(c.dir, 'config.dir', k),
    prefix: str(c.prefix, 'config.prefix', k),
    descriptor: oneOf(c.descriptor, ['full', 'bare'], 'config.descriptor', k),
    native: bool(c.native, 'config.native', k),
    schemaVersion: str(c.schema_version, 'config.schema_version', k),
    recipes: oneOf(c.recipes, ['v2', 'v1'], 'config.recipes', k),
    tools: c.tools.map((t, i) => {
      const what = `config.tools[${i}]`;
      object(t, what, k);
      known(t, TOOL_FIELDS, what, k);
      return {
        name: str(t.name, `${what}.name`, k),
        enabled: option(t.enabled, (v) => bool(v, `${what}.enabled`, k)),
        threshold: option(t.threshold, (v) => u32(v, `${what}.threshold`, k)),
        sections: strings(t.sections, `${what}.sections`),
        inlineKeys: strings(t.inline_keys, `${what}.inline_keys`),
      };
    }),
    maxBytes: u64(c.max_bytes, 'config.max_bytes', k),
    maxFiles: u32(c.max_files, 'config.max_files', k),
    dirProblem: undefined,
  };
}

export function request(r) {
  object(r, 'request');
  known(r, ['operation', 'query', 'detail', 'records', 'text'], 'request', 'invalid-input');
  check(!absent(r.records), 'invalid-input', 'request.records', 'JSON text or a JSON array', r.records);
  return {
    operation: oneOf(r.operation, OPERATIONS, 'request.operation'),
    query: option(r.query, (v) => str(v, 'request.query')),
    detail: option(r.detail, (v) => oneOf(v, DETAILS, 'request.detail')),
    records: json(r.records, 'request.records'),
    text: option(r.text, (v) => str(v, 'request.text')),
  };
}

export function toolCall(c) {
  object(c, 'call');
  known(c, ['tool', 'arguments', 'result', 'meta'], 'call', 'invalid-input');
  check(!absent(c.result), 'invalid-input', 'call.result', 'a CallToolResult (JSON text or object)', c.result);
  return {
    tool: str(c.tool, 'call.tool'),
    arguments: absent(c.arguments) ? '{}' : json(c.arguments, 'call.arguments'),
    result: json(c.result, 'call.result'),
    meta: option(c.meta, (v) => json(v, 'call.meta')),
  };
}

export function extractRequest(r) {
  object(r, 'request');
  known(r, ['path', 'recipe', 'query', 'params', 'slurp', 'limit'], 'request', 'invalid-request');
  return {
    path: str(r.path, 'request.path', 'invalid-request'),
    recipe: option(r.recipe, (v) => u32(v, 'request.recipe', 'invalid-request')),
    query: option(r.query, (v) => str(v, 'request.query', 'invalid-request')),
    params: option(r.params, (v) => json(v, 'request.params')),
    slurp: absent(r.slurp) ? false : bool(r.slurp, 'request.slurp', 'invalid-request'),
    limit: option(r.limit, (v) => u32(v, 'request.limit', 'invalid-request')),
  };
}

export const args = {
  detail: (v) => oneOf(v, DETAILS, 'detail'),
  file: (v) => option(v, (f) => str(f, 'file')),
  text: (v) => str(v, 'text'),
  filter: (v) => str(v, 'filter', 'invalid-filter'),
  input: (v) => json(v, 'input'),
  flag: (v, what) => (absent(v) ? false : bool(v, what)),
  limit: (v) => option(v, (n) => u32(n, 'limit')),
  now: (v) => u64(v, 'now'),
  tools: (v) => json(v, 'tools'),
  // A tools/call request without `arguments` means none were given: an empty object.
  arguments: (v) => (v === undefined ? '{}' : json(v, 'arguments')),
};
