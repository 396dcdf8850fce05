// Runaway filters are stopped by the host's limits and the same Lro keeps working; extraction
// never reads outside the offload directory (same error kind as the Rust host).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Lro, LroError } from '../lro.js';
import { requireComponent } from './support.js';

requireComponent();

const LIMITS = ['timeout', 'memory-limit', 'stack-overflow'];

/** Asserts that `promise` fails with an LroError of one of `kinds` within `ms`. */
async function stoppedWithin(promise, kinds, ms) {
  const start = performance.now();
  const error = await promise.then(
    (value) => assert.fail(`expected the call to be stopped, it returned ${JSON.stringify(value)}`),
    (e) => e,
  );
  const took = performance.now() - start;
  assert.ok(error instanceof LroError, `expected an LroError, got ${error?.stack ?? error}`);
  assert.ok(kinds.includes(error.kind), `kind ${error.kind} (${error.message}) is not one of ${kinds}`);
  assert.match(error.message, /limit exceeded/);
  assert.ok(took < ms, `stopped after ${Math.round(took)} ms, expected under ${ms} ms`);
  return error;
}

describe('runaway filters are stopped and the host keeps working', () => {
  const lro = new Lro();
  after(() => lro.close());
  const runaways = {
    'endless recursion': 'def f: f; f',
    'an endless range': '[range(1e12)] | length',
    'a string doubling until memory runs out': 'reduce range(40) as $i ("xx"; . + .) | length',
    'one huge allocation': '"x" * 1000000000 | length',
    'an array growing without end': '[limit(1e10; repeat([1,2,3,4,5,6,7,8]))] | length',
  };
  for (const [what, filter] of Object.entries(runaways)) {
    it(`${what}: ${filter}`, async () => {
      await stoppedWithin(lro.query(filter, 'null'), LIMITS, 2000);
      // The same object serves the next call, in a fresh instance.
      assert.deepEqual((await lro.query('.a + 1', '{"a": 41}')).values, ['42']);
    });
  }

  it('recursion that overflows the guest stack is reported as such, as the Rust and Python hosts do', async () => {
    await stoppedWithin(lro.query('def f: [f]; f', 'null'), ['stack-overflow'], 2000);
    assert.deepEqual((await lro.query('.a', '{"a": 1}')).values, ['1']);
  });

  it('a huge allocation is reported as the memory limit, not as a crash', async () => {
    const error = await stoppedWithin(lro.query('"x" * 1000000000 | length', 'null'), ['memory-limit'], 2000);
    assert.match(error.message, /512 MiB memory limit/);
  });

  it('a runaway filter in extract is stopped too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lro-limits-'));
    try {
      const records = Array.from({ length: 40 }, (_, i) => ({ id: `m${i}`, title: `memory ${i} `.repeat(10) }));
      const out = await lro.offload({ dir, threshold: 100 }, { operation: 'recall', records });
      assert.equal(out.kind, 'offloaded');
      await stoppedWithin(lro.extract({ dir }, { path: out.path, query: 'def f: f; f' }), LIMITS, 2000);
      const ids = await lro.extract({ dir }, { path: out.path, query: '.id', limit: 100000 });
      assert.equal(ids.total, 40);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the deadline is an option', async () => {
    const quick = new Lro({ filterTimeout: 200 });
    try {
      const error = await stoppedWithin(quick.query('[range(1e12)] | length', 'null'), ['timeout'], 1000);
      assert.match(error.message, /200ms time limit/);
    } finally {
      quick.close();
    }
  });
});

describe('extract refuses paths outside the offload directory', () => {
  const lro = new Lro();
  const dir = mkdtempSync(join(tmpdir(), 'lro-sandbox-'));
  after(() => {
    lro.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // A valid LRO file inside, so that a refusal cannot be "not found" by accident.
  writeFileSync(join(dir, 'atlatl-recall-01JDEF7X2K0000000000000000.jsonl'),
    '{"type":"lro_header","operation":"recall","query":null,"count":1,"schema_version":"0.1",'
    + '"timestamp":"2099-01-01T00:00:00.000Z","estimated_tokens":5,"detail":"light"}\n{"id":"m1"}\n');
  symlinkSync('/etc/passwd', join(dir, 'atlatl-recall-01JDEF7X2K0000000000000001.jsonl'));

  const outside = {
    '<dir>/../etc/passwd': `${dir}/../etc/passwd`,
    '/etc/passwd': '/etc/passwd',
    'a symlink inside pointing out': join(dir, 'atlatl-recall-01JDEF7X2K0000000000000001.jsonl'),
  };
  for (const [what, path] of Object.entries(outside)) {
    it(what, async () => {
      await assert.rejects(lro.extract({ dir, ttl: 3153600000 }, { path, query: '.' }), (e) => {
        assert.ok(e instanceof LroError, `expected an LroError, got ${e}`);
        // The Rust host (`lro extract PATH --query . --output-dir DIR`) says "outside the offload
        // directory: ..." for all three.
        assert.equal(e.kind, 'outside-directory', e.message);
        assert.doesNotMatch(e.message, /root:/, 'the message must not quote the file');
        return true;
      });
    });
  }

  it('the file inside is read', async () => {
    const path = join(dir, 'atlatl-recall-01JDEF7X2K0000000000000000.jsonl');
    assert.deepEqual((await lro.extract({ dir }, { path, query: '.id' })).values, ['"m1"']);
  });
});
