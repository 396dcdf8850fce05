// Reads a WIT package (a folder of *.wit files) into the type table the binding converts by:
//
//   { package, world: {name, docs, imports, exports},
//     types: {"iface/name": {kind, docs, ...}}, functions: {"iface/name": {docs, params, result}} }
//
// A named type is an `alias` {type}, a `record` {fields: [{name, docs, type}]}, a `variant`
// {cases: [{name, docs, type?}]} or an `enum` {cases: [{name, docs}]}. A type expression is a
// primitive name ("u32", "string", ...) or {ref: "iface/name"}, {list: T}, {option: T},
// {tuple: [T...]}, {result: {ok?: T, err?: T}}. Names are kebab-case, `%` escapes removed.
//
// Only what a component exporting plain functions over these types needs is read: packages with
// resources, flags, futures, streams or world-level functions are refused with a clear message,
// so that the binding never converts a shape it does not know.
//
// This parser waits for jco to give a component's types as data: wasm-tools prints them as JSON
// (`wasm-tools component wit --json`), but jco's `componentWit` gives text only. Until it does,
// scripts/check.js proves the table is the component's own (docs/UPSTREAM.md).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const PRIMITIVES = new Set(['bool', 's8', 's16', 's32', 's64', 'u8', 'u16', 'u32', 'u64', 'f32', 'f64', 'char', 'string']);
const UNSUPPORTED = new Set(['resource', 'flags', 'future', 'stream', 'borrow', 'own', 'error-context']);

/** Splits WIT text into tokens: {t: 'id'|'doc'|'punct', v, line}. Plain comments are dropped. */
function tokenize(text, file) {
  const tokens = [];
  let line = 1;
  for (let i = 0; i < text.length;) {
    const c = text[i];
    if (c === '\n') { line++; i++; continue; }
    if (/\s/.test(c)) { i++; continue; }
    if (text.startsWith('///', i) && text[i + 3] !== '/') {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? text.length : end;
      tokens.push({ t: 'doc', v: text.slice(i + 3, stop).replace(/^ /, ''), line });
      i = stop;
      continue;
    }
    if (text.startsWith('//', i)) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end;
      continue;
    }
    if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      if (end === -1) throw new Error(`${file}:${line}: unterminated comment`);
      line += text.slice(i, end).split('\n').length - 1;
      i = end + 2;
      continue;
    }
    if (text.startsWith('->', i)) { tokens.push({ t: 'punct', v: '->', line }); i += 2; continue; }
    const word = /^%?[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*|^[0-9][0-9A-Za-z.+-]*/.exec(text.slice(i, i + 200));
    if (word) {
      tokens.push({ t: 'id', v: word[0], line });
      i += word[0].length;
      continue;
    }
    if ('{}()<>,;:=.@/*'.includes(c)) { tokens.push({ t: 'punct', v: c, line }); i++; continue; }
    throw new Error(`${file}:${line}: unexpected character ${JSON.stringify(c)}`);
  }
  return tokens;
}

/** A cursor over one file's tokens, collecting `///` docs for the item that follows them. */
class Cursor {
  constructor(tokens, file) {
    this.tokens = tokens;
    this.file = file;
    this.at = 0;
  }

  where() {
    const tok = this.tokens[Math.min(this.at, this.tokens.length - 1)];
    return `${this.file}:${tok?.line ?? 1}`;
  }

  fail(message) {
    throw new Error(`${this.where()}: ${message}`);
  }

  /** The `///` lines before the next token, joined; skips `@since(...)`-style gates too. */
  docs() {
    const lines = [];
    for (;;) {
      const tok = this.tokens[this.at];
      if (tok?.t === 'doc') { lines.push(tok.v); this.at++; continue; }
      if (tok?.t === 'punct' && tok.v === '@') { this.gate(); continue; }
      return lines.join('\n');
    }
  }

  gate() {
    this.at++; // @
    this.ident();
    if (this.peek('(')) {
      let depth = 0;
      do {
        const tok = this.tokens[this.at++];
        if (!tok) this.fail('unterminated feature gate');
        if (tok.v === '(') depth++;
        if (tok.v === ')') depth--;
      } while (depth > 0);
    }
  }

  /** True when only `///` lines (if anything) are left. */
  done() {
    return this.tokens.slice(this.at).every((tok) => tok.t === 'doc');
  }

  peek(v) {
    const tok = this.tokens[this.at];
    return tok !== undefined && tok.t !== 'doc' && tok.v === v;
  }

  eat(v) {
    if (!this.peek(v)) return false;
    this.at++;
    return true;
  }

  expect(v) {
    if (!this.eat(v)) this.fail(`expected \`${v}\`, found ${this.describe()}`);
  }

  describe() {
    const tok = this.tokens[this.at];
    return tok ? `\`${tok.v}\`` : 'the end of the file';
  }

  /** An identifier, `%` escape removed. */
  ident() {
    const tok = this.tokens[this.at];
    if (tok?.t !== 'id') this.fail(`expected a name, found ${this.describe()}`);
    this.at++;
    return tok.v.replace(/^%/, '');
  }

  /** `a, b, c` up to `close`, each item read by `item`; a trailing comma is allowed. */
  list(close, item) {
    const out = [];
    while (!this.eat(close)) {
      out.push(item());
      if (!this.eat(',')) {
        this.expect(close);
        break;
      }
    }
    return out;
  }
}

/** A type expression; names stay unresolved ({name}) until the whole package is read. */
function type(cur) {
  const name = cur.ident();
  if (PRIMITIVES.has(name)) return name;
  if (UNSUPPORTED.has(name)) cur.fail(`\`${name}\` types are not supported by the Node binding`);
  const args = () => {
    cur.expect('<');
    const out = cur.list('>', () => (cur.eat('_') ? null : type(cur)));
    return out;
  };
  if (name === 'list' || name === 'option') {
    const [of, extra] = args();
    if (!of || extra !== undefined) cur.fail(`${name}<T> takes one type`);
    return { [name]: of };
  }
  if (name === 'tuple') return { tuple: args() };
  if (name === 'result') {
    if (!cur.peek('<')) return { result: {} };
    const [ok, err] = args();
    return { result: { ...(ok ? { ok } : {}), ...(err ? { err } : {}) } };
  }
  return { name };
}

function interfaceBody(cur, iface) {
  cur.expect('{');
  while (!cur.eat('}')) {
    const docs = cur.docs();
    if (cur.eat('}')) break;
    const keyword = cur.ident();
    if (keyword === 'use') {
      const from = cur.ident();
      if (cur.eat('@') || cur.peek(':')) cur.fail('`use` from another package is not supported');
      cur.expect('.');
      cur.expect('{');
      for (const [name, as] of cur.list('}', () => {
        const name = cur.ident();
        return [name, cur.eat('as') ? cur.ident() : name];
      })) {
        iface.uses[as] = `${from}/${name}`;
      }
      cur.expect(';');
    } else if (keyword === 'type') {
      const name = cur.ident();
      cur.expect('=');
      iface.types[name] = { kind: 'alias', docs, type: type(cur) };
      cur.expect(';');
    } else if (keyword === 'record') {
      const name = cur.ident();
      cur.expect('{');
      const fields = cur.list('}', () => {
        const docs = cur.docs();
        const field = cur.ident();
        cur.expect(':');
        return { name: field, docs, type: type(cur) };
      });
      iface.types[name] = { kind: 'record', docs, fields };
    } else if (keyword === 'variant' || keyword === 'enum') {
      const name = cur.ident();
      cur.expect('{');
      const cases = cur.list('}', () => {
        const docs = cur.docs();
        const c = { name: cur.ident(), docs };
        if (keyword === 'variant' && cur.eat('(')) {
          c.type = type(cur);
          cur.expect(')');
        }
        return c;
      });
      iface.types[name] = { kind: keyword, docs, cases };
    } else if (UNSUPPORTED.has(keyword)) {
      cur.fail(`\`${keyword}\` is not supported by the Node binding`);
    } else {
      // name: func(params) -> result;
      const name = keyword.replace(/^%/, '');
      cur.expect(':');
      if (cur.ident() !== 'func') cur.fail(`expected \`func\` after \`${name}:\``);
      cur.expect('(');
      const params = cur.list(')', () => {
        const param = cur.ident();
        cur.expect(':');
        return { name: param, type: type(cur) };
      });
      const fn = { docs, params };
      if (cur.eat('->')) fn.result = type(cur);
      cur.expect(';');
      iface.functions[name] = fn;
    }
  }
}

function worldBody(cur, world) {
  cur.expect('{');
  while (!cur.eat('}')) {
    cur.docs();
    if (cur.eat('}')) break;
    const keyword = cur.ident();
    if (keyword !== 'import' && keyword !== 'export') {
      cur.fail(`only \`import\` and \`export\` of interfaces are supported in a world, found \`${keyword}\``);
    }
    const name = cur.ident();
    if (cur.peek(':') || cur.peek('{')) cur.fail('world-level functions and inline interfaces are not supported');
    cur.expect(';');
    world[`${keyword}s`].push(name);
  }
}

/** Resolves {name} references to {ref: "iface/name"}, walking every type expression. */
function resolveType(t, iface, interfaces, where) {
  if (typeof t === 'string' || t === null) return t;
  if (t.name !== undefined) {
    const own = interfaces[iface].types[t.name] ? `${iface}/${t.name}` : interfaces[iface].uses[t.name];
    if (!own) throw new Error(`${where}: unknown type \`${t.name}\``);
    const [from, name] = own.split('/');
    if (!interfaces[from]?.types[name]) throw new Error(`${where}: \`${own}\` does not exist`);
    return { ref: own };
  }
  const r = (x) => resolveType(x, iface, interfaces, where);
  if (t.list) return { list: r(t.list) };
  if (t.option) return { option: r(t.option) };
  if (t.tuple) return { tuple: t.tuple.map(r) };
  if (t.result) {
    return { result: { ...(t.result.ok ? { ok: r(t.result.ok) } : {}), ...(t.result.err ? { err: r(t.result.err) } : {}) } };
  }
  throw new Error(`${where}: unknown type expression ${JSON.stringify(t)}`);
}

/** Reads every *.wit file of `dir` as one package and returns its type table. */
export function readWit(dir) {
  const files = readdirSync(dir).filter((f) => f.endsWith('.wit')).sort();
  if (files.length === 0) throw new Error(`${dir}: no *.wit files`);
  let pkg = null;
  let world = null;
  const interfaces = {};
  for (const file of files) {
    const text = readFileSync(join(dir, file), 'utf8');
    const declared = /^[ \t]*package\s+([a-z0-9-]+:[a-z0-9-]+(?:@[0-9A-Za-z.+-]+)?)\s*;/m.exec(text);
    if (declared) {
      if (pkg && pkg !== declared[1]) throw new Error(`${file}: package ${declared[1]}, but another file says ${pkg}`);
      pkg = declared[1];
    }
    const cur = new Cursor(tokenize(declared ? text.replace(declared[0], ' '.repeat(declared[0].length)) : text, file), file);
    while (!cur.done()) {
      const docs = cur.docs();
      const keyword = cur.ident();
      const name = cur.ident();
      if (keyword === 'interface') {
        if (interfaces[name]) cur.fail(`interface ${name} is defined twice`);
        interfaces[name] = { docs, file, types: {}, uses: {}, functions: {} };
        interfaceBody(cur, interfaces[name]);
      } else if (keyword === 'world') {
        if (world) cur.fail(`a second world (${name}); the binding loads one`);
        world = { name, docs, imports: [], exports: [] };
        worldBody(cur, world);
      } else {
        cur.fail(`expected \`interface\` or \`world\`, found \`${keyword}\``);
      }
    }
  }
  if (!pkg) throw new Error(`${dir}: no \`package\` line in any *.wit file`);
  if (!world) throw new Error(`${dir}: no world`);
  for (const name of [...world.imports, ...world.exports]) {
    if (!interfaces[name]) throw new Error(`world ${world.name}: no interface ${name} in ${dir}`);
  }

  const types = {};
  const functions = {};
  for (const [iface, def] of Object.entries(interfaces)) {
    const where = (what) => `${def.file}: ${iface}.${what}`;
    for (const [name, t] of Object.entries(def.types)) {
      const out = { kind: t.kind, docs: t.docs };
      if (t.kind === 'alias') out.type = resolveType(t.type, iface, interfaces, where(name));
      if (t.kind === 'record') {
        out.fields = t.fields.map((f) => ({ ...f, type: resolveType(f.type, iface, interfaces, where(`${name}.${f.name}`)) }));
      }
      if (t.kind === 'variant' || t.kind === 'enum') {
        out.cases = t.cases.map((c) => (c.type ? { ...c, type: resolveType(c.type, iface, interfaces, where(`${name}.${c.name}`)) } : c));
      }
      types[`${iface}/${name}`] = out;
    }
    for (const [name, f] of Object.entries(def.functions)) {
      const params = f.params.map((p) => ({ ...p, type: resolveType(p.type, iface, interfaces, where(`${name}(${p.name})`)) }));
      functions[`${iface}/${name}`] = {
        docs: f.docs, params, ...(f.result ? { result: resolveType(f.result, iface, interfaces, where(name)) } : {}),
      };
    }
  }
  const interfaceDocs = Object.fromEntries(Object.entries(interfaces).map(([n, d]) => [n, d.docs]));
  return { package: pkg, world, interfaces: interfaceDocs, types, functions };
}
