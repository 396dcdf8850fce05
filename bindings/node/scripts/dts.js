// Writes the TypeScript declarations of this binding's public API (lro.js) in the JSON form of
// docs/HOSTS.md, from the same type table convert.js walks, the methods table of lro.js and
// the component's defaults. jco's own declarations (gen/component.d.ts, gen/interfaces/)
// describe the component in jco's form; these describe what a caller of lro.js passes and gets.
import { ABSENT, HOST_ONLY, snake } from '../convert.js';

const pascal = (name) => name.split('-').map((w) => w[0].toUpperCase() + w.slice(1)).join('');
const HOST_ERROR_KINDS = ['timeout', 'memory-limit', 'stack-overflow', 'trap', 'directory', 'load', 'host'];

/** A JSDoc comment of `text`, indented by `pad`; none for empty text. */
function doc(text, pad = '') {
  const lines = text.split('\n').map((l) => l.replaceAll('*/', '*\\/'));
  if (!text.trim()) return '';
  return `${pad}/**\n${lines.map((l) => `${pad} *${l ? ` ${l}` : ''}`).join('\n')}\n${pad} */\n`;
}

/** A TypeScript string literal. */
const quote = (v) => JSON.stringify(v);

export function declarations({ table, methods, defaults }) {
  const configType = table.functions['configuration/defaults'].result.ref;
  const hostOnly = new Set(HOST_ONLY);
  const out = [];
  const emitted = new Set();
  const pending = [];

  /** The TS name of named type `ref` in direction `dir` ('in' or 'out'), queued for emission. */
  const named = (ref, dir) => {
    const [, name] = ref.split('/');
    const def = table.types[ref];
    if (def.kind === 'alias' && name === 'json') return dir === 'in' ? 'JsonInput' : 'Json';
    let ts = pascal(name);
    if (ref === configType) ts = dir === 'in' ? 'ConfigInput' : 'Config';
    else if (dir === 'in' && def.kind !== 'enum') ts = `${ts}Input`;
    if (!emitted.has(ts)) {
      emitted.add(ts);
      pending.push({ ref, dir, ts });
    }
    return ts;
  };

  const expr = (t, dir) => {
    if (typeof t === 'string') {
      if (t === 'bool') return 'boolean';
      // An output is a Number while it is exact, a BigInt past 2^53 (convert.js), which only a
      // config's fields can reach: they are declared `number | bigint` below.
      if (t === 'u64' || t === 's64') return dir === 'in' ? 'number | bigint' : 'number';
      if (t === 'string' || t === 'char') return 'string';
      return 'number';
    }
    if (t.option) return `${expr(t.option, dir)} | null`;
    if (t.list) return `Array<${expr(t.list, dir)}>`;
    if (t.tuple) return `[${t.tuple.map((x) => expr(x, dir)).join(', ')}]`;
    if (t.result) {
      const side = (x) => (x ? expr(x, dir) : 'null');
      return `{ ok: ${side(t.result.ok)} } | { err: ${side(t.result.err)} }`;
    }
    return named(t.ref, dir);
  };

  /** May an input of type `t` be left out? Options (none), bools (false), documented defaults. */
  const omissible = (t, absentKey) => (typeof t === 'object' && t.option !== undefined) || t === 'bool' || ABSENT[absentKey] !== undefined;

  const emitNamed = ({ ref, dir, ts }) => {
    const def = table.types[ref];
    let text = doc(def.docs);
    if (def.kind === 'alias') {
      text += `export type ${ts} = ${expr(def.type, dir)};\n`;
    } else if (def.kind === 'enum') {
      const cases = def.cases.map((c) => `${doc(c.docs, '  ')}  | ${quote(c.name)}`).join('\n');
      text += `export type ${ts} =\n${cases};\n`;
    } else if (def.kind === 'variant') {
      const cases = def.cases.map((c) => {
        let shape = `{ kind: ${quote(c.name)} }`;
        if (c.type) {
          const payload = expr(c.type, dir);
          const record = typeof c.type === 'object' && c.type.ref && table.types[c.type.ref].kind === 'record';
          shape = record ? `({ kind: ${quote(c.name)} } & ${payload})` : `{ kind: ${quote(c.name)}; value: ${payload} }`;
        }
        return `${doc(c.docs, '  ')}  | ${shape}`;
      });
      text += `export type ${ts} =\n${cases.join('\n')};\n`;
    } else {
      const config = ref === configType;
      const fields = def.fields.filter((f) => !(config && dir === 'in' && hostOnly.has(f.name))).map((f) => {
        let docs = f.docs;
        if (config && dir === 'in') {
          const value = defaults[snake(f.name)];
          docs += `${docs ? '\n\n' : ''}Default (\`configuration.defaults\`): \`${JSON.stringify(value)}\`.`;
          if (snake(f.name) === 'output_dir') docs += ' Omitted or "": `defaultOutputDir()`.';
        }
        const optional = dir === 'in' && (config || omissible(f.type, `${ref}.${f.name}`));
        const type = config && f.type === 'u64' ? 'number | bigint' : expr(f.type, dir);
        return `${doc(docs, '  ')}  ${snake(f.name)}${optional ? '?' : ''}: ${type};`;
      });
      text += `export interface ${ts} {\n${fields.join('\n')}\n}\n`;
    }
    out.push(text);
  };

  // The Lro class, from the methods table: each method's parameters are its WIT function's.
  const members = [];
  for (const [name, m] of Object.entries(methods)) {
    const fn = table.functions[m.fn];
    const [iface, fname] = m.fn.split('/');
    const params = [];
    const options = [];
    fn.params.forEach((p, i) => {
      const config = p.type.ref === configType;
      let type = expr(p.type, 'in');
      if (config) type = `${type} | null | undefined`;
      const later = fn.params.slice(i + 1);
      const optional = !config && (m.absent?.[p.name] !== undefined || omissible(p.type))
        && later.every((q) => m.absent?.[q.name] !== undefined || omissible(q.type));
      if (m.options?.includes(p.name)) options.push(`${snake(p.name)}?: ${type}${type.includes('null') ? '' : ' | null'}`);
      else params.push(`${snake(p.name) === 'arguments' ? 'args' : snake(p.name)}${optional ? '?' : ''}: ${type}`);
    });
    if (options.length) params.push(`options?: { ${options.join('; ')} }`);
    const result = fn.result?.result ? fn.result.result.ok : fn.result;
    const returns = result ? expr(result, 'out') : 'null';
    const docs = `${fn.docs}\n\nCalls \`${iface}.${fname}\`${m.dir === 'none' ? '' : `; offload directory: ${m.dir}`}.`;
    members.push(`${doc(docs, '  ')}  ${name}(${params.join(', ')}): Promise<${returns}>;`);
  }
  const eventType = expr(table.functions['events/emit'].params[0].type, 'out');
  const errorRefs = new Set(Object.values(table.functions).map((f) => f.result?.result?.err?.ref).filter(Boolean));
  const errorKinds = [...errorRefs].flatMap((ref) => table.types[ref].cases.map((c) => c.name));

  while (pending.length) emitNamed(pending.shift());

  return `// The public API of lro.js, in the JSON form of docs/HOSTS.md. Generated by scripts/build.js
// from the WIT of ${table.package} and the component's \`configuration.defaults\`: do not edit.

/** JSON text, as the component reads and writes it (\`type json = string\` in WIT). */
export type Json = string;
/** A \`json\` input: JSON text, passed verbatim, or any other JSON value, serialised compactly. */
export type JsonInput = string | number | boolean | null | object;

${out.join('\n')}
/** The error kinds of the component's \`error\` variant. */
export type ErrorKind = ${errorKinds.map(quote).join(' | ')};
/** The host's own error kinds (docs/HOSTS.md). */
export type HostErrorKind = ${HOST_ERROR_KINDS.map(quote).join(' | ')};

/** Every failure: a component error or a host one, with a message naming what was wrong. */
export declare class LroError extends Error {
  constructor(kind: ErrorKind | HostErrorKind, message: string);
  readonly name: 'LroError';
  readonly kind: ErrorKind | HostErrorKind;
}

export interface LroOptions {
  /** Receives every event, in order, before the call that emitted it returns. */
  onEvent?: ((event: ${eventType}) => void) | null;
  /**
   * ms; every call but the filter calls. Not given, those calls run on the calling thread with
   * no deadline (with more than 1 MiB of text in their arguments, in the worker under 10 000 ms);
   * given, every call runs in the worker, those under this deadline.
   */
  timeout?: number;
  /** ms; \`extract\`, \`callTool\` and \`query\` (default 1 000). */
  filterTimeout?: number;
  /** Bytes of linear memory; every call but the filter calls (default 2 GiB). */
  memory?: number;
  /** Bytes of linear memory; the filter calls (default 512 MiB). */
  filterMemory?: number;
  /** The transpiled component (default: gen/ next to lro.js). */
  gen?: string;
}

/** The default limits of \`LroOptions\`. */
export declare const DEFAULTS: Readonly<{ timeout: number; filterTimeout: number; memory: number; filterMemory: number }>;

/** The directory an omitted or empty \`output_dir\` means: \`lro-{effective uid}\` in the system temporary directory. */
export declare function defaultOutputDir(): string;

/** Which component function each method calls, and how it treats the offload directory. */
export declare const METHODS: Readonly<Record<${Object.keys(methods).map(quote).join(' | ')}, Readonly<{ fn: string; dir: 'write' | 'read' | 'sweep' | 'none' }>>>;

${doc(table.world.docs)}export declare class Lro {
  constructor(options?: LroOptions);
${members.join('\n')}
  /** Stops the worker; a call still running there fails with kind \`host\`; a later call starts a new one. */
  close(): void;
}
`;
}
