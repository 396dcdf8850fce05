// Where calls run: the calls that run no user filter (offload, intercept, rewriteTools, recipes,
// estimate, toolDefinition, sweep, defaults) run on the calling thread, each in a fresh
// instance, with imports of their own; the filter calls (extract, callTool, query) run in the
// worker, which a deadline can stop; so do calls with more than 1 MiB of text in their
// arguments; a `timeout` of the caller's sends every call there.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Lro, LroError } from '../lro.js';
import { HOST, requireComponent } from './support.js';

requireComponent();

const records = (n, tag = 'r') => Array.from({ length: n }, (_, i) => ({ id: `${tag}${i}`, title: `record number ${i} `.repeat(8) }));

/** Runs `body` (a module's text, with `Lro` and `dir` in scope) in a child process; its output. */
function child(body) {
  const dir = mkdtempSync(join(tmpdir(), 'lro-thread-'));
  try {
    const script = join(dir, 'child.mjs');
    writeFileSync(script, `import { Lro } from ${JSON.stringify(join(HOST, 'lro.js'))};
      const dir = ${JSON.stringify(join(dir, 'out'))};
      ${body}`);
    const stdout = execFileSync(process.execPath, [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    return stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the calls that run no user filter run on the calling thread', () => {
  it('print nothing, patch nothing of the host\'s, and start no thread', () => {
    // Everything the child writes is checked: the calls' own output would show up in it.
    const out = child(`
      const before = { out: process.stdout.write, err: process.stderr.write, promising: WebAssembly.promising };
      const workers = () => process.report.getReport().workers.length;
      const lro = new Lro({ onEvent: () => {} });
      const config = { output_dir: dir, threshold_tokens: 100, ttl_seconds: 60 };
      const records = Array.from({ length: 40 }, (_, i) => ({ id: 'm' + i, title: 'note '.repeat(20) }));
      const offloaded = await lro.offload(config, { operation: 'recall', records });
      const result = { content: [{ type: 'text', text: JSON.stringify({ records }) }] };
      const intercepted = await lro.intercept(config, { tool: 't', result });
      await lro.rewriteTools(config, []);
      await lro.recipes(config, 'light', null);
      await lro.estimate('abcd');
      await lro.toolDefinition();
      await lro.defaults();
      const swept = await lro.sweep(config, Date.now() + 61_000);
      // A call stopped by its memory cap: the guest prints its allocation failure on its stderr.
      const small = new Lro({ memory: 2 * 2 ** 20 });
      const many = Array.from({ length: 3000 }, (_, i) => ({ id: 'm' + i, title: 'note '.repeat(20) }));
      const refused = await small.offload(config, { operation: 'recall', records: many })
        .then(() => 'returned', (e) => e.kind + ': ' + e.message);
      const after = { out: process.stdout.write, err: process.stderr.write, promising: WebAssembly.promising };
      const same = Object.keys(before).filter((k) => before[k] === after[k]);
      console.log(JSON.stringify({ kinds: [offloaded.kind, intercepted.kind], deleted: swept.deleted.length, refused,
        same, workers: workers() }));
    `);
    const lines = out.trim().split('\n');
    assert.equal(lines.length, 1, `the calls printed on stdout:\n${out}`);
    const seen = JSON.parse(lines[0]);
    assert.deepEqual(seen.kinds, ['offloaded', 'offloaded']);
    assert.equal(seen.deleted, 2);
    assert.match(seen.refused, /^memory-limit: limit exceeded: the call needed more than its 2 MiB memory limit and was stopped \(memory allocation of \d+ bytes failed/);
    assert.deepEqual(seen.same, ['out', 'err', 'promising']);
    assert.equal(seen.workers, 0, 'no worker thread was started');
  });

  it('a filter call starts the worker; the calls around it keep their results', async () => {
    const lro = new Lro();
    const dir = mkdtempSync(join(tmpdir(), 'lro-thread-'));
    try {
      const config = { output_dir: dir, threshold_tokens: 100 };
      const first = await lro.offload(config, { operation: 'recall', records: records(30, 'a') });
      // At once: two offloads here, an extract and a query in the worker, an estimate here.
      const [a, b, ids, query, tokens] = await Promise.all([
        lro.offload(config, { operation: 'recall', records: records(31, 'b') }),
        lro.offload(config, { operation: 'search', records: records(32, 'c') }),
        lro.extract(config, { path: first.path, query: '.id' }),
        lro.query('.[] | . * 2', '[1, 2, 3]'),
        lro.estimate('abcdefgh'),
      ]);
      assert.deepEqual([a.kind, a.count, b.kind, b.count], ['offloaded', 31, 'offloaded', 32]);
      assert.equal(ids.text.trim().split('\n').length, 30);
      assert.equal(ids.text.split('\n')[0], '"a0"');
      assert.deepEqual(query.values, ['2', '4', '6']);
      assert.equal(tokens, 2);
      assert.equal(readdirSync(dir).length, 3);
    } finally {
      lro.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('after close(), calls of both kinds work as before (a later call starts a new worker)', async () => {
    const lro = new Lro();
    const dir = mkdtempSync(join(tmpdir(), 'lro-thread-'));
    try {
      const config = { output_dir: dir, threshold_tokens: 100 };
      await lro.query('.', '1');
      lro.close();
      const out = await lro.offload(config, { operation: 'recall', records: records(30) });
      assert.equal(out.kind, 'offloaded');
      lro.close();
      const hits = await lro.extract(config, { path: out.path, query: '.id' });
      assert.equal(hits.text.split('\n')[0], '"r0"');
      lro.close();
      assert.equal(await lro.estimate('abcd'), 1);
    } finally {
      lro.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('close() stops every worker call made before it: one not yet at the worker, one queued', async () => {
    // Found under load: close() landing while the first call still compiled the modules (before
    // its worker existed) let that call start a worker after close() and answer.
    const lro = new Lro();
    try {
      const first = lro.query('.a', '{"a": 1}');
      const queued = lro.query('.b', '{"b": 2}');
      lro.close();
      for (const call of [first, queued]) {
        await assert.rejects(call, (e) => e.kind === 'host' && e.closed === true
          && e.message === 'the call was stopped: Lro.close() was called while it ran');
      }
      // And the next call starts a new worker.
      assert.deepEqual((await lro.query('.c', '{"c": 3}')).values, ['3']);
    } finally {
      lro.close();
    }
  });

  it('a failed write degrades the call, never fails it', async () => {
    // The directory is a regular file: nothing is preopened, the component degrades.
    const root = mkdtempSync(join(tmpdir(), 'lro-thread-'));
    const lro = new Lro();
    try {
      const file = join(root, 'file');
      writeFileSync(file, '');
      const out = await lro.offload({ output_dir: file, threshold_tokens: 100 }, { operation: 'recall', records: records(30) });
      assert.equal(out.kind, 'degraded');
    } finally {
      lro.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('with more than 1 MiB of text in their arguments, they run in the worker, with the same results', () => {
    const out = child(`
      const workers = () => process.report.getReport().workers.length;
      const lro = new Lro();
      const config = { output_dir: dir, threshold_tokens: 100 };
      const records = (n) => Array.from({ length: n }, (_, i) => ({ id: 'm' + i, title: 'note '.repeat(20) }));
      const small = await lro.offload(config, { operation: 'recall', records: records(5000) }); // 0.6 MB
      const here = workers();
      const large = await lro.offload(config, { operation: 'recall', records: records(10000) }); // 1.3 MB
      console.log(JSON.stringify({ counts: [small.count, large.count], kinds: [small.kind, large.kind], here, after: workers() }));
      lro.close();
    `);
    assert.deepEqual(JSON.parse(out), { counts: [5000, 10000], kinds: ['offloaded', 'offloaded'], here: 0, after: 1 });
  });

  it('with a `timeout` given, they run in the worker, where the deadline stops them', async () => {
    const lro = new Lro({ timeout: 1 });
    const dir = mkdtempSync(join(tmpdir(), 'lro-thread-'));
    try {
      await assert.rejects(lro.offload({ output_dir: dir, threshold_tokens: 100 }, { operation: 'recall', records: records(5000) }), (e) => {
        assert.ok(e instanceof LroError);
        assert.equal(e.kind, 'timeout');
        assert.match(e.message, /1ms time limit/);
        return true;
      });
    } finally {
      lro.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
