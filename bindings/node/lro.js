// Node binding of the lro WebAssembly component: the host duties of docs/HOSTS.md around each
// call (one preopen at its own path, read-only rules, no state between calls, limits, private
// files, events), with arguments and results in the JSON form of that page. Types: gen/lro.d.ts.
//
//   import { Lro } from 'lro-wasm';          // this file, as the package `lro-wasm` exports it
//   const lro = new Lro({ onEvent: (e) => console.error(e) });
//   const out = await lro.offload({ output_dir: '/tmp/lro-demo', threshold_tokens: 500 }, { operation: 'recall', records });
//   lro.close();
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { LroError, shapesOf } from './convert.js';
import { absoluteDir, defaultOutputDir, ownerOnly, prepareDir } from './directory.js';
import { openGuest } from './guest.js';

export { LroError, defaultOutputDir };

const here = dirname(fileURLToPath(import.meta.url));
const MiB = 2 ** 20;
const PAGE = 64 * 1024;

/** Defaults of the Rust host (host/src/options.rs, `Options`). */
/**
 * The error of a call that close() stopped (kind `host`). `closed` is true on it, so that a
 * caller such as withLro's sweeper can tell it from a failure worth reporting.
 */
function closedError() {
  const error = new LroError('host', 'the call was stopped: Lro.close() was called while it ran');
  error.closed = true;
  return error;
}

export const DEFAULTS = Object.freeze({
  timeout: 10_000, // ms: every call but the filter calls, when they run in the worker (a `timeout` given, or large arguments)
  filterTimeout: 1_000, // ms: the filter calls (extract, callTool, query), which run user filters
  memory: 2048 * MiB, // bytes of linear memory: every call but the filter calls
  filterMemory: 512 * MiB, // bytes of linear memory: the filter calls
});

/**
 * The methods of `Lro`: the component function each calls, what it does with the offload
 * directory, and which limits apply. `dir`: `write` creates it 0700 when missing and degrades
 * when it is unusable (read-only when its mode has no write bit); `sweep` needs it usable, and
 * read-write likewise; `read` needs it usable and mounts it read-only; `none` preopens nothing.
 * `limits`: `filter` for the calls that run user filters. `kinds`: the error kind of a bad
 * argument other than the config (default `invalid-input`). `absent`: the value of an argument
 * not given. `options`: trailing arguments taken from an options object. `created`: the files
 * a result names, narrowed to 0600. scripts/dts.js declares the methods from this and the WIT.
 */
export const METHODS = Object.freeze({
  offload: { fn: 'interceptor/offload', dir: 'write', created: (out) => (out.kind === 'offloaded' ? [out.path] : []) },
  intercept: { fn: 'interceptor/intercept', dir: 'write', created: (out) => (out.kind === 'offloaded' ? out.files : []) },
  rewriteTools: { fn: 'interceptor/rewrite-tools', dir: 'none' },
  recipes: { fn: 'interceptor/recipes', dir: 'none' },
  estimate: { fn: 'interceptor/estimate', dir: 'none' },
  extract: { fn: 'extractor/extract', dir: 'read', limits: 'filter', kinds: { request: 'invalid-request' } },
  toolDefinition: { fn: 'extractor/tool-definition', dir: 'none' },
  // A tools/call request without `arguments` means none were given: an empty object.
  callTool: { fn: 'extractor/call-tool', dir: 'read', limits: 'filter', absent: { arguments: '{}' } },
  query: { fn: 'extractor/query', dir: 'none', limits: 'filter', kinds: { filter: 'invalid-filter' }, options: ['slurp', 'raw', 'limit'] },
  sweep: { fn: 'custodian/sweep', dir: 'sweep' },
  // Under the standard deadline: a caller's tiny timeout must not fail every call's defaults.
  defaults: { fn: 'configuration/defaults', dir: 'none', deadline: 'standard' },
  // The base config is layered as given: its output_dir stays as the caller wrote it.
  load: { fn: 'configuration/load', dir: 'none', deadline: 'standard', configAsGiven: true },
});

/**
 * Sets the maximum of the core module's memory (a memory section entry `flags min [max]`), so
 * that memory.grow past it fails inside the guest: V8 has no other per-instance memory cap.
 * Returns null for a module that defines no memory.
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
  return null; // no memory of its own: nothing to cap
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

/**
 * The most text (UTF-16 units, over all the arguments) a call without user filters takes on the
 * calling thread. A larger one runs in the worker, under the standard deadline: its instance's
 * memory (several times its text) would make this thread's garbage collector mark the caller's
 * whole heap again and again (50,000 records, 38 MB: a third more CPU than in the worker), and the
 * thread stays free meanwhile. 500 records are 0.4 MB.
 */
const HERE_MAX_TEXT = 2 ** 20;

/**
 * Instances kept for the calls on this thread, one per preopen (directory and read-only flag),
 * the least recently used closed first. Instantiating costs far more than a small call (1-1.5
 * ms against 0.05-0.07 ms for a tiny offload), and the component keeps nothing from one call to
 * the next that could change a result (docs/HOSTS.md, step 2). Their memory stays small: calls
 * with larger arguments than HERE_MAX_TEXT, and calls that run user filters, go to the worker,
 * which gives each a fresh instance.
 */
const KEPT = 4;

/** Whether the strings in `value` (arrays and objects walked) add up to more than `max` units. */
function holdsMoreText(value, max) {
  let total = 0;
  const walk = (v) => {
    if (typeof v === 'string') total += v.length;
    else if (v !== null && typeof v === 'object') {
      for (const item of Array.isArray(v) ? v : Object.values(v)) {
        walk(item);
        if (total > max) return;
      }
    }
  };
  walk(value);
  return total > max;
}

let compiled = null;
const glues = new Map(); // gen → promise of its component.js, for the calls on this thread

/** gen/'s component.js, imported once per directory. */
function loadGlue(gen) {
  let glue = glues.get(gen);
  if (!glue) {
    glue = import(pathToFileURL(join(gen, 'component.js')).href).catch((e) => {
      glues.delete(gen);
      throw new LroError('load', `${gen}/component.js could not be loaded: ${e?.message ?? e}`);
    });
    glues.set(gen, glue);
  }
  return glue;
}

/** Compiles the transpiled core modules once per process, in two memory-capped variants. */
function compile(gen, limits) {
  const key = `${gen}:${limits.memory}:${limits.filterMemory}`;
  if (compiled?.key !== key) {
    // The promise is kept at once: calls made together share one compilation.
    const modules = compileModules(gen, limits);
    compiled = { key, modules };
    modules.catch(() => { if (compiled?.modules === modules) compiled = null; });
  }
  return compiled.modules;
}

async function compileModules(gen, limits) {
  if (!existsSync(join(gen, 'component.js'))) {
    throw new LroError('load', `${gen} holds no transpiled component: run \`npm run build\` in ${here} (it transpiles $LRO_WASM, or the component cargo builds from the repository)`);
  }
  const names = readdirSync(gen).filter((n) => /^component\.core\d*\.wasm$/.test(n));
  const bytes = Object.fromEntries(names.map((n) => [n, readFileSync(join(gen, n))]));
  const variant = async (cap) => Object.fromEntries(await Promise.all(names.map(async (n) => [n,
    await WebAssembly.compile(capMemory(bytes[n], cap) ?? bytes[n])])));
  return { io: await variant(limits.memory), filter: await variant(limits.filterMemory) };
}

export class Lro {
  #options;
  #gen;
  #defaults = null; // promise of the component's configuration.defaults, JSON form
  #worker = null; // a started worker, or null
  #ready = null; // promise of #worker's first message: it has loaded its modules
  #pending = null; // the call in the worker: {id, resolve, reject, timer}
  #queue = Promise.resolve();
  #nextId = 1;
  #closes = 0; // how many times close() was called: a worker call made before the last one fails
  #kept = new Map(); // preopen key → an instance for the calls on this thread (KEPT)

  /**
   * options: onEvent(event) receives every event, in order, before the call that emitted it
   * returns; timeout / filterTimeout in ms; memory / filterMemory in bytes; gen: the directory
   * of the transpiled component (default: gen/ next to this file).
   */
  constructor(options = {}) {
    this.#options = { ...DEFAULTS, onEvent: null, ...options };
    this.#gen = this.#options.gen ?? join(here, 'gen');
    // Without a timeout of the caller's, the calls that run no user filter run on this thread
    // (unless their arguments are large: HERE_MAX_TEXT): their work is bounded by their input,
    // and nothing on this thread could stop them anyway.
    this.#here = options.timeout === undefined;
  }

  #here;

  /** interceptor.offload: a result set inline, offloaded to a file, or degraded. */
  async offload(config, request) {
    return this.#invoke('offload', [config, request]);
  }

  /** interceptor.intercept: what to forward for any tool's CallToolResult. */
  async intercept(config, call) {
    return this.#invoke('intercept', [config, call]);
  }

  /**
   * interceptor.rewrite-tools: a `tools/list` result's `tools` array (JSON text or value) for a
   * server whose results go through `intercept`; returns JSON text.
   */
  async rewriteTools(config, tools) {
    return this.#invoke('rewriteTools', [config, tools]);
  }

  /** custodian.sweep: deletes expired files; `now` in ms since the epoch. */
  async sweep(config, now) {
    return this.#invoke('sweep', [config, now]);
  }

  /** extractor.extract: a recipe or jq filter over an offloaded file; the directory is read-only. */
  async extract(config, request) {
    return this.#invoke('extract', [config, request]);
  }

  /** extractor.tool-definition: the `lro_extract` tool as `tools/list` lists it, JSON text. */
  async toolDefinition() {
    return this.#invoke('toolDefinition', []);
  }

  /**
   * extractor.call-tool: runs `lro_extract` from a `tools/call` request's `arguments` (an object
   * or JSON text, passed through unchecked: the component checks them against the tool's schema;
   * none given means `{}`). Like `extract`: read-only directory, filter limits.
   */
  async callTool(config, args) {
    return this.#invoke('callTool', [config, args]);
  }

  /** extractor.query: a jq filter over JSON text, options `{slurp, raw, limit}`; no files. */
  async query(filter, input, options = {}) {
    return this.#invoke('query', [filter, input, ...METHODS.query.options.map((k) => options?.[k])]);
  }

  /** interceptor.recipes: the ten recipes for a detail level, `file` in their shell commands. */
  async recipes(config, detail, file = null) {
    return this.#invoke('recipes', [config, detail, file]);
  }

  /** interceptor.estimate: the component's token estimate of a text. */
  async estimate(text) {
    return this.#invoke('estimate', [text]);
  }

  /**
   * configuration.defaults: every config field's default in the JSON form (`output_dir` is "":
   * the default directory, which `defaultOutputDir()` names). Asked of the component once.
   */
  async defaults() {
    return structuredClone(await this.#askDefaults());
  }

  /**
   * configuration.load: `base` (a config over the defaults) with the `layers` a host gathered
   * (`{file, environment, settings, arguments}`, docs/HOSTS.md) applied by the component; the
   * whole config. `loadConfig` of `lro-wasm/mcp` gathers them as the `lro` command does.
   */
  async load(base, layers) {
    return this.#invoke('load', [base, layers]);
  }

  /** The promise of the defaults, asked once; read, never changed, by each call's config. */
  #askDefaults() {
    if (!this.#defaults) {
      const asked = this.#invoke('defaults', []);
      this.#defaults = asked;
      asked.catch(() => { if (this.#defaults === asked) this.#defaults = null; });
    }
    return this.#defaults;
  }

  /**
   * Stops the worker (a call still running there fails with kind `host`; later calls start a
   * new one) and drops the instances kept for calls on this thread.
   */
  close() {
    for (const guest of this.#kept.values()) guest.close();
    this.#kept.clear();
    this.#closes++;
    this.#fail(closedError());
  }

  /**
   * Calls one method of METHODS: arguments checked and converted (the config over the
   * component's defaults), the directory prepared as the method needs it, the files the call
   * created narrowed to 0600.
   */
  async #invoke(name, values) {
    const method = METHODS[name];
    const shapes = shapesOf(this.#gen);
    const { params } = shapes.fn(method.fn);
    const given = params.map((p, i) => (values[i] === undefined ? method.absent?.[p.name] : values[i]));
    const at = params.findIndex((p) => p.type.ref === shapes.configType);
    const config = at === -1 ? null : shapes.config(given[at], await this.#askDefaults());
    const args = shapes.args(method.fn, given, method.kinds, config);
    const limits = method.limits ?? 'io';
    let how = { dir: null, readOnly: true, limits, deadline: method.deadline };
    if (config && method.configAsGiven) {
      args[at] = config;
    } else if (config && method.dir === 'none') {
      // The directory is checked by the component but never opened: no preopen.
      args[at] = { ...config, outputDir: absoluteDir(config.outputDir) };
    } else if (config && method.dir === 'write') {
      // An unusable directory never fails offload or intercept. Nothing is preopened, the
      // reason goes to the component as `dir_problem`, and it degrades the result and emits
      // `offload-write-failed`, as for any failed write.
      try {
        const { dir, writable } = prepareDir(config.outputDir, true);
        args[at] = { ...config, outputDir: dir };
        how = { dir, readOnly: !writable, limits };
      } catch (e) {
        if (!(e instanceof LroError)) throw e;
        args[at] = { ...config, outputDir: absoluteDir(config.outputDir), dirProblem: e.message };
      }
    } else if (config) {
      // read and sweep: the directory must be usable, else a `directory` error.
      const { dir, writable } = prepareDir(config.outputDir, false);
      args[at] = { ...config, outputDir: dir };
      how = { dir, readOnly: method.dir === 'read' || !writable, limits };
    }
    const out = this.#here && limits !== 'filter' && !holdsMoreText(args, HERE_MAX_TEXT)
      ? await this.#runHere(method.fn, args, how)
      : await this.#call(method.fn, args, how);
    if (method.created) ownerOnly(method.created(out));
    return out;
  }

  /**
   * Runs one call on this thread, in the instance kept for its preopen (made now from the
   * modules compiled once per process if there is none, or if the last call in it trapped),
   * with imports of its own (wasi.js): the host's process, stdout and globals are untouched.
   * Its events reach onEvent once the call has returned, before its result.
   */
  async #runHere(fn, args, { dir, readOnly }) {
    const [modules, glue] = await Promise.all([compile(this.#gen, this.#options), loadGlue(this.#gen)]);
    // From here to the end the call runs synchronously: no other call can take the instance.
    const key = `${readOnly ? 'r' : 'w'}${dir ?? ''}`;
    const guest = this.#kept.get(key) ?? openGuest({ glue, shapes: shapesOf(this.#gen), modules: modules.io, dir, readOnly });
    this.#kept.delete(key);
    const events = [];
    const out = guest.call(fn, args, (event) => events.push(event), this.#options.memory);
    if (guest.broken) {
      guest.close();
    } else {
      this.#kept.set(key, guest); // the most recently used last
      for (const [old, oldest] of this.#kept) {
        if (this.#kept.size <= KEPT) break;
        oldest.close();
        this.#kept.delete(old);
      }
    }
    for (const event of events) this.#deliver(event);
    if (out.error) throw new LroError(out.error.kind, out.error.message);
    return out.result;
  }

  /** Gives an event to onEvent; a throwing callback must not lose the call's result. */
  #deliver(event) {
    const onEvent = this.#options.onEvent;
    if (!onEvent) return;
    try {
      onEvent(event);
    } catch (e) {
      console.error('lro: onEvent threw:', e);
    }
  }

  /**
   * Runs one call in the worker; calls queue so that each gets the worker to itself. A call made
   * before close() fails as close() says wherever it is: queued, waiting for the modules or the
   * worker's start, or running.
   */
  #call(fn, args, how) {
    const closes = this.#closes;
    const run = this.#queue.then(() => this.#run(fn, args, how, closes));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #run(fn, args, { dir, readOnly, limits, deadline }, closes) {
    if (this.#closes !== closes) throw closedError();
    const worker = await this.#ensureWorker(closes);
    if (this.#closes !== closes) throw closedError();
    const o = this.#options;
    const filter = limits === 'filter';
    const timeout = deadline === 'standard' ? DEFAULTS.timeout : filter ? o.filterTimeout : o.timeout;
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      // The deadline starts here, with the worker ready: starting a thread and loading the
      // bindings (100 ms or more on a busy machine) must not eat into a 1 s filter deadline,
      // or the call after a timeout could time out for no fault of its own.
      const timer = setTimeout(() => {
        // The only way to stop wasm running in V8: end the thread. The next call starts a new one.
        const option = filter ? 'filterTimeout (extract, callTool, query)' : 'timeout';
        this.#fail(new LroError('timeout', `limit exceeded: the call ran longer than its ${duration(timeout)} time limit and was stopped; raise it with the ${option} option of new Lro(), in ms`));
      }, timeout);
      this.#pending = { id, resolve, reject, timer };
      worker.ref();
      worker.postMessage({ id, fn, args, dir, readOnly, memory: limits, memoryLimit: filter ? o.filterMemory : o.memory });
    });
  }

  /**
   * The worker, started if need be; resolves once it has loaded its modules. `closes`: the
   * count of close() calls when the call was made (none started for a call close() stopped).
   */
  async #ensureWorker(closes) {
    if (this.#worker) {
      await this.#ready;
      return this.#worker;
    }
    const o = this.#options;
    const modules = await compile(this.#gen, o);
    if (this.#closes !== closes) throw closedError();
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
      // A worker discarded while starting was stopped by close(): the call fails as close() says.
      worker.once('exit', (code) => reject(this.#worker === worker
        ? new LroError('load', `the worker exited while starting (code ${code})`)
        : closedError()));
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
        memory ? 'limit exceeded: the call ran out of JavaScript heap and was stopped; raise it with the memory option of new Lro() (the heap is the larger of 256 MiB and it)' : `the worker failed: ${e?.message ?? e}`));
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
      this.#deliver(m.event);
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
