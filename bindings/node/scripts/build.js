// Builds gen/ (or the directory given as its argument) from the component: $LRO_WASM when set, else the guest built from this repository
// with cargo (scripts/component.js). Run by `npm run build` and by `prepack`, so that `npm pack`
// makes a complete package from a fresh clone.
//   gen/component.js, gen/component.d.ts, gen/interfaces/*.d.ts, gen/component.core*.wasm
//                       jco's transpilation (sync instantiation from modules lro.js compiles
//                       once, so that each call instantiates a fresh instance with its own
//                       imports) and its declarations; component.js with the few textual
//                       changes of scripts/glue.js, which make a call cheaper
//   gen/types.json      the type table convert.js walks, read from ../../wit and checked
//                       against the component (scripts/check.js)
//   gen/lro.d.ts        the declarations of lro.js in the JSON form (package.json `types`), with
//                       the defaults the component's `configuration.defaults` gives
//   gen/source.json     which component gen/ came from, so that the tests can refuse a stale gen/
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ComponentError, findComponent } from './component.js';
import { patchGlue } from './glue.js';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const wit = join(here, '..', '..', 'wit');

function fail(message) {
  console.error(message);
  process.exit(1);
}

const jco = join(here, 'node_modules', '.bin', 'jco');
if (!existsSync(jco)) {
  // Not `npm ci`: the lock file lacks jco's optional platform packages, so `npm ci` refuses it.
  fail('jco is not installed: run `npm install` in bindings/node first');
}

let wasm;
try {
  wasm = findComponent(join(here, '..', '..'));
} catch (e) {
  if (e instanceof ComponentError) fail(e.message);
  throw e;
}

// `node scripts/build.js DIR` builds into DIR instead: `lro bench` builds its own, so that it never
// replaces the gen/ that a running `npm test` reads.
const gen = process.argv[2] ? resolve(process.argv[2]) : join(here, 'gen');
rmSync(gen, { recursive: true, force: true });
const run = spawnSync(jco, ['transpile', wasm, '-o', gen, '--name', 'component', '--instantiation', 'sync', '--quiet'],
  { stdio: 'inherit' });
if (run.status !== 0) fail(`jco transpile ${wasm} failed (exit ${run.status ?? run.signal})`);
try {
  const glue = join(gen, 'component.js');
  writeFileSync(glue, patchGlue(readFileSync(glue, 'utf8')));
} catch (e) {
  fail(`${join(gen, 'component.js')}: ${e.message}`);
}

// Imported only now: they need jco, and lro.js reads what is written below.
const { readWit } = await import('./wit.js');
const { checkTable } = await import('./check.js');
const { declarations } = await import('./dts.js');

let table;
try {
  table = readWit(wit);
  await checkTable(table, wasm, gen);
} catch (e) {
  fail(`${wit}: ${e.message}`);
}
writeFileSync(join(gen, 'types.json'), `${JSON.stringify(table, null, 1)}\n`);

const { Lro, METHODS } = await import('../lro.js');
const lro = new Lro({ gen });
let defaults;
try {
  defaults = await lro.defaults();
} catch (e) {
  fail(`configuration.defaults failed: ${e.kind}: ${e.message}`);
} finally {
  lro.close();
}
writeFileSync(join(gen, 'lro.d.ts'), declarations({ table, methods: METHODS, defaults }));

const sha256 = createHash('sha256').update(readFileSync(wasm)).digest('hex');
// The component's file name only: gen/ goes into the package, and a path would publish the
// machine it was built on. The digest is what the tests check.
writeFileSync(join(gen, 'source.json'), `${JSON.stringify({ wasm: basename(wasm), sha256 }, null, 2)}\n`);
console.error(`${gen} built from ${wasm} (sha256 ${sha256.slice(0, 12)}) and ${wit}`);
