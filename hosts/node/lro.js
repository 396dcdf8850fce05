// Node host for the lro WebAssembly component: the host duties of docs/HOSTS.md around each
// call (one preopen at its own path, read-only rules, a fresh instance, limits, private files,
// events), with arguments and results in the JSON form of that page.
//
//   import { Lro } from './lro.js';
//   const lro = new Lro({ onEvent: (e) => console.error(e) });
//   const out = await lro.offload({ dir: '/tmp/lro-demo', threshold: 500 }, { operation: 'recall', records });
//   lro.close();
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import * as convert from './convert.js';
import { LroError } from './convert.js';

export { LroError };

const here = dirname(fileURLToPath(import.meta.url));
const MiB = 2 ** 20;
const PAGE = 64 * 1024;

/** Defaults of the Rust host (host/src/lib.rs, `Options`). */
export const DEFAULTS = Object.freeze({
  timeout: 10_000, // ms, offload, intercept, sweep, recipes, estimate
  filterTimeout: 1_000, // ms, extract and query: they run user filters
  memory: 2048 * MiB, // bytes of linear memory
  filterMemory: 512 * MiB,
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

/**
 * Makes config.dir an existing, canonical directory (docs/HOSTS.md, host duty 1). Returns the
 * path and whether its mode has no write bit at all (then it is preopened read-only, even for
 * root). `create`: make it 0700 when missing (offload and intercept, as the Rust host does).
 */
function prepareDir(dir, create) {
  const fail = (message) => new LroError('directory', `offload directory ${dir}: ${message}`);
  if (typeof dir !== 'string' || dir === '') throw fail('no offload directory given');
  const absolute = resolve(dir);
  if (create && !existsSync(absolute)) {
    try {
      mkdirSync(absolute, { recursive: true, mode: 0o700 });
    } catch (e) {
      throw fail(`cannot create it: ${e.message}`);
    }
  }
  let canonical, stat;
  try {
    canonical = realpathSync(absolute);
    stat = statSync(canonical);
  } catch (e) {
    throw fail(e.code === 'ENOENT' ? 'No such file or directory' : e.message);
  }
  if (!stat.isDirectory()) throw fail('not a directory');
  return { dir: canonical, writable: (stat.mode & 0o222) !== 0 };
}

/** WASI cannot set modes: a file the call created is narrowed to 0600 (host duty 4). */
function ownerOnly(paths) {
  for (const path of paths) {
    try {
      chmodSync(path, 0o600);
    } catch {
      // Gone already (swept, or never written): nothing to protect.
    }
  }
}

export class Lro {
  #options;
  #gen;
  #worker = null;
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
    return this.#withDir(c, 'offload', true, false, (cfg) => [cfg, r], (out) =>
      (out.kind === 'offloaded' ? [out.path] : []));
  }

  /** interceptor.intercept: what to forward for any tool's CallToolResult. */
  async intercept(config, call) {
    const c = convert.config(config);
    const t = convert.toolCall(call);
    return this.#withDir(c, 'intercept', true, false, (cfg) => [cfg, t], (out) =>
      (out.kind === 'offloaded' ? out.files : []));
  }

  /** custodian.sweep: deletes expired files; `now` in ms since the epoch. */
  async sweep(config, now) {
    const c = convert.config(config);
    const n = convert.args.now(now);
    return this.#withDir(c, 'sweep', false, false, (cfg) => [cfg, n], () => []);
  }

  /** extractor.extract: a recipe or jq filter over an offloaded file; the directory is read-only. */
  async extract(config, request) {
    const c = convert.config(config);
    const r = convert.extractRequest(request);
    return this.#withDir(c, 'extract', false, true, (cfg) => [cfg, r], () => []);
  }

  /** extractor.query: a jq filter over JSON text; no files. */
  async query(filter, input, { slurp = false, raw = false, limit = null } = {}) {
    const a = convert.args;
    const call = [a.filter(filter), a.input(input), a.flag(slurp, 'slurp'), a.flag(raw, 'raw'), a.limit(limit)];
    return this.#call('query', call, { dir: null, readOnly: true, filter: true });
  }

  /** interceptor.recipes: the ten recipes for a detail level, `file` in their shell commands. */
  async recipes(config, detail, file = null) {
    // The dir in the config is checked by the component but never opened: no preopen.
    const c = convert.config(config);
    const call = [c, convert.args.detail(detail), convert.args.file(file)];
    return this.#call('recipes', call, { dir: null, readOnly: true, filter: false });
  }

  /** interceptor.estimate: the component's token estimate of a text. */
  async estimate(text) {
    return this.#call('estimate', [convert.args.text(text)], { dir: null, readOnly: true, filter: false });
  }

  /** Stops the worker; later calls start a new one. */
  close() {
    const worker = this.#worker;
    this.#worker = null;
    if (worker) worker.terminate();
  }

  async #withDir(config, fn, create, alwaysReadOnly, args, created) {
    const { dir, writable } = prepareDir(config.dir, create);
    const cfg = { ...config, dir };
    const out = await this.#call(fn, args(cfg), { dir, readOnly: alwaysReadOnly || !writable, filter: fn === 'extract' });
    ownerOnly(created(out));
    return out;
  }

  /** Runs one call in the worker; calls queue so that each gets the worker to itself. */
  #call(fn, args, how) {
    const run = this.#queue.then(() => this.#run(fn, args, how));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #run(fn, args, { dir, readOnly, filter }) {
    const worker = await this.#ensureWorker();
    const o = this.#options;
    const timeout = filter ? o.filterTimeout : o.timeout;
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      const timer = setTimeout(() => {
        // The only way to stop wasm running in V8: end the thread. The next call starts a new one.
        this.#fail(new LroError('timeout', `limit exceeded: the call ran longer than its ${duration(timeout)} time limit and was stopped`));
      }, timeout);
      this.#pending = { id, resolve, reject, timer };
      worker.ref();
      worker.postMessage({ id, fn, args, dir, readOnly, memory: filter ? 'filter' : 'io', memoryLimit: filter ? o.filterMemory : o.memory });
    });
  }

  async #ensureWorker() {
    if (this.#worker) return this.#worker;
    const o = this.#options;
    const modules = await compile(this.#gen, o);
    const worker = new Worker(join(here, 'worker.js'), {
      workerData: { modules },
      // Caps the JS heap of the thread (results, events); wasm memory is capped by capMemory.
      resourceLimits: { maxOldGenerationSizeMb: Math.max(256, Math.ceil(o.memory / MiB)) },
    });
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
    this.#worker = worker;
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

  /** Ends the pending call with `error` and discards the worker, which may still be running. */
  #fail(error) {
    const p = this.#pending;
    this.#settle();
    const worker = this.#worker;
    this.#worker = null;
    if (worker) worker.terminate();
    if (p) p.reject(error);
  }
}

/** The JSON-form config defaults, for callers that want to show or merge them. */
export const CONFIG_DEFAULTS = convert.CONFIG_DEFAULTS;
