// The offload directory as the host finds it: an unusable one degrades offload and intercept
// (never an exception) and fails extract, callTool and sweep with kind `directory`; new files are
// narrowed to 0600 without following links; a FIFO wearing an LRO name cannot hang the process;
// a directory deleted or a file truncated under the host gives a clear error.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync,
  symlinkSync, truncateSync, unlinkSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, describe, it } from 'node:test';
import { Lro, LroError } from '../lro.js';
import { HOST, requireComponent } from './support.js';

requireComponent();

const records = (n) => Array.from({ length: n }, (_, i) => ({
  id: `m${i}`, memory_type: 'semantic', namespace: '_semantic/decisions', title: `decision number ${i} `.repeat(8),
}));
const TEXT = JSON.stringify(records(30));
const LONG_TTL = 3153600000; // 100 years: setup files with old ULIDs must not have expired

/** Every entry under `dir`, recursively (or [] when it is not a directory). */
function tree(dir) {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  return readdirSync(dir, { recursive: true });
}

describe('an unusable offload directory degrades offload and intercept, never throws', () => {
  const events = [];
  const lro = new Lro({ onEvent: (e) => events.push(e) });
  const root = mkdtempSync(join(tmpdir(), 'lro-dir-'));
  after(() => {
    lro.close();
    for (const d of readdirSync(root)) {
      const p = join(root, d);
      if (statSync(p).isDirectory()) chmodSync(p, 0o700);
    }
    rmSync(root, { recursive: true, force: true });
  });

  /** Offloads 30 records into `dir`: degraded, with one offload-write-failed event, the warning saying `reason`. */
  async function degraded(dir, reason) {
    events.length = 0;
    const out = await lro.offload({ output_dir: dir, threshold_tokens: 100 }, { operation: 'recall', records: records(30) });
    assert.equal(out.kind, 'degraded', JSON.stringify(out));
    const says = reason instanceof RegExp ? reason.test(out.warning) : out.warning.includes(reason);
    assert.ok(says, `warning ${JSON.stringify(out.warning)} does not say ${reason}`);
    assert.deepEqual(events.map((e) => e.kind), ['offload-write-failed']);
    assert.ok(events[0].path.startsWith('/'), `event path ${events[0].path} is not absolute`);
    return out;
  }

  it('the directory is a regular file', async () => {
    const dir = join(root, 'a-file');
    writeFileSync(dir, 'not a directory');
    await degraded(dir, `offload directory ${dir}: not a directory`);
    assert.equal(readFileSync(dir, 'utf8'), 'not a directory');
  });

  it('its parent is a regular file, so it cannot be created', async () => {
    const parent = join(root, 'parent-file');
    writeFileSync(parent, 'x');
    const dir = join(parent, 'offloads');
    await degraded(dir, `offload directory ${dir}: cannot create it: Not a directory (os error 20)`);
    assert.equal(readFileSync(parent, 'utf8'), 'x');
  });

  it('a read-only directory (0500) is mounted read-only, for root too', async () => {
    const dir = join(root, 'read-only');
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o500);
    // The component words the refused write; the host's part is the read-only mount.
    await degraded(dir, /operation not permitted/i);
    assert.deepEqual(tree(dir), []);
  });

  it('a world-writable directory (0777) is refused', async () => {
    const dir = join(root, 'world-writable');
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    await degraded(dir, `offload directory ${dir}: writable by everyone (mode 777); refusing to use it: make it 0700`);
    assert.deepEqual(tree(dir), []);
  });

  it('a group-writable directory (0770) is refused', async () => {
    const dir = join(root, 'group-writable');
    mkdirSync(dir);
    chmodSync(dir, 0o770);
    await degraded(dir, `offload directory ${dir}: writable by its group (mode 770); refusing to use it: make it 0700`);
    assert.deepEqual(tree(dir), []);
  });

  // Issue 34, item 7: another user who can enter the directory could open a file while it is
  // being written; a directory others can read or enter is refused like a writable one.
  it('a directory readable by everyone (0755) or its group (0750) is refused', async () => {
    for (const [mode, reason] of [[0o755, 'readable by everyone (mode 755)'], [0o750, 'readable by its group (mode 750)'],
      [0o711, 'searchable by everyone (mode 711)']]) {
      const dir = join(root, `open-${mode.toString(8)}`);
      mkdirSync(dir);
      chmodSync(dir, mode);
      await degraded(dir, `offload directory ${dir}: ${reason}; refusing to use it: make it 0700`);
      assert.deepEqual(tree(dir), []);
    }
  });

  it('a directory owned by another user is refused', async () => {
    const me = process.geteuid();
    // Root can give a directory away; anyone else finds one of root's ready-made.
    let dir = '/';
    if (me === 0) {
      dir = join(root, 'not-mine');
      mkdirSync(dir, { mode: 0o700 });
      chownSync(dir, 1000, 1000);
    }
    const owner = statSync(dir).uid;
    await degraded(dir, `offload directory ${dir}: owned by uid ${owner}, not by this user (uid ${me}); refusing to use it`);
    assert.deepEqual(dir === '/' ? [] : tree(dir), []);
  });

  it('a relative path is made absolute before the component sees it', async () => {
    const file = join(root, 'relative-file');
    writeFileSync(file, 'x');
    const dir = relative(process.cwd(), file);
    assert.ok(!dir.startsWith('/'));
    await degraded(dir, `offload directory ${dir}: not a directory`);
    assert.ok(events[0].path.startsWith(`${file}/`), events[0].path);
  });

  it('intercept degrades the same way, with the reason in its warning', async () => {
    const dir = join(root, 'world-writable-intercept');
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    events.length = 0;
    const out = await lro.intercept({ output_dir: dir, threshold_tokens: 100 }, { tool: 'list_things', result: { content: [{ type: 'text', text: TEXT }] } });
    assert.equal(out.kind, 'degraded', JSON.stringify(out));
    assert.deepEqual(events.map((e) => e.kind), ['offload-write-failed']);
    assert.deepEqual(tree(dir), []);
    assert.ok(out.warning.includes(`offload directory ${dir}: writable by everyone`), out.warning);
  });

  it('extract, callTool and sweep fail with kind `directory` instead', async () => {
    const dir = join(root, 'world-writable-read');
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    const path = join(dir, 'atlatl-recall-01JDEF7X2K0000000000000000.jsonl');
    const refused = { name: 'LroError', kind: 'directory', message: `offload directory ${dir}: writable by everyone (mode 777); refusing to use it: make it 0700` };
    await assert.rejects(lro.extract({ output_dir: dir }, { path, recipe: 1 }), refused);
    await assert.rejects(lro.callTool({ output_dir: dir }, { file_path: path, recipe: 1 }), refused);
    await assert.rejects(lro.sweep({ output_dir: dir }, 0), refused);
    const file = join(root, 'a-file-too');
    writeFileSync(file, 'x');
    await assert.rejects(lro.sweep({ output_dir: file }, 0), { kind: 'directory', message: `offload directory ${file}: not a directory` });
  });
});

describe('new files are private, and the host never follows a planted link', () => {
  const root = mkdtempSync(join(tmpdir(), 'lro-private-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('a symlink planted at the new file\'s name keeps its target\'s mode', async () => {
    const dir = join(root, 'planted');
    const outside = join(root, 'outside.txt');
    writeFileSync(outside, 'someone else\'s file');
    chmodSync(outside, 0o644);
    // The event arrives after the file is written and before the host narrows it: the moment
    // another process could swap the file for a link to a file of its choosing.
    const lro = new Lro({
      onEvent: (e) => {
        if (e.kind !== 'offload-created') return;
        unlinkSync(e.path);
        symlinkSync(outside, e.path);
      },
    });
    try {
      const out = await lro.offload({ output_dir: dir, threshold_tokens: 100 }, { operation: 'recall', records: records(30) });
      assert.equal(out.kind, 'offloaded');
      assert.equal(statSync(outside).mode & 0o777, 0o644, 'the chmod followed the link');
    } finally {
      lro.close();
    }
  });

  it('an offloaded file is 0600 even with umask 0', async () => {
    const lro = new Lro();
    const old = process.umask(0);
    try {
      const dir = join(root, 'umask');
      const out = await lro.offload({ output_dir: dir, threshold_tokens: 100 }, { operation: 'recall', records: records(30) });
      assert.equal(out.kind, 'offloaded');
      assert.equal(statSync(out.path).mode & 0o777, 0o600);
      assert.equal(statSync(dir).mode & 0o777, 0o700);
      const tool = await lro.intercept({ output_dir: dir, threshold_tokens: 100 }, { tool: 'list_things', result: { content: [{ type: 'text', text: TEXT }] } });
      assert.equal(tool.kind, 'offloaded');
      for (const f of tool.files) assert.equal(statSync(f).mode & 0o777, 0o600, f);
    } finally {
      process.umask(old);
      lro.close();
    }
  });
});

describe('files that are not what they seem', () => {
  const root = mkdtempSync(join(tmpdir(), 'lro-faults-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('a FIFO wearing an LRO name: extract fails promptly with not-lro-file and the process exits', () => {
    const dir = join(root, 'fifo');
    mkdirSync(dir, { mode: 0o700 });
    const path = join(dir, 'atlatl-recall-01JDEF7X2K0000000000000000.jsonl');
    execFileSync('mkfifo', [path]);
    // In a child process: opening a FIFO blocks until a writer comes, in a thread no deadline
    // can stop, and then the process cannot exit either.
    const script = join(root, 'extract-fifo.mjs');
    writeFileSync(script, `import { Lro } from ${JSON.stringify(join(HOST, 'lro.js'))};
      const lro = new Lro();
      try { await lro.extract(${JSON.stringify({ output_dir: dir, ttl_seconds: LONG_TTL })}, ${JSON.stringify({ path, query: '.' })}); console.log('returned'); }
      catch (e) { console.log(e.kind + ': ' + e.message); }
      lro.close();`);
    const start = performance.now();
    const child = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 10_000 });
    const took = performance.now() - start;
    assert.equal(child.error, undefined, `the child did not exit within 10 s (${Math.round(took)} ms): ${child.error}`);
    assert.equal(child.status, 0, child.stderr);
    assert.match(child.stdout, /^not-lro-file: /);
    assert.ok(child.stdout.includes(path), child.stdout);
  });

  it('the directory deleted between offload and extract: a directory error naming it', async () => {
    const lro = new Lro();
    try {
      const dir = join(root, 'deleted');
      const out = await lro.offload({ output_dir: dir, threshold_tokens: 100 }, { operation: 'recall', records: records(30) });
      assert.equal(out.kind, 'offloaded');
      rmSync(dir, { recursive: true });
      await assert.rejects(lro.extract({ output_dir: dir }, { path: out.path, recipe: 1 }), (e) => {
        assert.ok(e instanceof LroError, `expected an LroError, got ${e}`);
        assert.ok(['not-found', 'directory'].includes(e.kind), `${e.kind}: ${e.message}`);
        assert.ok(e.message.includes(dir), e.message);
        return true;
      });
    } finally {
      lro.close();
    }
  });

  it('a file truncated mid-record: corrupt, naming the line', async () => {
    const lro = new Lro();
    try {
      const dir = join(root, 'truncated');
      const out = await lro.offload({ output_dir: dir, threshold_tokens: 100 }, { operation: 'recall', records: records(30) });
      assert.equal(out.kind, 'offloaded');
      const text = readFileSync(out.path, 'utf8');
      const lines = text.split('\n');
      // Cut in the middle of the 11th line (the header is line 1, so record 10).
      const cut = lines.slice(0, 10).join('\n').length + 1 + Math.floor(lines[10].length / 2);
      truncateSync(out.path, Buffer.byteLength(text.slice(0, cut)));
      await assert.rejects(lro.extract({ output_dir: dir }, { path: out.path, query: '.id', limit: 100000 }), (e) => {
        assert.ok(e instanceof LroError, `expected an LroError, got ${e}`);
        assert.equal(e.kind, 'corrupt', e.message);
        assert.match(e.message, /\bline 11\b/);
        return true;
      });
    } finally {
      lro.close();
    }
  });
});

describe('a read-only file system', () => {
  it('degrades offload with the cause named (wasmtime-wasi and the shim would say only "I/O error")', () => {
    // A tmpfs mounted read-only in a private mount namespace (unshare, as root or in a user
    // namespace); the child process runs the offload inside it.
    const root = mkdtempSync(join(tmpdir(), 'lro-rofs-'));
    const mount = join(root, 'ro');
    mkdirSync(mount);
    const script = `
      const { Lro } = await import(${JSON.stringify(new URL('../lro.js', import.meta.url).href)});
      const lro = new Lro();
      const out = await lro.offload({ output_dir: ${JSON.stringify(mount)}, threshold_tokens: 100 }, { operation: 'list', records: ${TEXT} });
      lro.close();
      console.log(JSON.stringify(out));`;
    const ns = process.geteuid() === 0 ? '-m' : '-rm';
    const run = spawnSync('unshare', [ns, 'sh', '-c',
      `mount -t tmpfs -o size=1m,mode=0700,ro tmpfs '${mount}' && exec '${process.execPath}' --input-type=module -e "$0"`, script],
    { encoding: 'utf8', timeout: 120_000 });
    rmSync(root, { recursive: true, force: true });
    assert.equal(run.status, 0, run.stderr);
    const out = JSON.parse(run.stdout.trim().split('\n').pop());
    assert.equal(out.kind, 'degraded');
    assert.match(out.warning, /on a read-only file system/);
  });
});

// Issue 34, item 7: the shim creates the component's files owner-only from the first byte, not
// with the umask's mode until the host narrows them.
describe('files the component creates', () => {
  it('are 0600 from the start, even under umask 000', async () => {
    const { sandbox } = await import('../wasi.js');
    const dir = mkdtempSync(join(tmpdir(), 'lro-mode-'));
    const box = sandbox({ dir, readOnly: false });
    const [[preopen]] = box.imports['wasi:filesystem/preopens'].getDirectories();
    const old = process.umask(0);
    try {
      preopen.openAt({ symlinkFollow: false }, '.atlatl-recall-01JDEF7X2K0000000000000000.jsonl.tmp',
        { create: true, exclusive: true }, { write: true });
    } finally {
      process.umask(old);
      box.close?.();
    }
    assert.equal(statSync(join(dir, '.atlatl-recall-01JDEF7X2K0000000000000000.jsonl.tmp')).mode & 0o777, 0o600);
    rmSync(dir, { recursive: true, force: true });
  });
});
