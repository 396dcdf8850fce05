// Runs component calls for lro.js, one at a time, each in a fresh instance with its own
// preopen. It lives in a worker_thread so that the main thread can stop a runaway filter with
// worker.terminate(): jco and the preview2-shim offer no fuel, epoch or memory limit.
//
// Messages in:  {id, fn, args, dir, readOnly, memory, memoryLimit}    (fn: "interceptor/offload";
//               args already in jco's JS form)
// Messages out: {ready: true} once, when the modules are loaded; then per call
//               {id, event} ... then {id, result} or {id, error: {kind, message}}, events and
//               results in the JSON form (convert.js, by the type table of gen/)
import { parentPort, workerData } from 'node:worker_threads';
import process from 'node:process';
import { pathToFileURL } from 'node:url';
import * as cli from '@bytecodealliance/preview2-shim/cli';
import * as clocks from '@bytecodealliance/preview2-shim/clocks';
import * as filesystem from '@bytecodealliance/preview2-shim/filesystem';
import * as io from '@bytecodealliance/preview2-shim/io';
import * as random from '@bytecodealliance/preview2-shim/random';
import { camel, LroError, shapesOf } from './convert.js';

const { gen, modules } = workerData;
// The bindings of the same gen/ the core modules were compiled from (the `gen` option of Lro).
const { instantiate } = await import(pathToFileURL(`${gen}/component.js`).href);
const shapes = shapesOf(gen);
const eventType = shapes.fn('events/emit').params[0].type;

// Without JSPI (Node 20), jco's glue calls WebAssembly.promising six times per instantiation in
// a try/catch and keeps the plain function. Each failed call costs ~5 ms, because V8 re-parses
// the 12,000-line generator to word its "is not a function" message: 30 of the 36 ms an
// instantiation took. The identity function gives jco exactly what its catch branch keeps.
if (typeof WebAssembly.promising !== 'function') WebAssembly.promising = (f) => f;

// Guest stdout must never reach the host's stdout (an MCP server speaks JSON-RPC there), and
// guest stderr (a panic message) belongs in the error of the call that trapped. The shim writes
// both through this thread's process.stdout/stderr, so those are redirected here.
let guestStderr = '';
process.stdout.write = () => true;
process.stderr.write = (chunk) => {
  if (guestStderr.length < 64 * 1024) guestStderr += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
  return true;
};

// Read-only preopens. The shim has none, so the write paths of its Descriptor are wrapped to
// fail with `not-permitted`, the error wasmtime gives for a read-only preopen (FsPerms::ReadOnly;
// the guest then reports "Operation not permitted (os error 63)"). Only one call runs in this
// thread at a time, so the flag of the current call applies to every descriptor that exists.
let readOnly = false;
const { Descriptor } = filesystem.types;
const refuseWhenReadOnly = (name, isWrite = () => true) => {
  const original = Descriptor.prototype[name];
  Descriptor.prototype[name] = function (...args) {
    if (readOnly && isWrite(...args)) throw 'not-permitted';
    return original.apply(this, args);
  };
};
for (const name of ['write', 'writeViaStream', 'appendViaStream', 'setSize', 'setTimes', 'setTimesAt',
  'createDirectoryAt', 'removeDirectoryAt', 'renameAt', 'unlinkFileAt', 'symlinkAt', 'linkAt']) {
  refuseWhenReadOnly(name);
}
const openAt = Descriptor.prototype.openAt;
Descriptor.prototype.openAt = function (pathFlags, path, openFlags, flags) {
  // wasmtime refuses create, exclusive, truncate and write on a read-only preopen.
  if (readOnly && (openFlags.create || openFlags.exclusive || openFlags.truncate || flags.write)) {
    throw 'not-permitted';
  }
  // Shim bug (preview2-shim 0.26): its openAt throws `unsupported` when the mutateDirectory
  // flag is set, and wasi-libc sets it on every directory open, so the guest's File::create
  // fails with "Not supported (os error 58)". wasmtime ignores the flag; so do we.
  return openAt.call(this, pathFlags, path, openFlags, { ...flags, mutateDirectory: false });
};

class GuestExit extends Error {}

function imports(dir, emit) {
  const entries = dir ? [[filesystem._createPreopenDescriptor(dir), dir]] : [];
  return {
    // jco reads the import without its version: `lro:component/events`.
    [`${shapes.table.package.split('@')[0]}/events`]: { emit },
    // Like wasmtime's WasiCtxBuilder::new(): no environment, no arguments, no stdin.
    'wasi:cli/environment': { getEnvironment: () => [], getArguments: () => [], initialCwd: () => undefined },
    'wasi:cli/exit': {
      exit: (status) => { throw new GuestExit(`the component exited (${status.tag})`); },
    },
    'wasi:cli/stdin': { getStdin: () => { throw new Error('the component read stdin, which it has not got'); } },
    'wasi:cli/stdout': cli.stdout,
    'wasi:cli/stderr': cli.stderr,
    'wasi:cli/terminal-input': cli.terminalInput,
    'wasi:cli/terminal-output': cli.terminalOutput,
    'wasi:cli/terminal-stdin': cli.terminalStdin,
    'wasi:cli/terminal-stdout': cli.terminalStdout,
    'wasi:cli/terminal-stderr': cli.terminalStderr,
    'wasi:clocks/monotonic-clock': clocks.monotonicClock,
    'wasi:clocks/wall-clock': clocks.wallClock,
    'wasi:filesystem/preopens': { getDirectories: () => entries },
    'wasi:filesystem/types': filesystem.types,
    'wasi:io/error': io.error,
    'wasi:io/poll': io.poll,
    'wasi:io/streams': io.streams,
    'wasi:random/insecure-seed': random.insecureSeed,
    'wasi:random/random': random.random,
  };
}

/**
 * Checks once that the instance exports every function of the type table's world, so that a
 * gen/ whose WIT and component disagree fails with a clear load error, not a TypeError.
 */
let checked = false;
function checkExports(lro) {
  if (checked) return;
  for (const key of Object.keys(shapes.table.functions)) {
    const [iface, name] = key.split('/');
    if (!shapes.table.world.exports.includes(iface)) continue;
    if (typeof lro[camel(iface)]?.[camel(name)] !== 'function') {
      throw new LroError('load', `the component exports no ${iface}.${name}, which its WIT declares: rebuild gen/ from matching WIT and component`);
    }
  }
  checked = true;
}

async function call({ id, fn, args, dir, readOnly: ro, memory, memoryLimit }) {
  readOnly = ro;
  guestStderr = '';
  let linear = null;
  const emit = (event) => parentPort.postMessage({ id, event: shapes.output(eventType, event) });
  try {
    const lro = await instantiate(
      (name) => modules[memory][name],
      imports(dir, emit),
      async (module, imports) => {
        const instance = await WebAssembly.instantiate(module, imports);
        if (instance.exports.memory instanceof WebAssembly.Memory) linear = instance.exports.memory;
        return instance;
      },
    );
    checkExports(lro);
    const [iface, name] = fn.split('/');
    const result = await lro[camel(iface)][camel(name)](...args);
    parentPort.postMessage({ id, result: shapes.result(fn, result) });
  } catch (error) {
    parentPort.postMessage({ id, error: describe(error, linear, memoryLimit) });
  } finally {
    readOnly = false;
  }
}

// Turns what the component threw into {kind, message}: its WIT error, or a trap named after the
// limit that caused it where that can be told.
function describe(error, linear, memoryLimit) {
  if (error instanceof LroError) return { kind: error.kind, message: error.message };
  const payload = error?.payload;
  if (payload && typeof payload.tag === 'string') return { kind: payload.tag, message: String(payload.val) };
  // The guest's panic text, without Rust's hint about RUST_BACKTRACE (it has no environment).
  const said = guestStderr.split('\n').filter((l) => !l.startsWith('note: run with `RUST_BACKTRACE')).join('\n').trim();
  const text = `${error?.message ?? error}`;
  // A refused memory.grow makes the guest's allocator fail: Rust prints this and aborts.
  if (/memory allocation of \d+ bytes failed/.test(said)) {
    const limit = Math.round(memoryLimit / 2 ** 20);
    const used = linear ? `; ${Math.round(linear.buffer.byteLength / 2 ** 20)} MiB were in use` : '';
    return { kind: 'memory-limit', message: `limit exceeded: the call needed more than its ${limit} MiB memory limit and was stopped (${said}${used})` };
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

// Calls arrive one at a time (lro.js waits for each result), but chain them anyway so that a
// second message can never run while the first awaits.
let queue = Promise.resolve();
parentPort.on('message', (message) => { queue = queue.then(() => call(message)); });
// lro.js starts a call's deadline only after this, so starting the thread does not count.
parentPort.postMessage({ ready: true });
