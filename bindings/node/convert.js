// The JSON form of WIT values (docs/HOSTS.md) to and from the form jco uses, driven by the type
// table that scripts/build.js reads from the component's WIT into gen/types.json. No field list
// or default is written here: every shape comes from the table, every default from the
// component (`configuration.defaults`).
//
//   JSON form                                  jco form
//   record {snake_case: ...}                   {camelCase: ...}
//   variant {kind: "case", ...payload}         {tag: "case", val: payload}
//   enum "case"                                "case"
//   option: the value or null                  the value or undefined
//   u64, s64: a Number (a BigInt past 2^53)    a BigInt
//   json (`type json = string`): as input a string verbatim or any other value serialised
//   compactly; as output the string the component returned
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

export class LroError extends Error {
  /** kind: a WIT error case ("not-found", ...) or a host one ("timeout", "memory-limit", ...). */
  constructor(kind, message) {
    super(message);
    this.name = 'LroError';
    this.kind = kind;
  }
}

/** A name function that remembers its answers: the type table's names are few, and asked on every call. */
const remembered = (f) => {
  const known = new Map();
  return (name) => {
    let out = known.get(name);
    if (out === undefined) known.set(name, (out = f(name)));
    return out;
  };
};
/** `threshold-tokens` → `thresholdTokens`, as jco names fields, functions and interfaces. */
export const camel = remembered((name) => name.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase()));
/** `threshold-tokens` → `threshold_tokens`, the JSON form's field names. */
export const snake = remembered((name) => name.replaceAll('-', '_'));

/** The alias the JSON form treats as JSON text (WIT types cannot be recursive). */
const JSON_TEXT = 'json';
/** Config fields only the host sets (docs/HOSTS.md, host duty 1): callers passing one are refused. */
export const HOST_ONLY = ['dir-problem'];
/** Inputs the WIT documents, in prose, as having a value when absent. */
export const ABSENT = { 'interceptor/tool-call.arguments': '{}' };

const INT_RANGES = {
  u8: [0, 255], u16: [0, 65535], u32: [0, 4294967295], s8: [-128, 127], s16: [-32768, 32767],
  s32: [-2147483648, 2147483647],
};

const describeValue = (v) => {
  if (v === undefined) return 'nothing';
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'function') return 'a function';
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
};

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `; did you mean "threshold_tokens"?` for a key that is one word of a known one. */
/** Keys renamed to the spec's names, old → new: the same table in every host. */
export const RENAMED = Object.freeze({ threshold: 'threshold_tokens', ttl: 'ttl_seconds', dir: 'output_dir', native: 'extract_tool' });

function suggestion(key, known) {
  const near = known.filter((k) => k === RENAMED[key] || k.split('_').includes(key) || k === key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`).replaceAll('-', '_'));
  return near.length ? `; did you mean ${near.map((k) => `"${k}"`).join(' or ')}?` : '';
}

/** The type table of a gen/ directory, read once per directory. */
const loaded = new Map();
export function shapesOf(gen) {
  let shapes = loaded.get(gen);
  if (!shapes) {
    const path = join(gen, 'types.json');
    if (!existsSync(path)) {
      throw new LroError('load', `${gen} holds no type table (types.json): run \`npm run build\` in the Node binding (it transpiles $LRO_WASM, or the component cargo builds from the repository)`);
    }
    shapes = new Shapes(JSON.parse(readFileSync(path, 'utf8')));
    loaded.set(gen, shapes);
  }
  return shapes;
}

export class Shapes {
  constructor(table) {
    this.table = table;
    const defaults = table.functions['configuration/defaults'];
    if (!defaults?.result?.ref) throw new LroError('load', 'the component exports no `configuration.defaults` returning a record');
    /** The config record's type name: what `configuration.defaults` returns. */
    this.configType = defaults.result.ref;
    const fields = this.type(this.configType).fields.map((f) => f.name);
    for (const name of HOST_ONLY) {
      if (!fields.includes(name)) throw new LroError('load', `the config record has no \`${name}\` field, which the host sets`);
    }
  }

  type(ref) {
    const def = this.table.types[ref];
    if (!def) throw new LroError('load', `the type table has no type ${ref}`);
    return def;
  }

  fn(key) {
    const def = this.table.functions[key];
    if (!def) throw new LroError('load', `the component has no function ${key.replace('/', '.')}`);
    return def;
  }

  /** What a value of `type` must be, for messages. */
  expected(type) {
    if (typeof type === 'string') {
      if (type === 'bool') return 'true or false';
      if (type in INT_RANGES) return `an integer from ${INT_RANGES[type][0]} to ${INT_RANGES[type][1]}`;
      if (type === 'u64') return 'a non-negative integer';
      if (type === 's64') return 'an integer';
      if (type === 'f32' || type === 'f64') return 'a number';
      if (type === 'char') return 'a single character';
      return 'a string';
    }
    if (type.option) return this.expected(type.option);
    if (type.list) return type.list === 'string' ? 'a list of strings' : 'a list';
    if (type.tuple) return `a list of ${type.tuple.length} values`;
    if (type.result) return 'an object {ok} or {err}';
    const [, name] = type.ref.split('/');
    const def = this.type(type.ref);
    if (def.kind === 'alias') return name === JSON_TEXT ? 'JSON text or a JSON value' : this.expected(def.type);
    if (def.kind === 'enum') return `one of ${def.cases.map((c) => c.name).join(', ')}`;
    if (def.kind === 'variant') return `an object whose "kind" is one of ${def.cases.map((c) => c.name).join(', ')}`;
    return 'an object';
  }

  /**
   * JSON form → jco form, checking as it goes, so that a bad argument is an LroError of `kind`
   * naming `what` (`config.tools[0].name`), never a TypeError from inside jco's lowering code.
   * With `absentFalse`, an absent bool is false (docs/HOSTS.md: "absent ... is null/false").
   */
  input(type, value, what, kind, absentFalse = true) {
    const fail = () => {
      throw new LroError(kind, `${what}: expected ${this.expected(type)}, got ${describeValue(value)}`);
    };
    if (typeof type === 'string') {
      if (type === 'bool') {
        if (typeof value === 'boolean') return value;
        if (absentFalse && (value === undefined || value === null)) return false;
        return fail();
      }
      if (type in INT_RANGES) {
        const [lo, hi] = INT_RANGES[type];
        return Number.isInteger(value) && value >= lo && value <= hi ? value : fail();
      }
      if (type === 'u64' || type === 's64') {
        const min = type === 'u64' ? 0n : -(2n ** 63n);
        const max = type === 'u64' ? 2n ** 64n : 2n ** 63n;
        const ok = typeof value === 'bigint' ? value >= min && value < max : Number.isSafeInteger(value) && BigInt(value) >= min;
        return ok ? BigInt(value) : fail();
      }
      if (type === 'f32' || type === 'f64') return typeof value === 'number' ? value : fail();
      if (type === 'char') return typeof value === 'string' && [...value].length === 1 ? value : fail();
      return typeof value === 'string' ? value : fail();
    }
    if (type.option) return value === undefined || value === null ? undefined : this.input(type.option, value, what, kind, absentFalse);
    if (type.list || type.tuple) {
      if (!Array.isArray(value) || (type.tuple && value.length !== type.tuple.length)) fail();
      return value.map((v, i) => this.input(type.list ?? type.tuple[i], v, `${what}[${i}]`, kind, absentFalse));
    }
    if (type.result) throw new LroError(kind, `${what}: a nested result cannot be passed in`);
    const def = this.type(type.ref);
    if (def.kind === 'alias') {
      if (type.ref.split('/')[1] !== JSON_TEXT) return this.input(def.type, value, what, kind, absentFalse);
      if (typeof value === 'string') return value;
      let text;
      try {
        text = JSON.stringify(value);
      } catch (e) {
        throw new LroError(kind, `${what}: cannot be written as JSON: ${e.message}`);
      }
      return text === undefined ? fail() : text;
    }
    if (def.kind === 'enum') return def.cases.some((c) => c.name === value) ? value : fail();
    if (!isObject(value)) fail();
    if (def.kind === 'variant') {
      const { kind: tag, ...payload } = value;
      const c = def.cases.find((x) => x.name === tag);
      if (!c) fail();
      if (!c.type) return { tag };
      const inner = this.isRecord(c.type) ? payload : payload.value;
      return { tag, val: this.input(c.type, inner, `${what}(${tag})`, kind, absentFalse) };
    }
    return this.record(type.ref, def, value, what, kind, absentFalse);
  }

  isRecord(type) {
    return typeof type === 'object' && type.ref !== undefined && this.type(type.ref).kind === 'record';
  }

  record(ref, def, value, what, kind, absentFalse) {
    const known = def.fields.map((f) => snake(f.name));
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) {
        throw new LroError(kind, `${what}: unknown field "${key}" (known: ${known.join(', ')})${suggestion(key, known)}`);
      }
    }
    const out = {};
    for (const f of def.fields) {
      let v = value[snake(f.name)];
      const absent = ABSENT[`${ref}.${f.name}`];
      if ((v === undefined || v === null) && absent !== undefined) v = absent;
      out[camel(f.name)] = this.input(f.type, v, `${what}.${snake(f.name)}`, kind, absentFalse);
    }
    return out;
  }

  /** jco form → JSON form. */
  output(type, value) {
    // A Number while it is exact: a config's ttl_seconds or max_bytes may reach 2^64 - 1.
    if (typeof type === 'string') return typeof value === 'bigint' && value <= MAX_EXACT ? Number(value) : value;
    if (type.option) return value === undefined || value === null ? null : this.output(type.option, value);
    if (type.list) return value.map((v) => this.output(type.list, v));
    if (type.tuple) return value.map((v, i) => this.output(type.tuple[i], v));
    if (type.result) {
      const ok = value.tag === 'ok';
      const t = ok ? type.result.ok : type.result.err;
      return { [ok ? 'ok' : 'err']: t ? this.output(t, value.val) : null };
    }
    const def = this.type(type.ref);
    if (def.kind === 'alias') return this.output(def.type, value);
    if (def.kind === 'enum') return value;
    if (def.kind === 'variant') {
      const c = def.cases.find((x) => x.name === value.tag);
      if (!c?.type) return { kind: value.tag };
      const payload = this.output(c.type, value.val);
      return this.isRecord(c.type) ? { kind: value.tag, ...payload } : { kind: value.tag, value: payload };
    }
    return Object.fromEntries(def.fields.map((f) => [snake(f.name), this.output(f.type, value[camel(f.name)])]));
  }

  /**
   * A function's arguments, JSON form → jco form; `kinds` gives a parameter's error kind, and
   * `config` is the config argument as `config()` made it.
   */
  args(key, values, kinds = {}, config = undefined) {
    return this.fn(key).params.map((p, i) => {
      if (p.type.ref === this.configType) return config;
      return this.input(p.type, values[i], snake(p.name), kinds[p.name] ?? 'invalid-input');
    });
  }

  /** A function's return value, jco form → JSON form (an `error` is thrown by jco instead). */
  result(key, value) {
    const { result } = this.fn(key);
    if (!result) return null;
    if (result.result) return result.result.ok ? this.output(result.result.ok, value) : null;
    return this.output(result, value);
  }

  /**
   * A caller's config (JSON form, any field omitted) over the component's defaults (JSON form)
   * → a complete jco config. Unknown fields and host-only ones are `invalid-config` errors.
   */
  config(given, defaults) {
    const k = 'invalid-config';
    const partial = given ?? {};
    if (!isObject(partial)) throw new LroError(k, `config: expected an object, got ${describeValue(partial)}`);
    const def = this.type(this.configType);
    const hostOnly = HOST_ONLY.map(snake);
    for (const key of hostOnly) {
      // Absent, undefined or null is no value; any other is refused, as in every host.
      if (partial[key] != null) throw new LroError(k, `config.${key}: set by the host, never by callers`);
    }
    const known = def.fields.map((f) => snake(f.name)).filter((key) => !hostOnly.includes(key));
    for (const key of Object.keys(partial)) {
      if (!known.includes(key) && !hostOnly.includes(key)) {
        throw new LroError(k, `config: unknown field "${key}" (known: ${known.join(', ')})${suggestion(key, known)}`);
      }
    }
    const merged = {};
    for (const key of known) merged[key] = partial[key] !== undefined ? partial[key] : defaults[key];
    return this.input({ ref: this.configType }, merged, 'config', k, false);
  }
}
