// The `[prompt.offload]` configuration gathered the way the `lro` command gathers it
// (host/src/config.rs, docs/CONFIGURATION.md): a TOML file's text, the `ATLATL_PROMPT__OFFLOAD__*`
// environment variables and a caller's object. The component layers them over a base
// (`configuration.load`, `Lro.load`): the object beats the environment, which beats the file,
// which beats the base. Its errors are the command's, word for word: nothing here knows a key.
import { readFileSync } from 'node:fs';
import { LroError } from './convert.js';
import { osError } from './directory.js';

/**
 * What every configuration variable's name starts with; the key follows in capitals. `ATLATL_`
 * because LRO was specified for atlatl, a memory server, and keeps its names.
 */
export const ENV_PREFIX = 'ATLATL_PROMPT__OFFLOAD__';
/** The environment variable of a key: `ATLATL_PROMPT__OFFLOAD__` and the key in capitals. */
export const envVar = (key) => `${ENV_PREFIX}${key.toUpperCase()}`;

const fail = (message) => new LroError('invalid-config', message);

/** A value as an error quotes it. */
function shown(value) {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null || typeof value !== 'object') return String(value);
  return `an object of class ${value.constructor?.name ?? 'Object'}`;
}

/**
 * JSON text of a caller's object, BigInts as the whole numbers they are (JSON.stringify refuses
 * them): a `ttl_seconds` past 2^53 is a BigInt in JavaScript.
 */
function json(object, source) {
  const mark = '\u0000bigint:';
  let text;
  try {
    text = JSON.stringify(object, (_, v) => (typeof v === 'bigint' ? `${mark}${v}` : v));
  } catch (e) {
    throw fail(`${source}: cannot be serialised as JSON: ${e.message}`);
  }
  return text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
}

/** A TOML file's path and text. */
function readFile(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw fail(`config file ${path}: ${osError(e)}`);
  }
  return { name: path, text };
}

/**
 * The WIT `config-layers` (in the JSON form `Lro.load` takes): the TOML file `configFile` (when
 * given), the configuration variables of `env`, and `options` as JSON. `source` names the options
 * in errors; `others`: the names of the caller's options that are not configuration, skipped.
 */
export function configLayers({ options = {}, env = process.env, configFile = null, source = 'options', others = [] } = {}) {
  if (options !== null && (typeof options !== 'object' || Array.isArray(options))) {
    throw fail(`${source}: expected an object, got ${shown(options)}`);
  }
  const given = Object.fromEntries(Object.entries(options ?? {}).filter(([key, value]) => !others.includes(key) && value !== undefined));
  return {
    file: configFile === null || configFile === undefined ? null : readFile(configFile),
    environment: Object.entries(env ?? {})
      .filter(([name, value]) => name.startsWith(ENV_PREFIX) && value !== undefined)
      .map(([name, value]) => ({ name, value: String(value) })),
    settings: [],
    arguments: { name: source, text: json(given, source) },
  };
}

/**
 * The configuration as the `lro` command layers it, highest first: `options` (the spec's keys,
 * and `tools` as a list of `{name, ...}` or an object of tool names to settings), the
 * `ATLATL_PROMPT__OFFLOAD__*` variables of `env`, the TOML file `configFile` (when given), then
 * `base` (a config over the component's defaults, e.g. `{extract_tool: true}`). The whole config,
 * layered by the component of `lro`. Rejects with an `LroError` of kind `invalid-config` naming
 * the key and where it came from.
 */
export async function loadConfig(lro, { base = {}, ...gather } = {}) {
  const layers = configLayers(gather);
  return lro.load(base, layers);
}
