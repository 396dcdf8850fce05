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
    const out = await lro.offload({ dir, threshold: 100 }, { operation: 'recall', query: 'q', records: records(30) });
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
    await lro.offload({ dir: real, threshold: 100 }, { operation: 'list', records: '[]' });
    symlinkSync(real, link);
    const out = await lro.offload({ dir: link, threshold: 100 }, { operation: 'list', records: records(30) });
    assert.equal(out.path.startsWith(`${real}/`), true, out.path);
  });

  it('a directory without write bits degrades instead of writing', async () => {
    const dir = join(root, 'locked');
    await lro.offload({ dir }, { operation: 'recall', records: '[]' });
    chmodSync(dir, 0o500);
    events.length = 0;
    const out = await lro.offload({ dir, threshold: 100 }, { operation: 'recall', records: records(30) });
    assert.equal(out.kind, 'degraded');
    assert.match(out.warning, /Operation not permitted \(os error 63\)/);
    assert.equal(events[0].kind, 'offload-write-failed');
    assert.deepEqual(readdirSync(dir), []);
    chmodSync(dir, 0o700);
  });

  it('sweep deletes expired files and reports each', async () => {
    const dir = join(root, 'sweep');
    const out = await lro.offload({ dir, threshold: 100, ttl: 60 }, { operation: 'search', records: records(30) });
    events.length = 0;
    const report = await lro.sweep({ dir, ttl: 60 }, Date.now() + 61_000);
    assert.deepEqual(report, { deleted: [out.path], kept: 0, failed: [] });
    assert.equal(events.length, 1);
    assert.equal(events[0].kind, 'offload-file-expired');
    assert.equal(typeof events[0].created, 'number');
    assert.equal(existsSync(out.path), false);
  });

  it('sweep and extract do not create a missing directory (as the Rust host)', async () => {
    const dir = join(root, 'absent');
    await assert.rejects(lro.sweep({ dir }, 0), { name: 'LroError', kind: 'directory' });
    assert.equal(existsSync(dir), false);
  });

  it('concurrent calls each get their own result and events', async () => {
    const dir = join(root, 'concurrent');
    events.length = 0;
    const outs = await Promise.all([1, 2, 3].map((n) =>
      lro.offload({ dir, threshold: 100 }, { operation: 'recall', query: `q${n}`, records: records(20 + n) })));
    assert.deepEqual(outs.map((o) => o.count), [21, 22, 23]);
    assert.deepEqual(events.map((e) => e.count), [21, 22, 23]);
  });

  it('recipes, estimate and intercept in the JSON form', async () => {
    const recipes = await lro.recipes({ dir: root }, 'medium', '/x/y.jsonl');
    assert.equal(recipes.length, 10);
    assert.deepEqual(Object.keys(recipes[0]), ['number', 'description', 'program', 'slurp', 'raw', 'params', 'command']);
    assert.equal(await lro.estimate('abcdefgh'), 2);
    const result = { content: [{ type: 'text', text: 'small' }] };
    assert.deepEqual(await lro.intercept({ dir: root }, { tool: 't', result }),
      { kind: 'unchanged', reason: 'under-threshold', tokens: await lro.estimate(JSON.stringify(result)) });
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
    'a threshold that is not a number': [() => lro.offload({ dir, threshold: 'big' }, { operation: 'recall', records: [] }),
      'invalid-config', /config.threshold: expected an integer/],
    'an unknown config field': [() => lro.offload({ dir, threshold_tokens: 5 }, { operation: 'recall', records: [] }),
      'invalid-config', /unknown field "threshold_tokens"/],
    'an unknown operation': [() => lro.offload({ dir }, { operation: 'fetch', records: [] }),
      'invalid-input', /request.operation: expected one of recall, search, list, inject/],
    'no request': [() => lro.offload({ dir }), 'invalid-input', /request: expected an object/],
    'no dir': [() => lro.offload({}, { operation: 'recall', records: [] }), 'invalid-config', /config.dir/],
    'a detail level that does not exist': [() => lro.recipes({ dir }, 'huge'), 'invalid-input', /detail/],
    'a negative now': [() => lro.sweep({ dir }, -1), 'invalid-input', /now/],
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
