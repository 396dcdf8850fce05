// Checks that `npm install` left a package's lockfile as committed, for every package it
// installed here: `node .ci/same-lock.mjs COMMITTED_LOCK PACKAGE_DIR`. Entries for optional
// packages that are not installed on this machine (another platform's builds of jco and its
// bindings) are left out on both sides: whether npm records them depends on whether the
// registry serves them, which changes without any change here. Exits 1 naming what differs.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [committedPath, dir] = process.argv.slice(2);
const read = (path) => JSON.parse(readFileSync(path, 'utf8')).packages ?? {};
const committed = read(committedPath);
const installed = read(join(dir, 'package-lock.json'));
const kept = (packages) => Object.fromEntries(
  Object.entries(packages).filter(([path, entry]) => !(entry.optional && path && !existsSync(join(dir, path)))),
);
const [before, after] = [kept(committed), kept(installed)];
const differ = [...new Set([...Object.keys(before), ...Object.keys(after)])]
  .filter((path) => JSON.stringify(before[path]) !== JSON.stringify(after[path]));
if (differ.length > 0) {
  console.error(`${dir}/package-lock.json: npm install changed ${differ.length === 1 ? "an entry" : `${differ.length} entries`}: ${differ.slice(0, 10).join(', ')}`);
  process.exit(1);
}
