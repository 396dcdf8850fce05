// Runs component calls for lro.js, one at a time, each in a fresh instance with its own
// imports (guest.js, wasi.js). It lives in a worker_thread so that the main thread can stop a
// runaway filter with worker.terminate(): jco offers no fuel, epoch or memory limit. lro.js
// sends it the calls that run user filters (and every call when a `timeout` is given).
//
// Messages in:  {id, fn, args, dir, readOnly, memory, memoryLimit}    (fn: "interceptor/offload";
//               args already in jco's JS form)
// Messages out: {ready: true} once, when the modules are loaded; then per call
//               {id, event} ... then {id, result} or {id, error: {kind, message}}, events and
//               results in the JSON form (convert.js, by the type table of gen/)
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { shapesOf } from './convert.js';
import { callGuest } from './guest.js';

const { gen, modules } = workerData;
// The bindings of the same gen/ the core modules were compiled from (the `gen` option of Lro).
const glue = await import(pathToFileURL(`${gen}/component.js`).href);
const shapes = shapesOf(gen);

// A call runs synchronously from its message to its result: one at a time.
parentPort.on('message', ({ id, fn, args, dir, readOnly, memory, memoryLimit }) => {
  const emit = (event) => parentPort.postMessage({ id, event });
  parentPort.postMessage({ id, ...callGuest({ glue, shapes, modules: modules[memory], fn, args, dir, readOnly, emit, memoryLimit }) });
});
// lro.js starts a call's deadline only after this, so starting the thread does not count.
parentPort.postMessage({ ready: true });
