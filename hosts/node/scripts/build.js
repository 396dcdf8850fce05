// Transpiles the component named by $LRO_WASM into gen/ with jco (async instantiation, so each
// call can instantiate a fresh instance with its own imports), and records which file it came
// from so that the tests can refuse a stale gen/.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const wasm = process.env.LRO_WASM;
if (!wasm) {
  console.error('LRO_WASM is not set: point it at the component, e.g. LRO_WASM=/tmp/lro.wasm '
    + '(made by `lro component -o /tmp/lro.wasm`)');
  process.exit(1);
}
if (!existsSync(wasm)) {
  console.error(`LRO_WASM=${wasm}: no such file (make it with \`lro component -o ${wasm}\`)`);
  process.exit(1);
}
const gen = join(here, 'gen');
rmSync(gen, { recursive: true, force: true });
const jco = join(here, 'node_modules', '.bin', 'jco');
if (!existsSync(jco)) {
  // Not `npm ci`: the lock file lacks jco's optional platform packages, so `npm ci` refuses it.
  console.error('jco is not installed: run `npm install` in hosts/node first');
  process.exit(1);
}
const run = spawnSync(jco, [
  'transpile', wasm, '-o', gen, '--name', 'lro', '--instantiation', 'async', '--no-typescript', '--quiet',
], { stdio: 'inherit' });
if (run.status !== 0) {
  console.error(`jco transpile ${wasm} failed (exit ${run.status ?? run.signal})`);
  process.exit(1);
}
const sha256 = createHash('sha256').update(readFileSync(wasm)).digest('hex');
writeFileSync(join(gen, 'source.json'), JSON.stringify({ wasm: resolve(wasm), sha256 }, null, 2) + '\n');
console.error(`gen/ transpiled from ${wasm} (sha256 ${sha256.slice(0, 12)})`);
