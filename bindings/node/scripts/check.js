// Proves that the type table read from wit/ is the component's own: the interfaces it imports
// and exports (as the component's WIT lists them, through jco's componentWit), and every
// function, record, variant and enum as jco's declarations of the component spell them
// (gen/interfaces/*.d.ts). A WIT folder that drifted from the component fails the build here.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { componentWit } from '@bytecodealliance/jco';
import { camel } from '../convert.js';

const pascal = (name) => name.split('-').map((w) => w[0].toUpperCase() + w.slice(1)).join('');
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Compares the world of the table with the component's imports and exports. */
async function checkWorld(table, wasm, problems) {
  const wit = await componentWit(readFileSync(wasm));
  const [pkg, version] = table.package.split('@');
  const listed = (keyword) => [...wit.matchAll(new RegExp(`^\\s*${keyword}\\s+${escape(pkg)}/([a-z0-9-]+)(@[^;]+)?;`, 'gm'))]
    .map((m) => ({ name: m[1], version: m[2]?.slice(1) }));
  const exported = listed('export');
  const imported = listed('import');
  for (const e of [...exported, ...imported]) {
    if (version && e.version !== version) problems.push(`the component uses ${pkg}/${e.name}@${e.version}, the WIT is @${version}`);
  }
  const names = (list) => list.map((e) => e.name).sort().join(', ');
  if (names(exported) !== [...table.world.exports].sort().join(', ')) {
    problems.push(`the component exports ${names(exported)}; the WIT's world exports ${[...table.world.exports].sort().join(', ')}`);
  }
  for (const name of table.world.imports) {
    if (!imported.some((e) => e.name === name)) problems.push(`the component does not import ${pkg}/${name}, which the WIT's world does`);
  }
}

/** The member lines of `export interface NAME { ... }` in `text`, or null. */
function interfaceBlock(text, name) {
  const m = new RegExp(`^export interface ${name} \\{\\n([\\s\\S]*?)^\\}`, 'm').exec(text);
  return m ? m[1].split('\n').filter((l) => l.trim()) : null;
}

/** Compares every type and function of the table with jco's declarations of the component. */
function checkDeclarations(table, gen, problems) {
  const prefix = table.package.split('@')[0].replace(':', '-');
  const files = {};
  const text = (iface) => {
    if (!(iface in files)) {
      const path = join(gen, 'interfaces', `${prefix}-${iface}.d.ts`);
      files[iface] = existsSync(path) ? readFileSync(path, 'utf8') : null;
      if (files[iface] === null) problems.push(`jco declared no interface ${iface} (${path})`);
    }
    return files[iface];
  };
  for (const [ref, def] of Object.entries(table.types)) {
    const [iface, name] = ref.split('/');
    const src = text(iface);
    if (src === null) continue;
    const ts = pascal(name);
    if (def.kind === 'record') {
      const lines = interfaceBlock(src, ts);
      // Compared in WIT spelling: jco's `thresholdTokens?` is `threshold-tokens?` (an option).
      const got = lines?.map((l) => l.trim().replace(/^'?([A-Za-z0-9_$]+)'?(\?)?:.*$/, '$1$2').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`));
      const want = def.fields.map((f) => `${f.name}${f.type.option ? '?' : ''}`);
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        problems.push(`record ${ref}: the WIT has fields ${want.join(', ')}; the component ${got ? got.join(', ') : 'has no such record'}`);
      }
    } else if (def.kind === 'enum') {
      const m = new RegExp(`^export type ${ts} = (.*);$`, 'm').exec(src);
      const got = m ? [...m[1].matchAll(/'([^']*)'/g)].map((x) => x[1]) : null;
      const want = def.cases.map((c) => c.name);
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        problems.push(`enum ${ref}: the WIT has ${want.join(', ')}; the component ${got ? got.join(', ') : 'has no such enum'}`);
      }
    } else if (def.kind === 'variant') {
      for (const c of def.cases) {
        const lines = interfaceBlock(src, `${ts}${pascal(c.name)}`);
        const ok = lines && lines[0]?.trim() === `tag: '${c.name}',` && (lines.length === 2) === Boolean(c.type);
        if (!ok) problems.push(`variant ${ref}: the component has no case ${c.name}${c.type ? ' with a payload' : ''}`);
      }
    } else if (!new RegExp(`^export type ${ts} = `, 'm').test(src)) {
      problems.push(`type ${ref}: the component has no such type`);
    }
  }
  for (const [key, fn] of Object.entries(table.functions)) {
    const [iface, name] = key.split('/');
    const src = text(iface);
    if (src === null) continue;
    const m = new RegExp(`^export function ${camel(name)}\\((.*)\\):`, 'm').exec(src);
    const got = m ? [...m[1].matchAll(/(?:^|, )([A-Za-z0-9_$]+):/g)].map((x) => x[1].replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)) : null;
    const want = fn.params.map((p) => p.name);
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      problems.push(`function ${iface}.${name}: the WIT takes (${want.join(', ')}); the component ${got ? `takes (${got.join(', ')})` : 'has no such function'}`);
    }
  }
}

/** Throws, listing every difference, unless the table describes the component of `wasm`. */
export async function checkTable(table, wasm, gen) {
  const problems = [];
  await checkWorld(table, wasm, problems);
  checkDeclarations(table, gen, problems);
  if (problems.length) {
    throw new Error(`the WIT does not describe ${wasm}:\n  ${problems.join('\n  ')}\n`
      + 'Build the component from this WIT (`lro component -o ...`), or point LRO_WASM at one that was.');
  }
}
