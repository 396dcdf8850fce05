// The npm package as a user gets it: `npm pack` (its prepack building gen/ from $LRO_WASM in a
// tree that has none), the tarball installed into a fresh project with no Rust toolchain on PATH,
// and the README's own server run from it over stdio and driven by the SDK's Client: lro_extract
// listed, the outputSchema of an offloadable tool dropped, a large result offloaded into a file
// holding exactly what the tool returned, the guidance's example call answered as printed, a
// small result unchanged, an expired file swept by the periodic sweep. It prints the tarball's
// size and the time from `npm install` to the first offloaded result. Also: how the build finds
// its component (scripts/component.js), with a stand-in cargo.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, delimiter, dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ComponentError, findComponent } from '../scripts/component.js';
import { guidanceCalls, HOST, REPO, requireComponent } from './support.js';

requireComponent();

const work = mkdtempSync(join(tmpdir(), 'lro-package-test-'));
after(() => rmSync(work, { recursive: true, force: true }));
const pkg = JSON.parse(readFileSync(join(HOST, 'package.json'), 'utf8'));

/** PATH without the directories that hold a Rust toolchain (cargo, rustc, rustup). */
function pathWithoutRust() {
  const rust = (dir) => ['cargo', 'rustc', 'rustup'].some((tool) => existsSync(join(dir, tool)));
  const kept = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir && !rust(dir));
  for (const tool of ['node', 'npm']) {
    assert.ok(kept.some((dir) => existsSync(join(dir, tool))), `${tool} shares its directory with a Rust toolchain: cannot take Rust off PATH`);
  }
  return kept.join(delimiter);
}

/**
 * The environment for a command of the fresh project: `npm test` hands its scripts variables that
 * describe this package (npm_package_*, the lifecycle, its prefixes), which must not reach another
 * project's npm. The user's npm settings (registry, cache, userconfig) stay.
 */
function cleanEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_(package|lifecycle)_|^npm_config_(local_prefix|prefix|global_prefix)$|^INIT_CWD$/i.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function run(command, args, options) {
  const out = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20, ...options });
  const shown = `${command} ${args.join(' ')} (in ${options.cwd})`;
  assert.equal(out.error, undefined, `${shown}: ${out.error?.message}`);
  assert.equal(out.status, 0, `${shown} failed (exit ${out.status ?? out.signal}):\n${out.stderr}\n${out.stdout}`);
  return out;
}

/** The README's first ```js block: the three-line server. */
function readmeServer() {
  const readme = readFileSync(join(HOST, 'README.md'), 'utf8');
  const block = /```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, 'README.md has no ```js block');
  return block[1];
}

/** A Client of the SDK on `node server` in `cwd`, stderr collected. */
async function connect(cwd, script, env) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [script], cwd, env, stderr: 'pipe' });
  let stderr = '';
  transport.stderr.on('data', (chunk) => { stderr += chunk; });
  const client = new Client({ name: 'lro-package-test', version: '0.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

const textOf = (result) => {
  assert.equal(result.content?.length, 1, JSON.stringify(result).slice(0, 400));
  return result.content[0].text;
};

describe('the npm package lro-wasm', () => {
  const tree = join(work, 'repo');
  const dist = join(work, 'dist');
  let tarball;

  before(() => {
    // The package's sources as a fresh clone has them: no gen/, no tarball; node_modules is the
    // one `npm install` made here (jco, for the build). wit/ sits where the build reads it.
    const copy = join(tree, 'bindings', 'node');
    cpSync(HOST, copy, {
      recursive: true,
      filter: (src) => dirname(src) !== HOST || !/^(node_modules|gen)$|\.tgz$/.test(basename(src)),
    });
    symlinkSync(join(HOST, 'node_modules'), join(copy, 'node_modules'));
    cpSync(join(REPO, 'wit'), join(tree, 'wit'), { recursive: true });
    assert.ok(!existsSync(join(copy, 'gen')), 'the copy must start without gen/');
    mkdirSync(dist);
    const packed = run('npm', ['pack', '--json', '--pack-destination', dist], { cwd: copy, env: cleanEnv() });
    const files = readdirSync(dist).filter((f) => f.endsWith('.tgz'));
    assert.equal(files.length, 1, `npm pack wrote ${files.join(', ') || 'no tarball'}:\n${packed.stdout}`);
    tarball = join(dist, files[0]);
  });

  it('npm pack builds the component into a complete tarball, named and versioned as the project', () => {
    assert.equal(basename(tarball), `lro-wasm-${pkg.version}.tgz`);
    const cargo = readFileSync(join(REPO, 'Cargo.toml'), 'utf8');
    const version = /\[workspace\.package\][^[]*?\nversion = "([^"]+)"/.exec(cargo)?.[1];
    assert.equal(pkg.version, version, 'one version across the crates and the packages');
    const listed = run('tar', ['-tzf', tarball], { cwd: work }).stdout.trim().split('\n').map((f) => f.replace(/^package\//, ''));
    for (const file of ['package.json', 'README.md', 'lro.js', 'convert.js', 'directory.js', 'guest.js', 'wasi.js', 'worker.js', 'config.js', 'mcp.js',
      'mcp.d.ts', 'gen/component.js', 'gen/component.d.ts', 'gen/component.core.wasm', 'gen/types.json', 'gen/lro.d.ts']) {
      assert.ok(listed.includes(file), `the tarball lacks ${file}`);
    }
    assert.ok(listed.some((f) => /^gen\/interfaces\/.*\.d\.ts$/.test(f)), 'the tarball lacks jco\'s interface declarations');
    const stray = listed.filter((f) => /^(test|scripts|examples|node_modules)\/|\.tgz$/.test(f));
    assert.deepEqual(stray, [], 'nothing but the package itself');
    // Nothing of the builder's machine: no path of the checkout, the copy it was packed from, the
    // component it was built from, or cargo's home (host/build.rs remaps it in the component's
    // panic locations), in any file (a registry would publish them).
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    run('tar', ['-xzf', tarball, '-C', unpacked], { cwd: work });
    const machine = [REPO, tree, dirname(process.env.LRO_WASM), process.env.CARGO_HOME ?? join(homedir(), '.cargo')].map((p) => resolve(p));
    for (const file of listed) {
      const bytes = readFileSync(join(unpacked, 'package', file));
      for (const path of machine) {
        assert.ok(!bytes.includes(path), `${file} names ${path}, a path of the machine that packed it`);
      }
    }
    const bytes = statSync(tarball).size;
    console.log(`package: ${basename(tarball)} is ${(bytes / 1024).toFixed(0)} KiB (${bytes} bytes), ${listed.length} files`);
  });

  it('installed with no Rust on PATH, the README\'s server adds lro in at most three lines and works end to end', { timeout: 600_000 }, async () => {
    const app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: 'lro-readme-server', private: true, type: 'module' }, null, 2)}\n`);
    const PATH = pathWithoutRust();
    const probe = spawnSync('cargo', ['--version'], { env: { PATH } });
    assert.equal(probe.error?.code, 'ENOENT', 'cargo is still on the stripped PATH');

    // The server as the README prints it; the lines marked `// lro` are all it takes.
    const server = readmeServer();
    const code = server.split('\n');
    const marked = code.filter((l) => l.trimEnd().endsWith('// lro'));
    assert.ok(marked.length >= 1 && marked.length <= 3, `lro must come in at most three lines, found ${marked.length}`);
    const unmarked = code.filter((l) => !marked.includes(l) && !l.trimStart().startsWith('//'));
    assert.deepEqual(unmarked.filter((l) => /lro/i.test(l)), [], 'every line that uses lro is marked `// lro`');
    writeFileSync(join(app, 'server.mjs'), server);
    writeFileSync(join(app, 'plain.mjs'), code.filter((l) => !marked.includes(l)).join('\n'));

    const started = Date.now();
    const sdk = `@modelcontextprotocol/sdk@${pkg.devDependencies['@modelcontextprotocol/sdk']}`;
    const zod = `zod@${pkg.devDependencies.zod}`;
    run('npm', ['install', tarball, sdk, zod, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
      { cwd: app, env: cleanEnv({ PATH }) });
    const installed = JSON.parse(readFileSync(join(app, 'node_modules', 'lro-wasm', 'package.json'), 'utf8'));
    assert.equal(installed.version, pkg.version);

    const out = join(work, 'offload');
    const env = cleanEnv({ PATH, ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR: out });
    const lro = await connect(app, 'server.mjs', env);
    let firstOffload;
    let plain;
    try {
      const listed = await lro.client.listTools();
      const search = await lro.client.callTool({ name: 'search_notes', arguments: { topic: 'cache' } });
      firstOffload = Date.now();

      // The same server without lro, for what the tools return by themselves.
      plain = await connect(app, 'plain.mjs', env);
      const { tools: plainTools } = await plain.client.listTools();
      const raw = await plain.client.callTool({ name: 'search_notes', arguments: { topic: 'cache' } });
      const rawNote = await plain.client.callTool({ name: 'get_note', arguments: { id: 'note-7' } });
      assert.ok(plainTools.find((t) => t.name === 'search_notes').outputSchema, 'the plain server lists an outputSchema');
      assert.ok(!plainTools.some((t) => t.name === 'lro_extract'));

      assert.deepEqual(listed.tools.map((t) => t.name), [...plainTools.map((t) => t.name), 'lro_extract']);
      assert.equal(listed.tools.find((t) => t.name === 'search_notes').outputSchema, undefined,
        'search_notes may be offloaded: its outputSchema is dropped');

      assert.notEqual(search.isError, true, textOf(search));
      const descriptor = JSON.parse(textOf(search));
      assert.equal(descriptor.offloaded, true, 'search_notes is offloaded');
      const path = descriptor.files.notes;
      assert.equal(dirname(path), out);
      const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
      const notes = raw.structuredContent.notes;
      assert.ok(notes.length > 100);
      assert.deepEqual(lines.slice(1).map((l) => JSON.parse(l)), notes, 'the file\'s data lines are what the tool returned');

      // The guidance's own example, called exactly as printed.
      const calls = guidanceCalls(descriptor.guidance);
      assert.ok(calls.length >= 1, descriptor.guidance);
      for (const args of calls) {
        const answer = await lro.client.callTool({ name: 'lro_extract', arguments: args });
        assert.notEqual(answer.isError, true, `${JSON.stringify(args)}: ${textOf(answer)}`);
        if (args.query === 'length') assert.equal(textOf(answer), String(notes.length));
        if (args.query === '.[:10][]') {
          assert.deepEqual(textOf(answer).split('\n').map((v) => JSON.parse(v)), notes.slice(0, 10), 'the first records, in order');
        }
      }
      assert.ok(calls.some((a) => a.query === 'length') && calls.some((a) => a.query === '.[:10][]'),
        `the guidance shows the count and the first records: ${descriptor.guidance}`);

      assert.deepEqual(await lro.client.callTool({ name: 'get_note', arguments: { id: 'note-7' } }), rawNote,
        'a small result is unchanged');
    } finally {
      await plain?.client.close();
      await lro.client.close();
    }
    console.log(`package: ${((firstOffload - started) / 1000).toFixed(1)} s from \`npm install\` to the first offloaded result`);
  });

  it('an expired file is deleted by the periodic sweep, with no call', { timeout: 120_000 }, async () => {
    const app = join(work, 'app');
    assert.ok(existsSync(join(app, 'node_modules', 'lro-wasm')), 'the install test runs first');
    const out = join(work, 'swept');
    // ttl 1 s: files expire at once, and the sweep runs every second (ttl/2, at least 1 s).
    const env = cleanEnv({ PATH: pathWithoutRust(), ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR: out, ATLATL_PROMPT__OFFLOAD__TTL_SECONDS: '1' });
    const { client } = await connect(app, 'server.mjs', env);
    try {
      const descriptor = JSON.parse(textOf(await client.callTool({ name: 'search_notes', arguments: { topic: 'auth' } })));
      const path = descriptor.files.notes;
      assert.ok(existsSync(path), path);
      const until = Date.now() + 15_000;
      while (existsSync(path) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      assert.ok(!existsSync(path), `${path} is still there 15 s after it expired`);
    } finally {
      await client.close();
    }
  });
});

describe('the component the build transpiles (scripts/component.js)', () => {
  const repo = join(work, 'fake-repo');
  const bin = join(work, 'fake-bin');
  before(() => {
    mkdirSync(join(repo, 'guest'), { recursive: true });
    writeFileSync(join(repo, 'guest', 'Cargo.toml'), '[package]\nname = "lro-guest"\n');
    mkdirSync(bin);
  });
  const noRust = () => ({ PATH: pathWithoutRust() });

  it('$LRO_WASM when set; a missing file is named', () => {
    const wasm = join(work, 'given.wasm');
    writeFileSync(wasm, 'not really');
    assert.equal(findComponent(repo, { LRO_WASM: wasm }), wasm);
    assert.throws(() => findComponent(repo, { LRO_WASM: join(work, 'none.wasm') }),
      (e) => e instanceof ComponentError && e.message.startsWith(`LRO_WASM=${join(work, 'none.wasm')}: no such file`));
  });

  it('else cargo builds the guest, as host/build.rs does, into target/guest', () => {
    // A stand-in cargo that records its arguments and writes the component where cargo would.
    writeFileSync(join(bin, 'cargo'), `#!/bin/sh\necho "$PWD|$*|$RUSTFLAGS" > "${join(work, 'cargo-args')}"\n`
      + 'out="$8/wasm32-wasip2/release"; mkdir -p "$out" && printf wasm > "$out/lro_guest.wasm"\n');
    chmodSync(join(bin, 'cargo'), 0o755);
    const env = { PATH: `${bin}${delimiter}${pathWithoutRust()}`, RUSTFLAGS: '-C meant-for-another-build' };
    const built = findComponent(repo, env);
    assert.equal(built, join(repo, 'target', 'guest', 'wasm32-wasip2', 'release', 'lro_guest.wasm'));
    const [cwd, args, rustflags] = readFileSync(join(work, 'cargo-args'), 'utf8').trim().split('|');
    assert.equal(cwd, repo);
    assert.equal(args, `build -p lro-guest --target wasm32-wasip2 --release --target-dir ${join(repo, 'target', 'guest')}`);
    assert.equal(rustflags, '', 'flags meant for another build do not reach the guest');
    const other = join(work, 'elsewhere');
    assert.equal(findComponent(repo, { ...env, CARGO_TARGET_DIR: other }), join(other, 'guest', 'wasm32-wasip2', 'release', 'lro_guest.wasm'));
  });

  it('says what to do when cargo is missing or fails, or there is no repository', () => {
    assert.throws(() => findComponent(repo, noRust()), (e) => e instanceof ComponentError
      && /LRO_WASM is not set, and cargo is not on PATH to build it/.test(e.message) && /rustup target add wasm32-wasip2/.test(e.message));
    const failing = join(work, 'failing-bin');
    mkdirSync(failing);
    writeFileSync(join(failing, 'cargo'), '#!/bin/sh\nexit 101\n');
    chmodSync(join(failing, 'cargo'), 0o755);
    assert.throws(() => findComponent(repo, { PATH: `${failing}${delimiter}${pathWithoutRust()}` }),
      (e) => e instanceof ComponentError && /^cargo build -p lro-guest .* failed \(exit 101\)/.test(e.message));
    assert.throws(() => findComponent(work, noRust()), (e) => e instanceof ComponentError
      && e.message.includes(`${work} is not the lro repository (no guest/Cargo.toml)`) && e.message.includes('Set LRO_WASM='));
  });

  it('npm run build with neither stops with that message, before touching gen/', () => {
    const build = (env) => spawnSync(process.execPath, [join(HOST, 'scripts', 'build.js')], { encoding: 'utf8', env });
    const neither = build(noRust());
    assert.equal(neither.status, 1, neither.stderr);
    assert.match(neither.stderr, /LRO_WASM is not set, and cargo is not on PATH to build it/);
    const missing = build({ ...noRust(), LRO_WASM: join(work, 'none.wasm') });
    assert.equal(missing.status, 1, missing.stderr);
    assert.match(missing.stderr, /LRO_WASM=.*none\.wasm: no such file/);
    assert.ok(existsSync(join(HOST, 'gen', 'component.js')), 'gen/ is left as it was');
  });
});
