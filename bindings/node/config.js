// The `[prompt.offload]` configuration read the way the `lro` command reads it
// (host/src/config.rs): the spec's keys from a caller's object, the `ATLATL_PROMPT__OFFLOAD__*`
// environment variables and a TOML file, each value checked and a bad one refused with a message
// naming the key and where it came from. The component's defaults are not repeated here: a key
// no layer sets is left out, and the component fills it in.
import { readFileSync } from 'node:fs';
import { parse } from 'smol-toml';
import { LroError, RENAMED } from './convert.js';
import { osError } from './directory.js';

/** The keys of `[prompt.offload]` besides the `tools` tables, in docs/CONFIGURATION.md's order. */
export const KEYS = Object.freeze(['enabled', 'threshold_tokens', 'ttl_seconds', 'output_dir', 'prefix', 'descriptor',
  'schema_version', 'extract_tool', 'recipes', 'max_bytes', 'max_files']);
/** The keys of one `[prompt.offload.tools.NAME]` table. */
export const TOOL_KEYS = Object.freeze(['enabled', 'threshold_tokens', 'sections', 'inline_keys']);

const U32 = 4294967295n;
const U64 = 2n ** 64n - 1n;
/** What each key holds: a boolean, a whole number up to a maximum, a string, or one of some strings. */
const RULES = {
  enabled: 'bool', extract_tool: 'bool',
  threshold_tokens: U32, max_files: U32, ttl_seconds: U64, max_bytes: U64,
  output_dir: 'string', prefix: 'string', schema_version: 'string',
  descriptor: ['full', 'bare'], recipes: ['v2', 'v1'],
};

/**
 * What every configuration variable's name starts with; the key follows in capitals. `ATLATL_`
 * because LRO was specified for atlatl, a memory server, and keeps its names.
 */
export const ENV_PREFIX = 'ATLATL_PROMPT__OFFLOAD__';
/** The environment variable of a key: `ATLATL_PROMPT__OFFLOAD__` and the key in capitals. */
export const envVar = (key) => `${ENV_PREFIX}${key.toUpperCase()}`;

const invalid = (key, source, message) => new LroError('invalid-config', `prompt.offload.${key} (from ${source}): ${message}`);
const renamedHint = (key) => (RENAMED[key] ? ` (now ${RENAMED[key]})` : '');

/** A value as the error shows it, in the notation of the layer it came from. */
function shown(value, from) {
  if (from === 'text') return JSON.stringify(value);
  if (typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) return `[${value.map((v) => shown(v, from)).join(', ')}]`;
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const members = Object.entries(value).map(([k, v]) => `${k}${from === 'toml' ? ' = ' : ': '}${shown(v, from)}`);
    return members.length ? `{ ${members.join(', ')} }` : '{}';
  }
  return value === undefined ? 'nothing' : JSON.stringify(value) ?? String(value);
}

/** A bigint small enough for a Number becomes one: the JSON form's numbers are Numbers. */
const narrow = (n) => (n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n);

/**
 * One key's value from one layer, checked. `from`: `text` (an environment variable: "true",
 * "1", " 42 "), `toml` (integers are BigInts, so that `5.0` is told from `5`) or `js` (a
 * caller's object: booleans, Numbers or BigInts, strings).
 */
function value(key, raw, from, source) {
  const rule = RULES[key];
  const bad = (expected) => invalid(key, source, `expected ${expected}, got ${shown(raw, from)}`);
  if (rule === 'bool') {
    if (typeof raw === 'boolean') return raw;
    if (from === 'text') {
      if (raw.toLowerCase() === 'true' || raw === '1') return true;
      if (raw.toLowerCase() === 'false' || raw === '0') return false;
    }
    throw bad('true or false');
  }
  if (typeof rule === 'bigint') {
    let n = null;
    if (from === 'text' && /^\+?[0-9]+$/.test(raw.trim())) n = BigInt(raw.trim());
    if (from === 'toml' && typeof raw === 'bigint') n = raw;
    if (from === 'js' && (typeof raw === 'bigint' || Number.isSafeInteger(raw))) n = BigInt(raw);
    if (n === null || n < 0n || n > rule) throw bad(`a whole number from 0 to ${rule}`);
    return narrow(n);
  }
  if (typeof raw !== 'string') throw bad('a string');
  if (Array.isArray(rule) && !rule.includes(raw)) throw bad(rule.map((r) => `"${r}"`).join(' or '));
  return raw;
}

/** One tool's settings (`{name, enabled?, ...}`), checked; `name` is given separately. */
function toolSettings(name, table, from, source) {
  const bad = (key, message) => invalid(`tools.${name}${key ? `.${key}` : ''}`, source, message);
  if (table === null || typeof table !== 'object' || Array.isArray(table)) {
    throw bad('', `expected a table, got ${shown(table, from)}`);
  }
  const tool = { name };
  for (const [key, raw] of Object.entries(table)) {
    if (from === 'js' && key === 'name') continue;
    if (!TOOL_KEYS.includes(key)) throw bad(key, `unknown key; known keys: ${TOOL_KEYS.join(', ')}`);
    // The caller's object form may say null for "not set", as lro.defaults() gives it back.
    if (from === 'js' && raw === null) continue;
    if (key === 'enabled') {
      if (typeof raw !== 'boolean') throw bad(key, `expected true or false, got ${shown(raw, from)}`);
      tool.enabled = raw;
    } else if (key === 'threshold_tokens') {
      const ok = typeof raw === 'bigint' || (from === 'js' && Number.isSafeInteger(raw));
      if (!ok || BigInt(raw) < 0n || BigInt(raw) > U32) {
        throw bad(key, `expected a whole number from 0 to ${U32}, got ${shown(raw, from)}`);
      }
      tool.threshold_tokens = Number(raw);
    } else {
      if (!Array.isArray(raw) || !raw.every((s) => typeof s === 'string')) {
        throw bad(key, `expected a list of strings, got ${shown(raw, from)}`);
      }
      tool[key] = [...raw];
    }
  }
  return tool;
}

/** The `[prompt.offload]` table of a TOML file as a layer: its keys, and its tools by name. */
export function readConfigFile(path) {
  const fail = (message) => new LroError('invalid-config', `config file ${path}: ${message}`);
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw fail(osError(e));
  }
  let doc;
  try {
    doc = parse(text, { integersAsBigInt: true });
  } catch (e) {
    throw fail(e.message);
  }
  const layer = { values: {}, tools: new Map() };
  // Other tables of the file belong to other programs (the spec's file holds more than this).
  const offload = isTable(doc.prompt) ? doc.prompt.offload : undefined;
  if (offload === undefined) return layer;
  if (!isTable(offload)) throw fail('[prompt.offload] must be a table');
  for (const [key, raw] of Object.entries(offload)) {
    if (key === 'tools') {
      if (!isTable(raw)) throw fail('[prompt.offload.tools] must be a table');
      for (const [name, table] of Object.entries(raw)) layer.tools.set(name, toolSettings(name, table, 'toml', path));
    } else if (!KEYS.includes(key)) {
      throw new LroError('invalid-config', `unknown key prompt.offload.${key} in ${path}${renamedHint(key)}; known keys: ${KEYS.join(', ')}`);
    } else {
      layer.values[key] = value(key, raw, 'toml', path);
    }
  }
  return layer;
}

const isTable = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);

/** The `ATLATL_PROMPT__OFFLOAD__*` variables of `env` as a layer. */
export function readEnvironment(env) {
  const layer = { values: {}, tools: new Map() };
  for (const key of KEYS) {
    const raw = env[envVar(key)];
    if (raw !== undefined) layer.values[key] = value(key, raw, 'text', envVar(key));
  }
  // A variable under an old name, or misspelt, would otherwise be ignored without a word. In
  // name order, as the component checks them (core/src/layers.rs).
  for (const name of Object.keys(env).filter((n) => n.startsWith(ENV_PREFIX)).sort()) {
    const key = name.slice(ENV_PREFIX.length).toLowerCase();
    if (RENAMED[key]) throw invalid(key, name, `renamed: set ${envVar(RENAMED[key])} instead`);
    if (!KEYS.includes(key)) {
      throw new LroError('invalid-config', `unknown key prompt.offload.${key} in ${name}; known keys: ${KEYS.join(', ')}`);
    }
    if (name !== envVar(key)) {
      throw invalid(key, name, `variables are named with the key in capitals: set ${envVar(key)} instead`);
    }
  }
  return layer;
}

/**
 * A caller's object as a layer: the `[prompt.offload]` keys, and `tools` as a list of
 * `{name, ...}` objects (the form `Lro` takes). `others`: the names of the caller's options that
 * are not configuration, allowed and skipped.
 */
export function readObject(object, source, others = []) {
  const layer = { values: {}, tools: new Map() };
  if (object === undefined || object === null) return layer;
  if (typeof object !== 'object' || Array.isArray(object)) {
    throw new LroError('invalid-config', `${source}: expected an object, got ${shown(object, 'js')}`);
  }
  for (const [key, raw] of Object.entries(object)) {
    // null as undefined: a key given no value sets nothing, as in the other hosts.
    if (others.includes(key) || raw === undefined || raw === null) continue;
    if (key === 'tools') {
      if (!Array.isArray(raw)) throw invalid('tools', source, `expected a list of {name, ...} objects, got ${shown(raw, 'js')}`);
      raw.forEach((tool, i) => {
        if (typeof tool?.name !== 'string') {
          throw invalid(`tools[${i}]`, source, `expected an object with a string name, got ${shown(tool, 'js')}`);
        }
        layer.tools.set(tool.name, { ...layer.tools.get(tool.name), ...toolSettings(tool.name, tool, 'js', source) });
      });
    } else if (!KEYS.includes(key)) {
      const more = others.length ? `; other options: ${others.join(', ')}` : '';
      throw new LroError('invalid-config', `unknown key prompt.offload.${key} in ${source}${renamedHint(key)}; known keys: ${KEYS.join(', ')}, tools${more}`);
    } else {
      layer.values[key] = value(key, raw, 'js', source);
    }
  }
  return layer;
}

/**
 * Layers, lowest first, into one config in the JSON form `Lro` takes: each key from the highest
 * layer that sets it; each tool's settings merged key by key the same way, tools in the order
 * they first appear. Keys no layer sets are left out (the component's defaults apply).
 */
export function merge(layers) {
  const config = {};
  const tools = new Map();
  for (const layer of layers) {
    Object.assign(config, layer.values);
    for (const [name, settings] of layer.tools) tools.set(name, { ...tools.get(name), ...settings });
  }
  if (tools.size) config.tools = [...tools.values()];
  return config;
}

/**
 * The configuration as the `lro` command layers it, highest first: `options` (the spec's keys,
 * and `tools` as a list), the `ATLATL_PROMPT__OFFLOAD__*` variables of `env`, the
 * `[prompt.offload]` table of the TOML file `configFile` (when given), then `base` (values of
 * the caller's own, e.g. `{extract_tool: true}`), then the component's defaults, which are left
 * to the component. Throws an `LroError` of kind `invalid-config` naming the key and its source.
 */
export function loadConfig({ options = {}, env = process.env, configFile = null, base = {}, source = 'options', others = [] } = {}) {
  const layers = [readObject(base, 'base'), configFile ? readConfigFile(configFile) : null, readEnvironment(env),
    readObject(options, source, others)];
  return merge(layers.filter(Boolean));
}
