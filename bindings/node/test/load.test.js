// One Lro under load: 2,000 calls, 32 at a time, mixing offloads (each checked against its file),
// extractions (each checked value by value) and failing filters. Every answer must be right,
// nothing may crash, and memory must stay flat: the resident set after 2,000 calls may exceed the
// one after 100 by less than 150 MB (a leak of even 100 KB per call would break that).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Lro, LroError } from '../lro.js';
import { requireComponent } from './support.js';

requireComponent();

const TOTAL = 2000;
const CONCURRENCY = 32;
const MiB = 2 ** 20;

const records = (n, tag) => Array.from({ length: n }, (_, i) => ({
  id: `${tag}-${i}`, memory_type: 'semantic', namespace: '_semantic/load', title: `load record ${tag} ${i} `.repeat(4),
}));

describe('load: 2,000 calls on one Lro, 32 at a time', () => {
  const lro = new Lro();
  const dir = mkdtempSync(join(tmpdir(), 'lro-load-'));
  after(() => {
    lro.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives every call its right answer, and memory stays flat', async () => {
    const config = { output_dir: dir, threshold_tokens: 100, ttl_seconds: 3600 };
    // A file to extract from, with known records.
    const known = records(50, 'known');
    const base = await lro.offload(config, { operation: 'recall', records: known });
    assert.equal(base.kind, 'offloaded');

    /** Call number `n`: one of three kinds, each checking its own answer. */
    async function call(n) {
      switch (n % 3) {
        case 0: { // offload: the count, and a file of count + 1 lines (header and records)
          const count = 20 + (n % 37);
          const out = await lro.offload(config, { operation: 'search', query: `q${n}`, records: records(count, `n${n}`) });
          assert.equal(out.kind, 'offloaded', `call ${n}`);
          assert.equal(out.count, count, `call ${n}`);
          assert.ok(existsSync(out.path), `call ${n}: ${out.path} is missing`);
          const lines = readFileSync(out.path, 'utf8').split('\n').filter((l) => l !== '');
          assert.equal(lines.length, count + 1, `call ${n}: ${out.path}`);
          assert.equal(JSON.parse(lines.at(-1)).id, `n${n}-${count - 1}`, `call ${n}`);
          unlinkSync(out.path); // keep the directory small: it is not what is measured
          return;
        }
        case 1: { // extract: exactly the selected values, in order
          const k = n % 50;
          const out = await lro.extract(config, { path: base.path, query: 'select(.id | endswith($k)) | .id', params: { k: `-${k}` } });
          assert.deepEqual(out.values, [JSON.stringify(`known-${k}`)], `call ${n}`);
          return;
        }
        default: { // a filter that fails while running, with jq's error
          await assert.rejects(lro.query(`error("boom ${n}")`, 'null'), (e) => {
            assert.ok(e instanceof LroError, `call ${n}: ${e}`);
            assert.equal(e.kind, 'filter-failed', `call ${n}: ${e.message}`);
            assert.ok(e.message.includes(`boom ${n}`), `call ${n}: ${e.message}`);
            return true;
          });
        }
      }
    }

    let done = 0;
    let rssAt100 = null;
    const start = performance.now();
    while (done < TOTAL) {
      // Batches end at call 100 exactly, so the first figure is taken after 100 calls.
      const size = Math.min(CONCURRENCY, (done < 100 ? 100 : TOTAL) - done);
      await Promise.all(Array.from({ length: size }, (_, i) => call(done + i)));
      done += size;
      if (done === 100) rssAt100 = process.memoryUsage().rss;
    }
    const seconds = (performance.now() - start) / 1000;
    const rssAtEnd = process.memoryUsage().rss;
    const growth = (rssAtEnd - rssAt100) / MiB;
    console.log(`load: ${TOTAL} calls in ${seconds.toFixed(1)} s, ${Math.round(TOTAL / seconds)} calls/s; `
      + `RSS after 100 calls ${Math.round(rssAt100 / MiB)} MiB, after ${TOTAL} ${Math.round(rssAtEnd / MiB)} MiB `
      + `(${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MiB)`);
    assert.ok(growth < 150, `RSS grew by ${growth.toFixed(1)} MiB between call 100 and call ${TOTAL}`);
  });
});
