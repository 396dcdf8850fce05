// The oldest @modelcontextprotocol/sdk that the peer range admits: test/mcp.test.js runs again
// with the SDK (and its zod) resolved from test/sdk, an install of the range's lowest version
// (test/sdk/alias.mjs redirects the imports). Installed by tests/run and .ci/run.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { HOST, requireComponent } from './support.js';

requireComponent();

const SDK = join(HOST, 'test', 'sdk');
const range = JSON.parse(readFileSync(join(HOST, 'package.json'), 'utf8')).peerDependencies['@modelcontextprotocol/sdk'];
const alias = ['--import', './test/sdk/alias.mjs'];

function node(args) {
  // Without NODE_TEST_CONTEXT, which would make the inner `node --test` report to this runner
  // instead of printing its own results.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  return spawnSync(process.execPath, [...alias, ...args], { cwd: HOST, env: { ...env, LRO_SDK_DIR: SDK }, encoding: 'utf8' });
}

describe(`the oldest SDK the peer range ${range} admits`, () => {
  it('is the one test/sdk holds, and the tests import it', () => {
    assert.match(range, /^\^\d+\.\d+\.\d+$/, 'a caret range whose lowest version test/sdk pins');
    const pinned = JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8')).dependencies['@modelcontextprotocol/sdk'];
    assert.equal(pinned, range.slice(1));
    assert.ok(existsSync(join(SDK, 'node_modules', '@modelcontextprotocol', 'sdk')), 'test/sdk is installed (npm install in bindings/node/test/sdk)');
    // What the redirected imports load: the old SDK's files, not this package's devDependency.
    const seen = node(['--input-type=module', '-e', "console.log(import.meta.resolve('@modelcontextprotocol/sdk/server/mcp.js'))"]);
    assert.equal(seen.status, 0, seen.stderr);
    assert.ok(seen.stdout.includes('/test/sdk/node_modules/@modelcontextprotocol/sdk/'), seen.stdout);
  });

  it('passes every withLro test', () => {
    const run = node(['--test', '--test-reporter=tap', 'test/mcp.test.js']);
    assert.equal(run.status, 0, `${run.stdout.slice(-4000)}\n${run.stderr.slice(-2000)}`);
    assert.match(run.stdout, /# pass [1-9]\d*\n# fail 0\n/);
  });
});
