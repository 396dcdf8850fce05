// Component calls, from instantiation to a result in the JSON form or an error {kind,
// message}: shared by the calls lro.js makes on the calling thread and those worker.js makes in
// its thread. An instance is made from the compiled core modules with imports of its own
// (wasi.js). worker.js gives every call a fresh one (callGuest); lro.js keeps one per preopen
// for the calls that run no user filter (openGuest), and drops it after a trap.
import { camel, LroError } from './convert.js';
import { sandbox } from './wasi.js';

class GuestExit extends Error {}

/** The exports of the type table's world, checked once per type table. */
const checked = new WeakSet();
/**
 * Checks once that the instance exports every function of the type table's world, so that a
 * gen/ whose WIT and component disagree fails with a clear load error, not a TypeError.
 */
function checkExports(shapes, lro) {
  if (checked.has(shapes)) return;
  for (const key of Object.keys(shapes.table.functions)) {
    const [iface, name] = key.split('/');
    if (!shapes.table.world.exports.includes(iface)) continue;
    if (typeof lro[camel(iface)]?.[camel(name)] !== 'function') {
      throw new LroError('load', `the component exports no ${iface}.${name}, which its WIT declares: rebuild gen/ from matching WIT and component`);
    }
  }
  checked.add(shapes);
}

/**
 * Runs `fn` ("interceptor/offload", args in jco's form) in a fresh instance, then drops it.
 * The arguments are those of openGuest and of a guest's call. Never throws.
 */
export function callGuest({ glue, shapes, modules, fn, args, dir, readOnly, emit, memoryLimit }) {
  const guest = openGuest({ glue, shapes, modules, dir, readOnly });
  try {
    return guest.call(fn, args, emit, memoryLimit);
  } finally {
    guest.close();
  }
}

/**
 * An instance of the component for calls one after another. glue: gen/'s component.js (its
 * `instantiate`); modules: the compiled core modules by file name; dir and readOnly: the
 * preopen. Its `call(fn, args, emit, memoryLimit)` runs `fn` ("interceptor/offload", args in
 * jco's form); emit(event) gets each event, in the JSON form, as the guest emits it;
 * memoryLimit: the cap the modules were compiled with, for the message of a refused
 * allocation. A call returns {result} or {error: {kind, message}} and never throws; what it
 * left open (files, directory streams) is closed when it returns. `broken` is true once the
 * instance failed to start or a call trapped: it must not be called again. `close()` closes
 * what the preopen holds.
 *
 * The component keeps no state from one call to the next that could change a result, so
 * calls in one instance answer as calls in fresh ones do (docs/HOSTS.md, step 2).
 */
export function openGuest({ glue, shapes, modules, dir, readOnly }) {
  const wasi = sandbox({ dir, readOnly });
  const eventType = shapes.fn('events/emit').params[0].type;
  let linear = null;
  let emit = null; // the running call's
  let lro = null;
  let failure = null;
  try {
    const imports = {
      ...wasi.imports,
      // jco reads the import without its version: `lro:component/events`.
      [`${shapes.table.package.split('@')[0]}/events`]: { emit: (event) => emit?.(shapes.output(eventType, event)) },
      // Like wasmtime's WasiCtxBuilder::new(): no environment, no arguments, no stdin.
      'wasi:cli/environment': { getEnvironment: () => [], getArguments: () => [], initialCwd: () => undefined },
      'wasi:cli/exit': {
        exit: (status) => { throw new GuestExit(`the component exited (${status.tag})`); },
      },
      'wasi:cli/stdin': { getStdin: () => { throw new Error('the component read stdin, which it has not got'); } },
    };
    lro = glue.instantiate((name) => modules[name], imports, (module, moduleImports) => {
      const instance = new WebAssembly.Instance(module, moduleImports);
      if (instance.exports.memory instanceof WebAssembly.Memory) linear = instance.exports.memory;
      return instance;
    });
    checkExports(shapes, lro);
  } catch (error) {
    failure = error;
  }
  return {
    broken: failure !== null,
    call(fn, args, onEvent, memoryLimit) {
      try {
        if (failure) throw failure;
        emit = onEvent;
        const [iface, name] = fn.split('/');
        const result = lro[camel(iface)][camel(name)](...args);
        return { result: shapes.result(fn, result) };
      } catch (error) {
        // A WIT error is a result like any other; anything else may have stopped the guest
        // halfway, so its instance is not entered again.
        if (!(error instanceof LroError || typeof error?.payload?.tag === 'string')) {
          failure ??= error;
          this.broken = true;
        }
        return { error: describe(error, linear, memoryLimit, wasi.stderr(), args) };
      } finally {
        emit = null;
        wasi.endCall();
      }
    },
    close() {
      wasi.close();
    },
  };
}

/** The UTF-8 size of every string in `value` (the call's arguments, as jco lowers them). */
function utf8Bytes(value) {
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (value === null || typeof value !== 'object') return 0;
  let sum = 0;
  for (const item of Array.isArray(value) ? value : Object.values(value)) sum += utf8Bytes(item);
  return sum;
}

/**
 * Turns what the component threw into {kind, message}: its WIT error, or a trap named after the
 * limit that caused it where that can be told. stderr: what the guest wrote there.
 */
/** How to raise the memory limit, for its message. */
const RAISE_MEMORY = 'raise it with the filterMemory (extract, callTool, query) or memory (the other calls) option of new Lro(), in bytes';

function describe(error, linear, memoryLimit, stderr, args) {
  if (error instanceof LroError) return { kind: error.kind, message: error.message };
  const payload = error?.payload;
  if (payload && typeof payload.tag === 'string') return { kind: payload.tag, message: String(payload.val) };
  // The guest's panic text, without Rust's hint about RUST_BACKTRACE (it has no environment).
  const said = stderr.split('\n').filter((l) => !l.startsWith('note: run with `RUST_BACKTRACE')).join('\n').trim();
  const text = `${error?.message ?? error}`;
  // A refused memory.grow makes the guest's allocator fail: Rust prints this and aborts.
  if (/memory allocation of \d+ bytes failed/.test(said)) {
    const limit = Math.round(memoryLimit / 2 ** 20);
    const used = linear ? `; ${Math.round(linear.buffer.byteLength / 2 ** 20)} MiB were in use` : '';
    return { kind: 'memory-limit', message: `limit exceeded: the call needed more than its ${limit} MiB memory limit and was stopped (${said}${used}); ${RAISE_MEMORY}` };
  }
  // The arguments are copied into the guest through wasi-libc's `cabi_realloc`, which traps
  // without a word when memory.grow is refused: if they cannot fit beside the memory in use
  // under the cap, that was the cause.
  if (linear && !said && error instanceof WebAssembly.RuntimeError && /unreachable/.test(text)) {
    const inUse = linear.buffer.byteLength;
    const needed = utf8Bytes(args);
    if (inUse + needed > memoryLimit) {
      const mib = (n) => Math.round(n / 2 ** 20 * 10) / 10;
      return { kind: 'memory-limit', message: `limit exceeded: the call needed more than its ${Math.round(memoryLimit / 2 ** 20)} MiB memory limit and was stopped (its arguments, ${mib(needed)} MiB, did not fit beside the ${mib(inUse)} MiB in use); ${RAISE_MEMORY}` };
    }
  }
  // The guest is safe Rust: an out-of-bounds access is its shadow stack (placed first in linear
  // memory) overflowing below address 0, which the Rust and Python hosts also report this way.
  if ((error instanceof RangeError && /call stack/i.test(text))
    || (error instanceof WebAssembly.RuntimeError && /out of bounds memory access/.test(text))) {
    return { kind: 'stack-overflow', message: 'limit exceeded: the call stack overflowed (endless recursion, or nesting too deep) and the call was stopped' };
  }
  if (error instanceof WebAssembly.RuntimeError || error instanceof GuestExit) {
    return { kind: 'trap', message: `the component trapped: ${text}${said ? `; the component said: ${said}` : ''}` };
  }
  return { kind: 'host', message: `the host failed: ${text}` };
}
