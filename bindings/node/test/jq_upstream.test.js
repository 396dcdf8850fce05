// jq's own test files through the Node host's `query`, judged against the same skip list as the
// Rust host (tests/cases/jq/upstream-skips.txt; the parser mirrors core/tests/upstream/mod.rs,
// which says how cases are judged). The component is the same, so the verdicts must be the same.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { Lro, LroError } from '../lro.js';
import { CASES, REPO, requireComponent } from './support.js';

requireComponent();

const FILES = ['jq-1.6.test', 'jq.test', 'man.test', 'onig.test'];
const JQ_TESTS = process.env.LRO_JQ_TESTS || join(REPO, '..', 'shared', 'jq-tests');

const skipLine = (line) => {
  const t = line.replace(/^[ \t]+/, '');
  return t === '' || t.startsWith('#');
};

function parse(file, text) {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const cases = [];
  let i = 0;
  let mustFail = false;
  while (i < lines.length) {
    const line = lines[i++];
    if (skipLine(line)) continue;
    if (line === '%%FAIL' || line === '%%FAIL IGNORE MSG') {
      mustFail = true;
      continue;
    }
    const c = { id: `${file}:${i}`, program: line, mustFail, input: '', expected: [] };
    if (!mustFail) c.input = lines[i++] ?? '';
    while (i < lines.length && !skipLine(lines[i])) c.expected.push(lines[i++]);
    cases.push(c);
    mustFail = false;
  }
  return cases;
}

/** jq's jv_equal: numbers as doubles (1e1000 is the largest double). */
function same(a, b) {
  const clamp = (x) => (Number.isFinite(x) ? x : Math.sign(x) * Number.MAX_VALUE);
  if (typeof a === 'number' && typeof b === 'number') return clamp(a) === clamp(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && same(a[k], b[k]));
  }
  return a === b;
}

async function run(lro, program, input) {
  try {
    return { kind: 'outputs', values: (await lro.query(program, input)).values, error: null };
  } catch (e) {
    if (!(e instanceof LroError)) throw e;
    if (e.kind === 'invalid-filter') return { kind: 'compile', message: e.message };
    if (e.kind !== 'filter-failed') return { kind: 'input', message: `${e.kind}: ${e.message}` };
    const wrapped = `def lro_case_: ${program}; try lro_case_ catch {"lro-upstream-error": .}`;
    let values = [];
    try {
      values = (await lro.query(wrapped, input)).values;
    } catch {
      // the outputs before the error are none
    }
    return { kind: 'outputs', values: values.filter((v) => !v.startsWith('{"lro-upstream-error":')), error: e.message };
  }
}

function judge(c, ran) {
  if (c.mustFail) return ran.kind === 'compile' ? null : `compiled, but jq refuses it: ${JSON.stringify(ran)}`;
  if (ran.kind !== 'outputs') return JSON.stringify(ran);
  const out = ran.values;
  for (const [n, expected] of c.expected.entries()) {
    let want;
    try {
      want = JSON.parse(expected);
    } catch {
      return `expected output ${expected} is not JSON`;
    }
    if (n >= out.length) return `${out.length} outputs ${JSON.stringify(out)}, then ${ran.error}`;
    if (!same(want, JSON.parse(out[n]))) return `got ${JSON.stringify(out)}, expected ${JSON.stringify(c.expected)}`;
  }
  return out.length > c.expected.length ? `superfluous outputs: ${JSON.stringify(out)}` : null;
}

const lro = new Lro();
after(() => lro.close());

it('jq upstream cases pass in the Node host except the skip list', async () => {
  const cases = FILES.flatMap((f) => parse(f, readFileSync(join(JQ_TESTS, f), 'utf8')));
  assert.ok(cases.length > 1000, `only ${cases.length} cases in ${JQ_TESTS}`);
  const listed = new Map();
  for (const line of readFileSync(join(CASES, 'jq', 'upstream-skips.txt'), 'utf8').split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const [id, reason, , program] = line.split('\t');
    listed.set(id, { reason, program });
  }
  const failures = [];
  for (const c of cases) {
    const verdict = judge(c, await run(lro, c.program, c.input));
    const skip = listed.get(c.id);
    if (!skip && verdict) failures.push(`${c.id} \`${c.program}\`: ${verdict}`);
    // V8's wasm stack is deeper than wasmtime's: here a `stack` case may pass (a host
    // difference the skip list names; the Rust and Python hosts stop it at their limit).
    else if (skip && !verdict && skip.reason === 'stack') continue;
    else if (skip && !verdict) failures.push(`${c.id} \`${c.program}\`: passes, but the skip list says ${skip.reason}`);
    else if (skip && skip.program !== c.program) failures.push(`${c.id}: the skip list names \`${skip.program}\``);
  }
  assert.deepEqual(failures, [], `${failures.length} cases disagree with the skip list`);
});
