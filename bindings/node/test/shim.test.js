// The component under jco's own WASI, the preview2-shim (a dependency of this package, which
// lro.js itself no longer uses: wasi.js gives each call its own imports): a host built the way
// jco's documentation shows gets working offloads, evictions included. The shim cannot list a
// preopened directory itself, so the guest opens it again first when listing it fails
// (core/src/sink.rs); the storage cap below makes every offload list the directory.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { inspect } from 'node:util';
import * as shim from '@bytecodealliance/preview2-shim';
import { instantiate } from '../gen/component.js';
import { HOST, requireComponent } from './support.js';

requireComponent();

describe("jco's preview2-shim as the component's WASI", () => {
  const dir = mkdtempSync(join(tmpdir(), 'lro-shim-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('offloads, and evicts the oldest expired file at max_files', () => {
    shim.filesystem._setPreopens({ [dir]: dir });
    const events = [];
    const { cli, clocks, filesystem, io, random } = shim;
    const imports = {
      'wasi:cli/environment': cli.environment,
      'wasi:cli/exit': cli.exit,
      'wasi:cli/stderr': cli.stderr,
      'wasi:cli/stdin': cli.stdin,
      'wasi:cli/stdout': cli.stdout,
      'wasi:cli/terminal-input': cli.terminalInput,
      'wasi:cli/terminal-output': cli.terminalOutput,
      'wasi:cli/terminal-stderr': cli.terminalStderr,
      'wasi:cli/terminal-stdin': cli.terminalStdin,
      'wasi:cli/terminal-stdout': cli.terminalStdout,
      'wasi:clocks/monotonic-clock': clocks.monotonicClock,
      'wasi:clocks/wall-clock': clocks.wallClock,
      'wasi:filesystem/preopens': filesystem.preopens,
      'wasi:filesystem/types': filesystem.types,
      'wasi:io/error': io.error,
      'wasi:io/poll': io.poll,
      'wasi:io/streams': io.streams,
      'wasi:random/insecure-seed': random.insecureSeed,
      'wasi:random/random': random.random,
      'lro:component/events': { emit: (event) => events.push(event.tag) },
    };
    const lro = instantiate((name) => new WebAssembly.Module(readFileSync(join(HOST, 'gen', name))), imports);
    const config = { ...lro.configuration.defaults(), outputDir: dir, thresholdTokens: 10, maxFiles: 2, ttlSeconds: 0n };
    const records = JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ id: `m${i}`, title: `Record ${i}` })));
    const paths = [];
    for (let i = 0; i < 3; i++) {
      const outcome = lro.interceptor.offload(config, { operation: 'recall', records });
      assert.equal(outcome.tag, 'offloaded', inspect(outcome));
      paths.push(outcome.val.path);
      assert.equal(readFileSync(outcome.val.path, 'utf8').split('\n').filter(Boolean).length, 21);
    }
    assert.deepEqual(events, ['offload-created', 'offload-created', 'offload-file-evicted', 'offload-created']);
    assert.deepEqual(readdirSync(dir).sort(), paths.slice(1).map((p) => p.slice(dir.length + 1)).sort());
  });
});
