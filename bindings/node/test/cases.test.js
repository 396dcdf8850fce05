// The shared cases of tests/cases/ (docs/HOSTS.md, "Shared test cases") through the Node host:
// every jq case through `query`, every host case folder (tests/cases/host/NAME/case.json) through
// the runner algorithm, compared with the same expected files (NAME/expected.json) as the Rust
// and Python hosts. No case is skipped: a folder without expected.json fails.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Lro, LroError } from '../lro.js';
import { CASES, requireComponent } from './support.js';

requireComponent();

// ---- jq cases ------------------------------------------------------------------------------

/** jq's test format, as cli/tests/all/jq_cases.rs reads it. */
function parseJqCases(file) {
  const lines = readFileSync(join(CASES, 'jq', file), 'utf8').split('\n');
  const cases = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() === '' || lines[i].startsWith('#')) continue;
    const c = { file, line: i + 1, fail: false, slurp: false, raw: false, expected: [] };
    while (lines[i].startsWith('%%')) {
      const directive = lines[i].slice(2).split(':')[0].trim();
      if (directive === 'FAIL') c.fail = true;
      else if (directive === 'SLURP') c.slurp = true;
      else if (directive === 'RAW') c.raw = true;
      else if (directive !== 'DIFFERS') throw new Error(`${file}:${i + 1}: unknown directive %%${directive}`);
      i++;
    }
    c.filter = lines[i++];
    assert.ok(i < lines.length, `${file}:${c.line}: no input`);
    c.input = lines[i];
    while (i + 1 < lines.length && lines[i + 1].trim() !== '') c.expected.push(lines[++i]);
    cases.push(c);
  }
  return cases;
}

/** The values printed one per line, read back as lines (like `lro query | lines`). */
const outputLines = (values) => {
  const lines = values.map((v) => `${v}\n`).join('').split('\n');
  lines.pop();
  return lines;
};

describe('jq cases (tests/cases/jq) through query', () => {
  const lro = new Lro();
  after(() => lro.close());
  const files = readdirSync(join(CASES, 'jq')).filter((f) => f.endsWith('.test')).sort();
  const cases = files.flatMap(parseJqCases);
  it('there are jq cases to run', () => assert.ok(cases.length >= 100, `only ${cases.length} jq cases found`));
  for (const c of cases) {
    it(`${c.file}:${c.line} ${c.filter}`, async () => {
      const run = lro.query(c.filter, c.input, { slurp: c.slurp, raw: c.raw });
      if (c.fail) {
        await assert.rejects(run, (e) => {
          assert.ok(e instanceof LroError, `expected an LroError, got ${e}`);
          assert.ok(e.message.includes(c.expected[0]), `error ${JSON.stringify(e.message)} does not contain ${JSON.stringify(c.expected[0])}`);
          return true;
        });
      } else {
        assert.deepEqual(outputLines((await run).values), c.expected);
      }
    });
  }
});

// ---- host cases ----------------------------------------------------------------------------


/** `ROOT/lro-case-HEX`, exactly 72 characters. */
function caseDir() {
  const root = realpathSync(tmpdir());
  assert.ok(root.length <= 50, `the temporary directory ${root} is longer than 50 characters`);
  const hexLength = 72 - root.length - '/lro-case-'.length;
  return `${root}/lro-case-${randomBytes(hexLength).toString('hex').slice(0, hexLength)}`;
}

function onlyJsonl(dir) {
  const found = readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
  assert.equal(found.length, 1, `<FILE> needs exactly one *.jsonl file in ${dir}, found ${JSON.stringify(found)}`);
  return `${dir}/${found[0]}`;
}

/** `{"$text": PATH}` → the file's text; `<DIR>` and `<FILE>` in every string. */
function substitute(value, dir) {
  if (Array.isArray(value)) return value.map((v) => substitute(v, dir));
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === '$text') {
      return substitute(readFileSync(join(CASES, value.$text), 'utf8'), dir);
    }
    return Object.fromEntries(keys.map((k) => [k, substitute(value[k], dir)]));
  }
  if (typeof value === 'string') {
    const s = value.split('<DIR>').join(dir);
    return s.includes('<FILE>') ? s.split('<FILE>').join(onlyJsonl(dir)) : s;
  }
  return value;
}

function normaliseString(s, dir) {
  return s.split(dir).join('<DIR>')
    .replace(/-[0-9A-HJKMNP-TV-Z]{26}\.jsonl/g, '-<ULID>.jsonl')
    .replace(/"(timestamp|expires_at)":"[^"]*"/g, '"$1":"<TIME>"');
}

function normalise(value, dir) {
  if (typeof value === 'string') return normaliseString(value, dir);
  if (Array.isArray(value)) return value.map((v) => normalise(v, dir));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [normaliseString(k, dir), normalise(v, dir)]));
  }
  return value;
}

/** Files over this many bytes are compared by size and SHA-256, as the Rust host blesses them. */
const DIGEST_ABOVE = 65536;

function digestLarge(content) {
  if (typeof content !== 'string') return content;
  const data = Buffer.from(content, 'utf8');
  if (data.length <= DIGEST_ABOVE) return content;
  return { bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') };
}

function snapshot(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).map((e) => ({
    name: e.name,
    content: e.isFile() ? readFileSync(join(dir, e.name), 'utf8') : null,
  }));
}

function call(lro, name, config, args) {
  switch (name) {
    case 'offload': return lro.offload(config, args.request);
    case 'intercept': return lro.intercept(config, args.call);
    case 'recipes': return lro.recipes(config, args.detail, args.file ?? null);
    case 'estimate': return lro.estimate(args.text);
    case 'extract': return lro.extract(config, args.request);
    case 'query': return lro.query(args.filter, args.input, { slurp: args.slurp, raw: args.raw, limit: args.limit });
    case 'sweep': return lro.sweep(config, args.now);
    case 'tool_definition': return lro.toolDefinition();
    // An arg absent from `args` is null (docs/HOSTS.md), which the JSON form passes as `null`.
    case 'call_tool': return lro.callTool(config, args.arguments ?? null);
    case 'rewrite_tools': return lro.rewriteTools(config, args.tools ?? null);
    default: throw new Error(`unknown call ${name}`);
  }
}

async function runCase(lro, events, c) {
  const dir = caseDir();
  const setup = c.setup ?? {};
  if (!setup.missing) mkdirSync(dir, { mode: 0o700 });
  try {
    for (const [name, content] of Object.entries(setup.files ?? {})) {
      writeFileSync(`${dir}/${name}`, substitute(content, dir));
    }
    for (const [name, target] of Object.entries(setup.symlinks ?? {})) {
      symlinkSync(substitute(target, dir), `${dir}/${name}`);
    }
    if (setup.mode) chmodSync(dir, parseInt(setup.mode, 8));

    const steps = [];
    for (const step of c.steps) {
      const config = { ...c.config, ...step.config, output_dir: dir };
      const entry = { call: step.call };
      try {
        entry.result = await call(lro, step.call, config, substitute(step.args ?? {}, dir));
      } catch (e) {
        if (!(e instanceof LroError)) throw e;
        entry.error = { kind: e.kind, message: e.message };
      }
      entry.events = events.splice(0);
      steps.push(entry);
    }

    const files = snapshot(dir)
      .map((f) => ({ name: normaliseString(f.name, dir), content: digestLarge(normalise(f.content, dir)) }))
      .sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name))
        || Buffer.compare(Buffer.from(JSON.stringify(a.content)), Buffer.from(JSON.stringify(b.content))));
    return normalise({ steps, files }, dir);
  } finally {
    if (existsSync(dir)) {
      chmodSync(dir, 0o700);
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/**
 * The case folders of tests/cases/host: every folder but `inputs` (shared inputs, not a case).
 * A `*.json` file beside them is a case in the old layout, which would otherwise go unrun.
 */
function hostCases(dir) {
  const entries = existsSync(dir) ? readdirSync(dir, { withFileTypes: true }) : [];
  const stray = entries.filter((e) => e.isFile() && e.name.endsWith('.json')).map((e) => e.name);
  const names = entries.filter((e) => e.isDirectory() && e.name !== 'inputs').map((e) => e.name).sort();
  return { names, stray };
}

describe('host cases (tests/cases/host) through the runner of docs/HOSTS.md', () => {
  const events = [];
  const lro = new Lro({ onEvent: (e) => events.push(e) });
  after(() => lro.close());
  const dir = join(CASES, 'host');
  const { names, stray } = hostCases(dir);
  it('there are host cases to run', () => assert.ok(names.length > 0, `no host cases in ${dir}`));
  it('every case is a folder NAME/ with case.json and expected.json', () => {
    assert.deepEqual(stray, [], `${dir} holds case files outside a case folder (the layout is NAME/case.json)`);
  });
  for (const name of names) {
    it(name, async () => {
      const casePath = join(dir, name, 'case.json');
      const expectedPath = join(dir, name, 'expected.json');
      assert.ok(existsSync(casePath), `${name}/: no case.json`);
      assert.ok(existsSync(expectedPath), `${name}/: no expected.json (bless it with the Rust runner)`);
      const c = JSON.parse(readFileSync(casePath, 'utf8'));
      assert.equal(typeof c.about, 'string', `${name}: no "about"`);
      const got = await runCase(lro, events, c);
      assert.deepStrictEqual(got, JSON.parse(readFileSync(expectedPath, 'utf8')), `${name}: differs from ${name}/expected.json`);
    });
  }
});
