// The host duties of docs/HOSTS.md that the shared cases do not show: directory creation and
// modes, events before the result, JSON-form conversions, clear errors for bad arguments.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Lro, LroError } from '../lro.js';
import { requireComponent } from './support.js';

requireComponent();

const records = (n) => Array.from({ length: n }, (_, i) => ({
  id: `m${i}`, memory_type: 'semantic', namespace: '_semantic/decisions', title: `decision number ${i} `.repeat(8),
}));

describe('host duties', () => {
  const events = [];
  const lro = new Lro({ onEvent: (e) => events.push(e) });
  const root = mkdtempSync(join(tmpdir(), 'lro-host-'));
  after(() => {
    lro.close();
    chmodSync(root, 0o700);
    rmSync(root, { recursive: true, force: true });
  });

  it('creates a missing directory 0700, makes the file 0600 and reports it before returning', async () => {
    const dir = join(root, 'new', 'offloads');
    events.length = 0;
    const out = await lro.offload({ output_dir: dir, threshold_tokens: 100 }, { operation: 'recall', query: 'q', records: records(30) });
    assert.equal(out.kind, 'offloaded');
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(out.path).mode & 0o777, 0o600);
    assert.equal(typeof out.bytes, 'number', 'u64 comes back as a Number');
    assert.equal(out.bytes, statSync(out.path).size);
    assert.deepEqual(events, [{
      kind: 'offload-created', path: out.path, operation: 'recall', count: 30, tokens: out.tokens, bytes: out.bytes,
    }]);
    assert.ok(JSON.parse(out.descriptor).offloaded);
  });

  it('preopens the canonical path: a symlinked directory gives real paths', async () => {
    const real = join(root, 'real');
    const link = join(root, 'link');
    await lro.offload({ output_dir: real, threshold_tokens: 100 }, { operation: 'list', records: '[]' });
    symlinkSync(real, link);
    const out = await lro.offload({ output_dir: link, threshold_tokens: 100 }, { operation: 'list', records: records(30) });
    assert.equal(out.path.startsWith(`${real}/`), true, out.path);
  });

  it('a directory without write bits degrades instead of writing', async () => {
    const dir = join(root, 'locked');
    await lro.offload({ output_dir: dir }, { operation: 'recall', records: '[]' });
    chmodSync(dir, 0o500);
    events.length = 0;
    const out = await lro.offload({ output_dir: dir, threshold_tokens: 100 }, { operation: 'recall', records: records(30) });
    assert.equal(out.kind, 'degraded');
    assert.match(out.warning, /operation not permitted/i);
    assert.equal(events[0].kind, 'offload-write-failed');
    assert.deepEqual(readdirSync(dir), []);
    chmodSync(dir, 0o700);
  });

  it('sweep deletes expired files and reports each', async () => {
    const dir = join(root, 'sweep');
    const out = await lro.offload({ output_dir: dir, threshold_tokens: 100, ttl_seconds: 60 }, { operation: 'search', records: records(30) });
    events.length = 0;
    const report = await lro.sweep({ output_dir: dir, ttl_seconds: 60 }, Date.now() + 61_000);
    assert.deepEqual(report, { deleted: [out.path], kept: 0, failed: [] });
    assert.equal(events.length, 1);
    assert.equal(events[0].kind, 'offload-file-expired');
    assert.equal(typeof events[0].created, 'number');
    assert.equal(existsSync(out.path), false);
  });

  it('sweep and extract do not create a missing directory (as the Rust host)', async () => {
    const dir = join(root, 'absent');
    await assert.rejects(lro.sweep({ output_dir: dir }, 0), { name: 'LroError', kind: 'directory' });
    assert.equal(existsSync(dir), false);
  });

  it('concurrent calls each get their own result and events', async () => {
    const dir = join(root, 'concurrent');
    events.length = 0;
    const outs = await Promise.all([1, 2, 3].map((n) =>
      lro.offload({ output_dir: dir, threshold_tokens: 100 }, { operation: 'recall', query: `q${n}`, records: records(20 + n) })));
    assert.deepEqual(outs.map((o) => o.count), [21, 22, 23]);
    assert.deepEqual(events.map((e) => e.count), [21, 22, 23]);
  });

  it('recipes, estimate and intercept in the JSON form', async () => {
    const recipes = await lro.recipes({ output_dir: root }, 'medium', '/x/y.jsonl');
    assert.equal(recipes.length, 10);
    assert.deepEqual(Object.keys(recipes[0]), ['number', 'description', 'program', 'slurp', 'raw', 'params', 'command']);
    assert.equal(await lro.estimate('abcdefgh'), 2);
    const result = { content: [{ type: 'text', text: 'small' }] };
    const unchanged = await lro.intercept({ output_dir: root }, { tool: 't', result });
    assert.deepEqual(Object.keys(unchanged), ['kind', 'reason', 'tokens']);
    assert.equal(unchanged.kind, 'unchanged');
    assert.equal(unchanged.reason, 'under-threshold');
    assert.equal(typeof unchanged.tokens, 'number');
  });
});

describe('eviction, and the lro_extract tool functions', () => {
  const events = [];
  const lro = new Lro({ onEvent: (e) => events.push(e) });
  const dir = mkdtempSync(join(tmpdir(), 'lro-new-'));
  after(() => {
    lro.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('max_files evicts an expired file, reported as offload-file-evicted {path, bytes, cap}', async () => {
    // ttl 0: the first file has expired once written; one within its expiry is never evicted.
    const config = { output_dir: dir, threshold_tokens: 100, max_files: 1, ttl_seconds: 0 };
    const first = await lro.offload(config, { operation: 'recall', records: records(30) });
    events.length = 0;
    const second = await lro.offload(config, { operation: 'recall', records: records(31) });
    assert.equal(second.kind, 'offloaded');
    assert.deepEqual(events.map((e) => e.kind), ['offload-file-evicted', 'offload-created']);
    assert.deepEqual(events[0], { kind: 'offload-file-evicted', path: first.path, bytes: first.bytes, cap: 'max-files' });
    assert.equal(existsSync(first.path), false);
    assert.deepEqual(readdirSync(dir), [second.path.slice(dir.length + 1)]);
    const kept = await lro.offload({ ...config, ttl_seconds: 3600 }, { operation: 'recall', records: records(32) });
    const third = await lro.offload(config, { operation: 'recall', records: records(33) });
    assert.equal(third.kind, 'degraded');
    assert.ok(third.warning.includes('(max_files) is taken by files that have not expired'), third.warning);
    assert.deepEqual(readdirSync(dir), [kept.path.slice(dir.length + 1)]);
    rmSync(kept.path);
  });

  it('toolDefinition, callTool and rewriteTools', async () => {
    const definition = JSON.parse(await lro.toolDefinition());
    assert.equal(definition.name, 'lro_extract');
    assert.ok(definition.inputSchema.properties.file_path);
    const out = await lro.offload({ output_dir: dir, threshold_tokens: 100 }, { operation: 'recall', records: records(30) });
    // Arguments as an object or as JSON text, as a tools/call request carries them.
    const byObject = await lro.callTool({ output_dir: dir }, { file_path: out.path, query: '.id', limit: 100000 });
    const byText = await lro.callTool({ output_dir: dir }, JSON.stringify({ file_path: out.path, query: '.id', limit: 100000 }));
    assert.equal(byObject.total, 30);
    assert.deepEqual(byText, byObject);
    await assert.rejects(lro.callTool({ output_dir: dir }, {}), { name: 'LroError', kind: 'invalid-request' });
    const listed = [{ name: 'search', inputSchema: { type: 'object' }, outputSchema: { type: 'object' } }];
    const rewritten = JSON.parse(await lro.rewriteTools({ output_dir: dir, extract_tool: true }, listed));
    assert.deepEqual(rewritten, [{ name: 'search', inputSchema: { type: 'object' } }, definition]);
    assert.equal(typeof await lro.rewriteTools({ output_dir: dir }, JSON.stringify(listed)), 'string', 'JSON text out, as the component wrote it');
  });
});

describe('bad arguments give a clear LroError, never a TypeError from the bindings', () => {
  const lro = new Lro();
  const dir = mkdtempSync(join(tmpdir(), 'lro-bad-'));
  after(() => {
    lro.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const bad = {
    'a threshold that is not a number': [() => lro.offload({ output_dir: dir, threshold_tokens: 'big' }, { operation: 'recall', records: [] }),
      'invalid-config', /config.threshold_tokens: expected an integer/],
    'an unknown config field': [() => lro.offload({ output_dir: dir, threshold: 5 }, { operation: 'recall', records: [] }),
      'invalid-config', /unknown field "threshold" \(known: .*max_bytes, max_files\)/],
    'max_bytes that is not a number': [() => lro.offload({ output_dir: dir, max_bytes: '1G' }, { operation: 'recall', records: [] }),
      'invalid-config', /config.max_bytes: expected a non-negative integer/],
    'a negative max_files': [() => lro.offload({ output_dir: dir, max_files: -1 }, { operation: 'recall', records: [] }),
      'invalid-config', /config.max_files: expected an integer from 0/],
    'dir_problem from a caller': [() => lro.offload({ output_dir: dir, dir_problem: 'x' }, { operation: 'recall', records: [] }),
      'invalid-config', /config.dir_problem: set by the host, never by callers/],
    'a tools list that is not JSON': [() => lro.rewriteTools({ output_dir: dir }, () => 1), 'invalid-input', /tools/],
    'an unknown operation': [() => lro.offload({ output_dir: dir }, { operation: 'fetch', records: [] }),
      'invalid-input', /request.operation: expected one of recall, search, list, inject/],
    'no request': [() => lro.offload({ output_dir: dir }), 'invalid-input', /request: expected an object/],
    'an output_dir that is not a string': [() => lro.offload({ output_dir: 42 }, { operation: 'recall', records: [] }),
      'invalid-config', /config.output_dir: expected a string, got 42/],
    'a detail level that does not exist': [() => lro.recipes({ output_dir: dir }, 'huge'), 'invalid-input', /detail/],
    'a negative now': [() => lro.sweep({ output_dir: dir }, -1), 'invalid-input', /now/],
    'a filter that is not a string': [() => lro.query(42, 'null'), 'invalid-filter', /filter/],
    'input that is not JSON': [() => lro.query('.', '{'), 'invalid-input', /./],
  };
  for (const [what, [run, kind, message]] of Object.entries(bad)) {
    it(what, async () => {
      await assert.rejects(run(), (e) => {
        assert.ok(e instanceof LroError, `expected an LroError, got ${e?.stack ?? e}`);
        assert.equal(e.kind, kind, e.message);
        assert.match(e.message, message);
        assert.doesNotMatch(e.message, /\n\s+at /, 'no stack trace in the message');
        return true;
      });
    });
  }
});
