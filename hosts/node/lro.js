// Node host for the lro WebAssembly component: the host duties of docs/HOSTS.md around each
// call (one preopen at its own path, read-only rules, a fresh instance, limits, private files,
// events), with arguments and results in the JSON form of that page.
//
//   import { Lro } from './lro.js';
//   const lro = new Lro({ onEvent: (e) => console.error(e) });
//   const out = await lro.offload({ dir: '/tmp/lro-demo', threshold: 500 }, { operation: 'recall', records });
//   lro.close();
import {
  accessSync, closeSync, constants, existsSync, fchmodSync, fstatSync, mkdirSync, openSync, readFileSync, realpathSync, statSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getSystemErrorMap } from 'node:util';
import { Worker } from 'node:worker_threads';
import * as convert from './convert.js';
import { LroError } from './convert.js';

export { LroError };

const here = dirname(fileURLToPath(import.meta.url));
const MiB = 2 ** 20;
const PAGE = 64 * 1024;

/** Defaults of the Rust host (host/src/lib.rs, `Options`). */
export const DEFAULTS = Object.freeze({
  timeout: 10_000, // ms: every call but the filter calls
  filterTimeout: 1_000, // ms: the filter calls (extract, callTool, query), which run user filters
  memory: 2048 * MiB, // bytes of linear memory: every call but the filter calls
  filterMemory: 512 * MiB, // bytes of linear memory: the filter calls
});

/**
 * Sets the maximum of the core module's memory (a memory section entry `flags min [max]`), so
 * that memory.grow past it fails inside the guest: V8 has no other per-instance memory cap.
 */
function capMemory(bytes, maxBytes) {
  const buf = Buffer.from(bytes);
  const leb = (at) => {
    let value = 0, shift = 0, byte;
    do { byte = buf[at++]; value += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte & 0x80);
    return [value, at];
  };
  const encode = (n) => {
    const out = [];
    do { let b = n % 128; n = Math.floor(n / 128); if (n) b |= 0x80; out.push(b); } while (n);
    return out;
  };
  let at = 8; // magic and version
  while (at < buf.length) {
    const id = buf[at];
    const [size, body] = leb(at + 1);
    if (id === 5) {
      let [count, p] = leb(body);
      const entries = [];
      for (; count > 0; count--) {
        const flags = buf[p];
        if (flags & ~1) throw new Error(`unexpected memory flags ${flags} (shared or 64-bit memory)`);
        let min, max;
        [min, p] = leb(p + 1);
        if (flags & 1) [max, p] = leb(p);
        const cap = Math.max(min, Math.floor(maxBytes / PAGE));
        entries.push([0x01, ...encode(min), ...encode(max === undefined ? cap : Math.min(max, cap))]);
      }
      const section = [...encode(entries.length), ...entries.flat()];
      return Buffer.concat([buf.subarray(0, at), Buffer.from([5, ...encode(section.length), ...section]),
        buf.subarray(body + size)]);
    }
    at = body + size;
  }
  throw new Error('the core module defines no memory');
}

/** A time limit as the Rust and Python hosts print it: `1s`, `1.5s`, `250ms`. */
function duration(ms) {
  return ms >= 1000 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * The parent's node options for the worker, as Node would pass them, less `--input-type`: it is
 * only allowed with --eval or stdin, so a worker inheriting it (`node --input-type=module -e ...`)
 * fails to start.
 */
function workerExecArgv() {
  const out = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--input-type') i++; // and its value
    else if (!argv[i].startsWith('--input-type=')) out.push(argv[i]);
  }
  return out;
}

let compiled = null;

/** Compiles the transpiled core modules once per process, in two memory-capped variants. */
async function compile(gen, limits) {
  const key = `${gen}:${limits.memory}:${limits.filterMemory}`;
  if (compiled?.key === key) return compiled.modules;
  const source = join(gen, 'lro.js');
  if (!existsSync(source)) {
    throw new LroError('load', `${gen} holds no transpiled component: run \`LRO_WASM=/path/to/lro.wasm npm run build\` in ${here}`);
  }
  const names = ['lro.core.wasm', 'lro.core2.wasm', 'lro.core3.wasm'];
  const bytes = Object.fromEntries(names.map((n) => [n, readFileSync(join(gen, n))]));
  const variant = async (cap) => Object.fromEntries(await Promise.all(names.map(async (n) => [n,
    await WebAssembly.compile(n === 'lro.core.wasm' ? capMemory(bytes[n], cap) : bytes[n])])));
  const modules = { io: await variant(limits.memory), filter: await variant(limits.filterMemory) };
  compiled = { key, modules };
  return modules;
}

/** An OS error as Rust's io::Error prints it ("No such file or directory (os error 2)"), so the
 * three hosts word directory problems alike (they can reach the shared cases' expected files). */
function osError(e) {
  const text = typeof e?.errno === 'number' ? getSystemErrorMap().get(e.errno)?.[1] : undefined;
  return text ? `${text[0].toUpperCase()}${text.slice(1)} (os error ${-e.errno})` : `${e?.message ?? e}`;
}

/**
 * Makes config.dir an existing, canonical directory that only this user can write to
 * (docs/HOSTS.md, host duty 1), or throws an LroError of kind `directory` saying why it cannot
 * be used. Returns the path and whether its mode has any write bit (without one it is preopened
 * read-only, even for root). `create`: make it 0700 when missing (offload and intercept).
 *
 * A directory owned by another user, or writable by group or others, is refused: another local
 * user could read what is offloaded there, or plant files and links in it. The messages are the
 * Rust host's (host/src/lib.rs, `prepare_dir`).
 */
function prepareDir(given, create) {
  const fail = (reason) => new LroError('directory', `offload directory ${given}: ${reason}`);
  if (given === '') throw fail('no offload directory given');
  const absolute = resolve(given);
  if (create && !existsSync(absolute)) {
    try {
      mkdirSync(absolute, { recursive: true, mode: 0o700 });
    } catch (e) {
      throw fail(`cannot create it: ${osError(e)}`);
    }
  }
  let canonical, stat;
  try {
    canonical = realpathSync(absolute);
    stat = statSync(canonical);
  } catch (e) {
    throw fail(osError(e));
  }
  if (!stat.isDirectory()) throw fail('not a directory');
  const me = process.geteuid();
  if (stat.uid !== me) throw fail(`owned by uid ${stat.uid}, not by this user (uid ${me}); refusing to use it`);
  if (stat.mode & 0o022) {
    const who = stat.mode & 0o002 ? 'everyone' : 'its group';
    throw fail(`writable by ${who} (mode ${(stat.mode & 0o7777).toString(8)}); refusing to use it: make it 0700`);
  }
  // The shim never opens a preopen (it joins the guest's paths onto it), so a directory that
  // cannot be opened would show up later as a failed read or write: find out here, as the Rust
  // host does when it preopens.
  try {
    closeSync(openSync(canonical, constants.O_RDONLY | constants.O_DIRECTORY));
  } catch (e) {
    throw fail(`cannot open it: ${osError(e)}`);
  }
  // A write to a read-only file system would reach the guest as a bare I/O error: name it here.
  // access(W_OK) reports EROFS even for root, for whom a mode without write bits is no barrier.
  if (create) {
    try {
      accessSync(canonical, constants.W_OK);
    } catch (e) {
      if (e.code === 'EROFS') throw fail('on a read-only file system');
    }
  }
  return { dir: canonical, writable: (stat.mode & 0o222) !== 0 };
}

/**
 * WASI cannot set modes: a file the call created is narrowed to 0600 (host duty 4). Through a
 * descriptor opened without following a symlink (a link planted at the name must not redirect
 * the chmod to a file outside) and without blocking (a FIFO planted there must not hang us).
 */
function ownerOnly(paths) {
  for (const path of paths) {
    let fd;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch {
      continue; // gone already (swept), or replaced by a link: nothing of ours to protect
    }
    try {
      if (fstatSync(fd).isFile()) fchmodSync(fd, 0o600);
    } catch {
      // As the Rust host: a file we cannot narrow is left as the umask made it; the call's
      // result is still right.
    } finally {
      closeSync(fd);
    }
  }
}

export class Lro {
  #options;
  #gen;
  #worker = null; // a started worker, or null
  #ready = null; // promise of #worker's first message: it has loaded its modules
  #pending = null; // the call in the worker: {id, resolve, reject, timer}
  #queue = Promise.resolve();
  #nextId = 1;

  /**
   * options: onEvent(event) receives every event, in order, before the call that emitted it
   * returns; timeout / filterTimeout in ms; memory / filterMemory in bytes; gen: the directory
   * of the transpiled component (default: gen/ next to this file).
   */
  constructor(options = {}) {
    this.#options = { ...DEFAULTS, onEvent: null, ...options };
    this.#gen = this.#options.gen ?? join(here, 'gen');
  }

  /** interceptor.offload: a result set inline, offloaded to a file, or degraded. */
  async offload(config, request) {
    const c = convert.config(config);
    const r = convert.request(request);
    return this.#writing(c, 'offload', (cfg) => [cfg, r], (out) => (out.kind === 'offloaded' ? [out.path] : []));
  }

  /** interceptor.intercept: what to forward for any tool's CallToolResult. */
  async intercept(config, call) {
    const c = convert.config(config);
    const t = convert.toolCall(call);
    return this.#writing(c, 'intercept', (cfg) => [cfg, t], (out) => (out.kind === 'offloaded' ? out.files : []));
  }

  /**
   * interceptor.rewrite-tools: a `tools/list` result's `tools` array (JSON text or value) for a
   * server whose results go through `intercept`; returns JSON text.
   */
  async rewriteTools(config, tools) {
    // The dir in the config is checked by the component but never opened: no preopen.
    const call = [convert.config(config), convert.args.tools(tools)];
    return this.#call('rewriteTools', call, { dir: null, readOnly: true, limits: 'io' });
  }

  /** custodian.sweep: deletes expired files; `now` in ms since the epoch. */
  async sweep(config, now) {
    const c = convert.config(config);
    const n = convert.args.now(now);
    const { dir, writable } = prepareDir(c.dir, false);
    return this.#call('sweep', [{ ...c, dir }, n], { dir, readOnly: !writable, limits: 'io' });
  }

  /** extractor.extract: a recipe or jq filter over an offloaded file; the directory is read-only. */
  async extract(config, request) {
    const c = convert.config(config);
    const r = convert.extractRequest(request);
    return this.#reading(c, 'extract', r);
  }

  /** extractor.tool-definition: the `lro_extract` tool as `tools/list` lists it, JSON text. */
  async toolDefinition() {
    return this.#call('toolDefinition', [], { dir: null, readOnly: true, limits: 'io' });
  }

  /**
   * extractor.call-tool: runs `lro_extract` from a `tools/call` request's `arguments` (an object
   * or JSON text, passed through unchecked: the component checks them against the tool's schema).
   * Like `extract`: read-only directory, filter limits.
   */
  async callTool(config, args) {
    const c = convert.config(config);
    return this.#reading(c, 'callTool', convert.args.arguments(args));
  }

  /** extractor.query: a jq filter over JSON text; no files. */
  async query(filter, input, { slurp = false, raw = false, limit = null } = {}) {
    const a = convert.args;
    const call = [a.filter(filter), a.input(input), a.flag(slurp, 'slurp'), a.flag(raw, 'raw'), a.limit(limit)];
    return this.#call('query', call, { dir: null, readOnly: true, limits: 'filter' });
  }

  /** interceptor.recipes: the ten recipes for a detail level, `file` in their shell commands. */
  async recipes(config, detail, file = null) {
    // The dir in the config is checked by the component but never opened: no preopen.
    const c = convert.config(config);
    const call = [c, convert.args.detail(detail), convert.args.file(file)];
    return this.#call('recipes', call, { dir: null, readOnly: true, limits: 'io' });
  }

  /** interceptor.estimate: the component's token estimate of a text. */
  async estimate(text) {
    return this.#call('estimate', [convert.args.text(text)], { dir: null, readOnly: true, limits: 'io' });
  }

  /** Stops the worker; a call still running fails with kind `host`; later calls start a new one. */
  close() {
    this.#fail(new LroError('host', 'the call was stopped: Lro.close() was called while it ran'));
  }

  /**
   * offload and intercept: an unusable directory never fails the call. Nothing is preopened, the
   * reason goes to the component as `dir_problem`, and it degrades the result and emits
   * `offload-write-failed`, as for any failed write.
   */
  async #writing(config, fn, args, created) {
    let cfg, how;
    try {
      const { dir, writable } = prepareDir(config.dir, true);
      cfg = { ...config, dir };
      how = { dir, readOnly: !writable, limits: 'io' };
    } catch (e) {
      if (!(e instanceof LroError)) throw e;
      // The component checks that dir is absolute before it degrades; "" has no absolute form.
      cfg = { ...config, dir: config.dir === '' ? '/' : resolve(config.dir), dirProblem: e.message };
      how = { dir: null, readOnly: true, limits: 'io' };
    }
    const out = await this.#call(fn, args(cfg), how);
    ownerOnly(created(out));
    return out;
  }

  /** extract and callTool: the directory must be usable (else a `directory` error), read-only. */
  async #reading(config, fn, request) {
    const { dir } = prepareDir(config.dir, false);
    return this.#call(fn, [{ ...config, dir }, request], { dir, readOnly: true, limits: 'filter' });
  }

  /** Runs one call in the worker; calls queue so that each gets the worker to itself. */
  #call(fn, args, how) {
    const run = this.#queue.then(() => this.#run(fn, args, how));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #run(fn, args, { dir, readOnly, limits }) {
    const worker = await this.#ensureWorker();
    const o = this.#options;
    const filter = limits === 'filter';
    const timeout = filter ? o.filterTimeout : o.timeout;
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      // The deadline starts here, with the worker ready: starting a thread and loading the
      // bindings (100 ms or more on a busy machine) must not eat into a 1 s filter deadline,
      // or the call after a timeout could time out for no fault of its own.
      const timer = setTimeout(() => {
        // The only way to stop wasm running in V8: end the thread. The next call starts a new one.
        this.#fail(new LroError('timeout', `limit exceeded: the call ran longer than its ${duration(timeout)} time limit and was stopped`));
      }, timeout);
      this.#pending = { id, resolve, reject, timer };
      worker.ref();
      worker.postMessage({ id, fn, args, dir, readOnly, memory: limits, memoryLimit: filter ? o.filterMemory : o.memory });
    });
  }

  /** The worker, started if need be; resolves once it has loaded its modules. */
  async #ensureWorker() {
    if (this.#worker) {
      await this.#ready;
      return this.#worker;
    }
    const o = this.#options;
    const modules = await compile(this.#gen, o);
    const worker = new Worker(join(here, 'worker.js'), {
      workerData: { gen: this.#gen, modules },
      execArgv: workerExecArgv(),
      // Caps the JS heap of the thread (results, events); wasm memory is capped by capMemory.
      resourceLimits: { maxOldGenerationSizeMb: Math.max(256, Math.ceil(o.memory / MiB)) },
    });
    this.#worker = worker;
    this.#ready = new Promise((resolve, reject) => {
      worker.once('message', (m) => (m?.ready ? resolve() : reject(new LroError('host', 'the worker did not start'))));
      // Until it is ready, failing to start is a load error (e.g. gen/ holds broken bindings).
      worker.once('error', (e) => reject(new LroError('load', `the worker could not start: ${e?.message ?? e}`)));
      worker.once('exit', (code) => reject(new LroError('load', `the worker exited while starting (code ${code})`)));
    });
    try {
      await this.#ready;
    } catch (e) {
      if (this.#worker === worker) this.#worker = null;
      worker.terminate();
      throw e;
    }
    worker.on('message', (m) => this.#message(worker, m));
    worker.on('error', (e) => {
      if (worker !== this.#worker) return;
      const memory = e?.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.#fail(new LroError(memory ? 'memory-limit' : 'host',
        memory ? 'limit exceeded: the call ran out of JavaScript heap and was stopped' : `the worker failed: ${e?.message ?? e}`));
    });
    worker.on('exit', (code) => {
      if (worker === this.#worker) this.#fail(new LroError('host', `the worker exited (code ${code})`));
    });
    worker.unref();
    return worker;
  }

  #message(worker, m) {
    const p = this.#pending;
    if (worker !== this.#worker || !p || m.id !== p.id) return;
    if ('event' in m) {
      const onEvent = this.#options.onEvent;
      if (onEvent) {
        try {
          onEvent(m.event);
        } catch (e) {
          // A throwing callback must not lose the call's result; report it once, on stderr.
          console.error('lro: onEvent threw:', e);
        }
      }
      return;
    }
    this.#settle();
    if ('error' in m) p.reject(new LroError(m.error.kind, m.error.message));
    else p.resolve(m.result);
  }

  #settle() {
    const p = this.#pending;
    if (!p) return;
    clearTimeout(p.timer);
    this.#pending = null;
    this.#worker?.unref();
  }

  /** Ends the pending call (if any) with `error` and discards the worker, which may still be running. */
  #fail(error) {
    const p = this.#pending;
    this.#settle();
    const worker = this.#worker;
    this.#worker = null;
    this.#ready = null;
    if (worker) worker.terminate();
    if (p) p.reject(error);
  }
}

/** The JSON-form config defaults, for callers that want to show or merge them. */
export const CONFIG_DEFAULTS = convert.CONFIG_DEFAULTS;
