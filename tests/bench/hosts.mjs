// The Node host's figures for `lro bench --only hosts` (cli/src/bench/hosts.rs), which runs this
// file and asks it for rounds of measurements: the same calls the Rust host is measured with, on
// the same sample files, through the `lro-wasm` package (bindings/node, transpiled from the
// component under test by its `npm run build`) as a Node MCP server would make them, beside the
// offloader a Node author would otherwise write by hand.
//
//   node tests/bench/hosts.mjs SAMPLES_DIR OUTPUT_DIR
//
// SAMPLES_DIR holds `tiny.json` and `records-N.json` (a JSON array of records each); every
// offload writes into OUTPUT_DIR, emptied between calls outside the timing. Each line read from
// standard input, `{"reps_small": S, "reps_large": L}`, runs one round (every call S times, or L
// times for more than 500 records, the tiny call 10 × S times) and prints one line of JSON: the
// round's medians in seconds. The script ends at the end of its input.
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Lro } from '../../bindings/node/lro.js';

const THRESHOLD_TOKENS = 1600;

const median = (samples) => samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)];

function empty(dir) {
  for (const name of readdirSync(dir)) rmSync(join(dir, name));
}

/** A hand-written offloader: one JSON line per record, written when the result's estimated
 * tokens (4 characters a token) pass the threshold, and a small descriptor. */
function handwritten(records, dir) {
  const lines = records.map((record) => JSON.stringify(record));
  const chars = lines.reduce((sum, line) => sum + line.length, 0);
  if (Math.floor(chars / 4) <= THRESHOLD_TOKENS) return { inline: `[${lines.join(',')}]` };
  const path = join(dir, `hand-${randomUUID()}.jsonl`);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return { file_path: path, count: records.length, tokens: Math.floor(chars / 4) };
}

async function timed(reps, dir, call) {
  const samples = [];
  for (let i = 0; i < reps; i++) {
    const start = performance.now();
    await call();
    samples.push((performance.now() - start) / 1e3);
    empty(dir);
  }
  return median(samples);
}

// GEN: the binding's gen/ that `lro bench` built for this run.
const [samples, out, gen] = process.argv.slice(2);
const lro = new Lro({ gen });
try {
  const config = { output_dir: out, threshold_tokens: THRESHOLD_TOKENS };
  const tiny = JSON.parse(readFileSync(join(samples, 'tiny.json'), 'utf8'));
  const request = { operation: 'recall', query: 'caching', detail: 'full', records: tiny };
  if ((await lro.offload(config, request)).kind !== 'inline') throw new Error('the tiny call was not answered inline');
  const sizes = [];
  const names = readdirSync(samples).filter((name) => name.startsWith('records-')).sort();
  for (const name of names) {
    const n = Number(name.slice('records-'.length, -'.json'.length));
    const text = readFileSync(join(samples, name), 'utf8');
    const records = JSON.parse(text);
    const asText = { operation: 'recall', query: 'caching', detail: 'full', records: text };
    const asObjects = { ...asText, records };
    for (const req of [asText, asObjects]) {
      if ((await lro.offload(config, req)).kind !== 'offloaded') throw new Error(`${n} records were not offloaded`);
      empty(out);
    }
    sizes.push({ n, records, asText, asObjects });
  }

  for await (const line of createInterface({ input: process.stdin })) {
    const { reps_small: small, reps_large: large } = JSON.parse(line);
    const figures = { host: 'node', offload: {} };
    figures.tiny = await timed(small * 10, out, () => lro.offload(config, request));
    for (const { n, records, asText, asObjects } of sizes) {
      const count = n <= 500 ? small : large;
      figures.offload[String(n)] = {
        text: await timed(count, out, () => lro.offload(config, asText)),
        objects: await timed(count, out, () => lro.offload(config, asObjects)),
        handwritten: await timed(count, out, () => handwritten(records, out)),
      };
    }
    console.log(JSON.stringify(figures));
  }
} finally {
  lro.close();
}
