// The calls that run on the calling thread share an instance kept per preopen (lro.js, KEPT;
// docs/HOSTS.md, step 2): a directory replaced at its path, or made read-only and writable again,
// is the one the next call sees, and a trap drops the instance it happened in. That a kept
// instance answers as a fresh one is what cases.test.js checks: every shared case runs
// through one Lro.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Lro, LroError } from '../lro.js';
import { requireComponent } from './support.js';

requireComponent();

const records = (n, content = '') => Array.from({ length: n }, (_, i) => ({
  id: `m${i}`, namespace: '_semantic/kept', title: `Record ${i}`, content,
}));
const lines = (path) => readFileSync(path, 'utf8').split('\n').filter(Boolean).length;

describe('instances kept for the calls on the calling thread', () => {
  const root = mkdtempSync(join(tmpdir(), 'lro-kept-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('a directory replaced at its path gets the next file', async () => {
    const lro = new Lro();
    after(() => lro.close());
    const dir = join(root, 'replaced');
    const config = { output_dir: dir, threshold_tokens: 100 };
    const first = await lro.offload(config, { operation: 'list', records: records(50) });
    assert.equal(first.kind, 'offloaded');
    renameSync(dir, join(root, 'moved'));
    mkdirSync(dir, { mode: 0o700 });
    const second = await lro.offload(config, { operation: 'list', records: records(60) });
    assert.equal(second.kind, 'offloaded');
    assert.equal(dirname(second.path), dir);
    assert.equal(lines(second.path), 61); // the header and the records
    assert.deepEqual(readdirSync(join(root, 'moved')), [basename(first.path)]);
  });

  it('a directory made read-only, then writable again, is mounted as it is at each call', async () => {
    const lro = new Lro();
    after(() => lro.close());
    const dir = join(root, 'modes');
    const config = { output_dir: dir, threshold_tokens: 100 };
    assert.equal((await lro.offload(config, { operation: 'list', records: records(50) })).kind, 'offloaded');
    chmodSync(dir, 0o500);
    assert.equal((await lro.offload(config, { operation: 'list', records: records(50) })).kind, 'degraded');
    chmodSync(dir, 0o700);
    const out = await lro.offload(config, { operation: 'list', records: records(70) });
    assert.equal(out.kind, 'offloaded');
    assert.equal(lines(out.path), 71);
  });

  it('a trap drops the instance it happened in, and the next call works', async () => {
    // 2 MiB is enough for small calls and too little for 2,000 records of 200 characters
    // (0.66 MB of arguments: small enough to run on this thread, in the kept instance).
    const lro = new Lro({ memory: 2 * 2 ** 20 });
    after(() => lro.close());
    const dir = join(root, 'trap');
    const config = { output_dir: dir, threshold_tokens: 100 };
    assert.equal((await lro.offload(config, { operation: 'list', records: records(3) })).kind, 'inline');
    const error = await lro.offload(config, { operation: 'list', records: records(2000, 'x'.repeat(200)) }).then(
      (value) => assert.fail(`expected memory-limit, got ${JSON.stringify(value)}`), (e) => e);
    assert.ok(error instanceof LroError && error.kind === 'memory-limit', `${error?.kind}: ${error?.message}`);
    assert.match(error.message, /2 MiB memory limit/);
    const out = await lro.offload(config, { operation: 'list', records: records(200) });
    assert.equal(out.kind, 'offloaded');
    assert.equal(out.count, 200);
    assert.deepEqual(readdirSync(dir).filter((n) => n.endsWith('.jsonl')), [basename(out.path)]);
  });
});
