// Shapes written once: the type table in gen/ is the WIT's and the component's, the defaults are
// the component's, the configuration takes the spec's names (an omitted or empty output_dir is
// the default directory), and the generated declarations describe the API as it is called.
import assert from 'node:assert/strict';
import {
  chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultOutputDir, Lro, LroError } from '../lro.js';
import { checkTable } from '../scripts/check.js';
import { readWit } from '../scripts/wit.js';
import { HOST, REPO, requireComponent } from './support.js';

requireComponent();

const GEN = join(HOST, 'gen');
const table = () => JSON.parse(readFileSync(join(GEN, 'types.json'), 'utf8'));
const records = (n) => Array.from({ length: n }, (_, i) => ({
  id: `m${i}`, memory_type: 'semantic', namespace: '_semantic/decisions', title: `decision number ${i} `.repeat(8),
}));

describe('the type table and the defaults come from the component', () => {
  const lro = new Lro();
  after(() => lro.close());

  it('gen/types.json is the table of wit/, checked against the component', async () => {
    assert.deepEqual(table(), JSON.parse(JSON.stringify(readWit(join(REPO, 'wit')))));
    await checkTable(table(), process.env.LRO_WASM, GEN);
  });

  it('a WIT that drifted from the component fails the check, naming what differs', async () => {
    const drifted = table();
    drifted.types['types/config'].fields.find((f) => f.name === 'threshold-tokens').name = 'threshold';
    drifted.functions['extractor/query'].params.pop();
    await assert.rejects(checkTable(drifted, process.env.LRO_WASM, GEN), (e) => {
      assert.match(e.message, /record types\/config: the WIT has fields enabled, threshold, /);
      assert.match(e.message, /function extractor\.query: the WIT takes \(filter, input, slurp, raw\); the component takes \(filter, input, slurp, raw, limit\)/);
      return true;
    });
  });

  it('defaults() gives every config field under its spec name, as the component does', async () => {
    const defaults = await lro.defaults();
    const fields = table().types['types/config'].fields.map((f) => f.name.replaceAll('-', '_'));
    assert.deepEqual(Object.keys(defaults), fields);
    assert.equal(defaults.output_dir, '', 'the default directory');
    assert.equal(defaults.dir_problem, null);
    assert.equal(typeof defaults.ttl_seconds, 'number', 'u64 comes back as a Number');
    defaults.threshold_tokens = 1;
    assert.notEqual((await lro.defaults()).threshold_tokens, 1, 'each caller gets its own copy');
  });

  it('an omitted field takes the component\'s default: a result under 1600 tokens stays inline', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lro-types-'));
    try {
      const { threshold_tokens: threshold } = await lro.defaults();
      const small = records(10);
      assert.ok(await lro.estimate(JSON.stringify(small)) <= threshold);
      assert.equal((await lro.offload({ output_dir: dir }, { operation: 'recall', records: small })).kind, 'inline');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('an omitted or empty output_dir is the default directory, prepared like any other', () => {
  const lro = new Lro();
  const saved = process.env.TMPDIR;
  let root;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'lro-default-'));
    process.env.TMPDIR = root; // the default directory is lro-{uid} in $TMPDIR
  });
  after(() => {
    lro.close();
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    chmodSync(root, 0o700);
    rmSync(root, { recursive: true, force: true });
  });

  it('is lro-{euid} in the system temporary directory', () => {
    assert.equal(defaultOutputDir(), join(root, `lro-${process.geteuid()}`));
  });

  it('offload creates it 0700 and writes there, omitted or ""', async () => {
    const dir = defaultOutputDir();
    const omitted = await lro.offload({ threshold_tokens: 100 }, { operation: 'recall', records: records(30) });
    assert.equal(omitted.kind, 'offloaded');
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.ok(omitted.path.startsWith(`${dir}/`), omitted.path);
    assert.equal(statSync(omitted.path).mode & 0o777, 0o600);
    const empty = await lro.offload({ output_dir: '', threshold_tokens: 100 }, { operation: 'list', records: records(30) });
    assert.ok(empty.path.startsWith(`${dir}/`), empty.path);
    assert.equal(readdirSync(dir).length, 2);
  });

  it('extract, callTool, recipes and sweep find it too', async () => {
    const [file] = readdirSync(defaultOutputDir()).filter((n) => n.includes('-recall-'));
    const path = join(defaultOutputDir(), file);
    assert.equal((await lro.extract({}, { path, query: '.id', limit: 100000 })).total, 30);
    assert.equal((await lro.callTool(null, { file_path: path, recipe: 1, limit: 100000 })).total, 30);
    assert.equal((await lro.recipes({ output_dir: '' }, 'light')).length, 10);
    // They expire when their headers say (created + the writer's 3600 s), not by this ttl.
    assert.equal((await lro.sweep({ ttl_seconds: 0 }, Date.now() + 1000)).deleted.length, 0);
    const report = await lro.sweep({ ttl_seconds: 0 }, Date.now() + 3_601_000);
    assert.equal(report.deleted.length, 2);
  });

  it('an unusable default directory degrades offload, naming it, and fails sweep', async () => {
    chmodSync(defaultOutputDir(), 0o777);
    try {
      const out = await lro.offload({ threshold_tokens: 100 }, { operation: 'recall', records: records(30) });
      assert.equal(out.kind, 'degraded');
      assert.ok(out.warning.includes(`offload directory ${defaultOutputDir()}: writable by everyone`), out.warning);
      await assert.rejects(lro.sweep({}, 0), { name: 'LroError', kind: 'directory' });
    } finally {
      chmodSync(defaultOutputDir(), 0o700);
    }
  });
});

describe('configuration names: the spec\'s, and an unknown one is named', () => {
  const lro = new Lro();
  after(() => lro.close());
  const bad = {
    'an old name, with the new one suggested': [{ threshold: 5 }, /^config: unknown field "threshold" \(known: .*\); did you mean "threshold_tokens"\?$/],
    'dir': [{ dir: '/tmp/x' }, /unknown field "dir" .*did you mean "output_dir"\?/],
    'ttl': [{ ttl: 5 }, /unknown field "ttl" .*did you mean "ttl_seconds"\?/],
    'native': [{ native: true }, /^config: unknown field "native" \(known: enabled, threshold_tokens, ttl_seconds, output_dir, prefix, descriptor, extract_tool, schema_version, recipes, tools, max_bytes, max_files\); did you mean "extract_tool"\?$/],
    'a camelCase name': [{ thresholdTokens: 5 }, /unknown field "thresholdTokens" .*did you mean "threshold_tokens"\?/],
    'an unknown per-tool key': [{ tools: [{ name: 'search', threshold: 5 }] },
      /^config\.tools\[0\]: unknown field "threshold" \(known: name, enabled, threshold_tokens, sections, inline_keys\); did you mean "threshold_tokens"\?$/],
    'a per-tool threshold that is not a number': [{ tools: [{ name: 'search', threshold_tokens: 'x' }] },
      /^config\.tools\[0\]\.threshold_tokens: expected an integer from 0 to 4294967295, got "x"$/],
    'a config that is not an object': ['/tmp', /^config: expected an object, got "\/tmp"$/],
  };
  for (const [what, [config, message]] of Object.entries(bad)) {
    it(what, async () => {
      await assert.rejects(lro.recipes(config, 'light'), (e) => {
        assert.ok(e instanceof LroError, `expected an LroError, got ${e?.stack ?? e}`);
        assert.equal(e.kind, 'invalid-config', e.message);
        assert.match(e.message, message);
        return true;
      });
    });
  }

  it('every spec name is taken, per-tool settings too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lro-names-'));
    try {
      const config = {
        enabled: true, threshold_tokens: 100, ttl_seconds: 60, output_dir: dir, prefix: 'notes', descriptor: 'bare',
        extract_tool: true, schema_version: '0.2', recipes: 'v1', max_bytes: 10_000_000, max_files: 10,
        tools: [{ name: 'search', enabled: false, threshold_tokens: null, sections: ['hits'], inline_keys: null }],
      };
      const out = await lro.offload(config, { operation: 'recall', records: records(30) });
      assert.equal(out.kind, 'offloaded');
      assert.match(out.path, /\/notes-recall-[0-9A-Z]{26}\.jsonl$/);
      assert.deepEqual(Object.keys(JSON.parse(out.descriptor)), ['offloaded', 'summary', 'file_path']);
      const listed = JSON.parse(await lro.rewriteTools(config, [{ name: 'search', outputSchema: {} }]));
      assert.deepEqual(listed.map((t) => t.name), ['search', 'lro_extract']);
      assert.ok(listed[0].outputSchema, 'search is disabled by its tool settings, so it keeps its schema');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the generated declarations (gen/lro.d.ts)', () => {
  const dts = join(GEN, 'lro.d.ts');

  it('package.json names them as the binding\'s types', () => {
    const pkg = JSON.parse(readFileSync(join(HOST, 'package.json'), 'utf8'));
    assert.equal(pkg.types, 'gen/lro.d.ts');
    assert.ok(existsSync(join(HOST, pkg.types)));
    if (pkg.files) assert.ok(pkg.files.some((f) => pkg.types.startsWith(f.replace(/\/$/, ''))), 'types are in `files`');
  });

  it('type-check a caller in the JSON form, and refuse an old configuration name', async () => {
    // The TypeScript compiler API that jco itself depends on (no dependency of ours).
    const { default: ts } = await import('typescript-compiler-api');
    const dir = mkdtempSync(join(tmpdir(), 'lro-dts-'));
    try {
      const good = join(dir, 'good.mts');
      const bad = join(dir, 'bad.mts');
      const api = JSON.stringify(dts.replace(/\.d\.ts$/, '.js'));
      writeFileSync(good, `import { Lro, LroError, defaultOutputDir, type ConfigInput, type Event } from ${api};
        const lro = new Lro({ onEvent: (e: Event) => { if (e.kind === 'offload-created') console.log(e.path, e.bytes + 1); } });
        const config: ConfigInput = { output_dir: defaultOutputDir(), threshold_tokens: 500, ttl_seconds: 60n, extract_tool: true,
          tools: [{ name: 'search', threshold_tokens: 100 }] };
        async function main(): Promise<void> {
          const out = await lro.offload(config, { operation: 'recall', records: [{ id: 'm1' }] });
          if (out.kind === 'offloaded') console.log(out.path, out.bytes.toFixed(0), out.descriptor.length);
          if (out.kind === 'degraded') console.log(out.warning);
          const found = await lro.extract({}, { path: '/x', recipe: 1 });
          console.log(found.values.join('\\n'), found.total + 1);
          const tool = await lro.intercept(null, { tool: 't', result: '{}' });
          if (tool.kind === 'unchanged') console.log(tool.reason === 'under-threshold');
          console.log((await lro.query('.', '1', { slurp: true })).text, await lro.estimate('x'), (await lro.defaults()).max_files);
          console.log((await lro.recipes({}, 'full'))[0].params[0]?.default, await lro.callTool({}), await lro.sweep({}, Date.now()));
          try { await lro.toolDefinition(); } catch (e) { if (e instanceof LroError && e.kind === 'not-found') throw e; }
          lro.close();
        }
        void main();
      `);
      writeFileSync(bad, `import { Lro } from ${api};
        void new Lro().offload({ threshold: 500 }, { operation: 'recall', records: [] });
        void new Lro().offload({ output_dir: 1 }, { operation: 'recall', records: [] });
        void new Lro().offload({}, { operation: 'fetch', records: [] });
      `);
      const check = (file) => ts.getPreEmitDiagnostics(ts.createProgram([file], {
        strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext, types: [], lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      })).map((d) => `${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
      assert.deepEqual(check(good), []);
      const errors = check(bad);
      assert.ok(errors.some((e) => /'threshold' does not exist in type 'ConfigInput'/.test(e)), errors.join('\n'));
      assert.ok(errors.some((e) => /'number' is not assignable to type 'string'/.test(e)), errors.join('\n'));
      assert.ok(errors.some((e) => /'"fetch"' is not assignable to type 'Operation'/.test(e)), errors.join('\n'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the package\'s declarations, through its exports', () => {
  it('`lro-wasm` and `lro-wasm/mcp` type-check withLro on an McpServer and a Server, and refuse an old name', async () => {
    const { default: ts } = await import('typescript-compiler-api');
    const pkg = JSON.parse(readFileSync(join(HOST, 'package.json'), 'utf8'));
    assert.deepEqual(pkg.exports['.'], { types: './gen/lro.d.ts', default: './lro.js' });
    assert.deepEqual(pkg.exports['./mcp'], { types: './mcp.d.ts', default: './mcp.js' });
    assert.ok(pkg.files.includes('mcp.d.ts'), 'mcp.d.ts is in `files`');
    // A project that has installed lro-wasm and the SDK: resolved by package name and `exports`.
    const dir = mkdtempSync(join(tmpdir(), 'lro-mcp-dts-'));
    try {
      mkdirSync(join(dir, 'node_modules'));
      symlinkSync(HOST, join(dir, 'node_modules', 'lro-wasm'));
      for (const name of ['@modelcontextprotocol', 'zod']) symlinkSync(join(HOST, 'node_modules', name), join(dir, 'node_modules', name));
      const good = join(dir, 'good.mts');
      const bad = join(dir, 'bad.mts');
      writeFileSync(good, `import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
        import { Server } from '@modelcontextprotocol/sdk/server/index.js';
        import { Lro, type Config } from 'lro-wasm';
        import { withLro, withLroServer, loadConfig, sweepInterval, envVar, type LroMcpOptions } from 'lro-wasm/mcp';
        const options: LroMcpOptions = { threshold_tokens: 500, ttl_seconds: 60n, configFile: 'lro.toml', lro: new Lro(),
          tools: [{ name: 'search', sections: ['items'] }], env: { HOME: '/root' } };
        const high: McpServer = await withLro(new McpServer({ name: 'a', version: '1' }), options);
        const low: Server = await withLroServer(new Server({ name: 'b', version: '1' }, { capabilities: { tools: {} } }));
        const config: Config = await loadConfig(new Lro(), { options: { prefix: 'p' }, env: {}, base: { extract_tool: true } });
        console.log(high, low, config.prefix, sweepInterval(60) + 1, envVar('prefix').length);
      `);
      writeFileSync(bad, `import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
        import { withLro, withLroServer } from 'lro-wasm/mcp';
        await withLro(new McpServer({ name: 'a', version: '1' }), { threshold: 500 });
        await withLroServer(new McpServer({ name: 'a', version: '1' }));
      `);
      const check = (file) => ts.getPreEmitDiagnostics(ts.createProgram([file], {
        strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, skipLibCheck: true,
        moduleResolution: ts.ModuleResolutionKind.NodeNext, types: [], lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      })).map((d) => `${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
      assert.deepEqual(check(good), []);
      const errors = check(bad);
      assert.ok(errors.some((e) => /'threshold' does not exist in type 'LroMcpOptions'/.test(e)), errors.join('\n'));
      assert.ok(errors.some((e) => /'McpServer' is not assignable to parameter of type 'Server/.test(e)), errors.join('\n'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the defaults, given back as a config', () => {
  const lro = new Lro();
  after(() => lro.close());
  it('are accepted as they are (dir_problem null is no value)', async () => {
    const defaults = await lro.defaults();
    assert.equal(defaults.dir_problem, null);
    assert.equal((await lro.recipes(defaults, 'light')).length, 10);
  });
  it('run under the standard deadline, whatever the caller\'s timeout', async () => {
    const tiny = new Lro({ timeout: 1 });
    try {
      assert.equal((await tiny.defaults()).threshold_tokens, 1600);
    } finally {
      tiny.close();
    }
  });
});
