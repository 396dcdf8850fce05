// Shared by the tests: the component must be the one $LRO_WASM names, transpiled into gen/.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HOST = dirname(dirname(fileURLToPath(import.meta.url)));
export const REPO = join(HOST, '..', '..');
export const CASES = join(REPO, 'tests', 'cases');

/** Fails (never skips) unless $LRO_WASM names a file and gen/ was transpiled from it. */
export function requireComponent() {
  const wasm = process.env.LRO_WASM;
  assert.ok(wasm, 'LRO_WASM is not set: run the tests as `LRO_WASM=/path/to/lro.wasm npm test`');
  assert.ok(existsSync(wasm), `LRO_WASM=${wasm}: no such file`);
  const source = join(HOST, 'gen', 'source.json');
  assert.ok(existsSync(source), 'gen/ is missing: `npm test` builds it (or run `npm run build`)');
  const sha256 = createHash('sha256').update(readFileSync(wasm)).digest('hex');
  const built = JSON.parse(readFileSync(source, 'utf8'));
  assert.equal(built.sha256, sha256, `gen/ was transpiled from another build of ${built.wasm}: run \`npm run build\``);
}

/**
 * Every `lro_extract(name=VALUE, ...)` in a text, as the arguments object it spells: each VALUE is
 * JSON (`file_path="..."`, `recipe=2`, `params={"namespace": "_semantic"}`, `slurp=true`).
 */
export function guidanceCalls(text) {
  const calls = [];
  const open = 'lro_extract(';
  for (let at = text.indexOf(open); at !== -1; at = text.indexOf(open, at)) {
    let i = at + open.length;
    const args = {};
    for (;;) {
      const name = /^\s*([a-z_]+)=/.exec(text.slice(i));
      assert.ok(name, `no argument name at ${JSON.stringify(text.slice(i, i + 40))}`);
      i += name[0].length;
      const start = i;
      // A JSON value ends at the first `,` or `)` outside strings, objects and arrays.
      let depth = 0;
      let inString = false;
      for (; i < text.length; i++) {
        const c = text[i];
        if (inString) {
          if (c === '\\') i++;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === '{' || c === '[') depth++;
        else if (c === '}' || c === ']') depth--;
        else if (depth === 0 && (c === ',' || c === ')')) break;
      }
      args[name[1]] = JSON.parse(text.slice(start, i));
      if (text[i++] === ')') break;
    }
    calls.push(args);
    at = i;
  }
  return calls;
}
