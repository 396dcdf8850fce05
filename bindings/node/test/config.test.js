// The configuration withLro reads: gathered by config.js (the file's text, the environment, the
// options as JSON) and layered by the component (`configuration.load`, core/src/layers.rs), as
// the `lro` command layers it: options > environment > TOML file > base > the component's
// defaults, every key from every layer, the environment's text forms, the file's tool tables,
// and errors that name the key and where it came from, in the command's words.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { configLayers, envVar, loadConfig } from '../config.js';
import { RENAMED } from '../convert.js';
import { Lro, LroError } from '../lro.js';
import { REPO, requireComponent } from './support.js';

requireComponent();

// The keys of docs/CONFIGURATION.md, in its order.
const KEYS = ['enabled', 'threshold_tokens', 'ttl_seconds', 'output_dir', 'prefix', 'descriptor', 'schema_version',
  'extract_tool', 'recipes', 'max_bytes', 'max_files'];

const lro = new Lro();
let defaults;
before(async () => { defaults = await lro.defaults(); });
const dir = mkdtempSync(join(tmpdir(), 'lro-config-test-'));
after(() => {
  lro.close();
  rmSync(dir, { recursive: true, force: true });
});
let files = 0;
/** A TOML file with `text`; its path. */
function toml(text) {
  const path = join(dir, `config-${files++}.toml`);
  writeFileSync(path, text);
  return path;
}

/** loadConfig with this file's Lro. */
const load = (options) => loadConfig(lro, options);
/** The keys where `config` differs from the defaults, with its values. */
function changed(config) {
  return Object.fromEntries(Object.entries(config).filter(([k, v]) => JSON.stringify(v, big) !== JSON.stringify(defaults[k], big)));
}
const big = (_, v) => (typeof v === 'bigint' ? `${v}n` : v);

/** The message of the LroError `fn` rejects with (or throws): kind invalid-config. */
async function refused(fn) {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof LroError, `not an LroError: ${e?.stack ?? e}`);
    assert.equal(e.kind, 'invalid-config', e.message);
    return e.message;
  }
  assert.fail('no error was thrown');
}

describe('layers', () => {
  it('options beat the environment, which beats the file, which beats the base', async () => {
    const file = toml('[prompt.offload]\nthreshold_tokens = 100\nttl_seconds = 60\nprefix = "lro"\nmax_files = 7\n');
    const env = { [envVar('threshold_tokens')]: '200', [envVar('ttl_seconds')]: '70' };
    const base = { threshold_tokens: 1, ttl_seconds: 2, prefix: 'base', max_files: 3, extract_tool: true };
    assert.deepEqual(changed(await load({ options: { threshold_tokens: 300 }, env, configFile: file, base })),
      { threshold_tokens: 300, ttl_seconds: 70, prefix: 'lro', max_files: 7, extract_tool: true });
    assert.deepEqual(changed(await load({ env, configFile: file, base })),
      { threshold_tokens: 200, ttl_seconds: 70, prefix: 'lro', max_files: 7, extract_tool: true });
    assert.deepEqual(changed(await load({ env: {}, configFile: file, base })),
      { threshold_tokens: 100, ttl_seconds: 60, prefix: 'lro', max_files: 7, extract_tool: true });
    assert.deepEqual(changed(await load({ env: {}, base })), base);
    // Nothing set anywhere: the component's defaults, whole.
    assert.deepEqual(await load({ env: {} }), defaults);
  });

  it('reads process.env when no env is given', async () => {
    const name = envVar('prefix');
    const before = process.env[name];
    process.env[name] = 'fromenv';
    try {
      assert.deepEqual(changed(await load()), { prefix: 'fromenv' });
    } finally {
      if (before === undefined) delete process.env[name];
      else process.env[name] = before;
    }
  });

  it('tool settings merge key by key, options over the file, in the order tools first appear', async () => {
    const file = toml('[prompt.offload.tools.search]\nthreshold_tokens = 500\nsections = ["items"]\n'
      + '[prompt.offload.tools.ls]\nenabled = false\n');
    const tool = (t) => ({ enabled: null, threshold_tokens: null, sections: null, inline_keys: null, ...t });
    const want = [
      tool({ name: 'search', threshold_tokens: 900, sections: ['items'] }),
      tool({ name: 'ls', enabled: false }),
      tool({ name: 'new', inline_keys: ['total'] }),
    ];
    const asList = await load({ env: {}, configFile: file, options: { tools: [{ name: 'search', threshold_tokens: 900 }, { name: 'new', inline_keys: ['total'] }] } });
    const asObject = await load({ env: {}, configFile: file, options: { tools: { search: { threshold_tokens: 900 }, new: { inline_keys: ['total'] } } } });
    assert.deepEqual(asList.tools, want);
    assert.deepEqual(asObject.tools, want);
  });

  it('gathers the layers as the WIT config-layers record', () => {
    const file = toml('[prompt.offload]\nprefix = "p"\n');
    assert.deepEqual(configLayers({ env: { [envVar('prefix')]: 'e', PATH: '/bin' }, configFile: file, options: { prefix: 'o', lro: 1, gone: undefined }, others: ['lro'] }), {
      file: { name: file, text: '[prompt.offload]\nprefix = "p"\n' },
      environment: [{ name: envVar('prefix'), value: 'e' }],
      settings: [],
      arguments: { name: 'options', text: '{"prefix":"o"}' },
    });
  });
});

describe('every key, from every layer', () => {
  // key, its TOML value, its text (environment), its JS value (options), the value it must give.
  const table = [
    ['enabled', 'false', 'false', false, false],
    ['threshold_tokens', '77', '77', 77, 77],
    ['ttl_seconds', '60', '60', 60, 60],
    ['output_dir', '"/x"', '/x', '/x', '/x'],
    ['prefix', '"lro"', 'lro', 'lro', 'lro'],
    ['descriptor', '"bare"', 'bare', 'bare', 'bare'],
    ['schema_version', '"0.2"', '0.2', '0.2', '0.2'],
    ['extract_tool', 'true', 'true', true, true],
    ['recipes', '"v1"', 'v1', 'v1', 'v1'],
    ['max_bytes', '1000', '1000', 1000, 1000],
    ['max_files', '3', '3', 3, 3],
  ];

  it('the table walks every key the component knows, and docs/CONFIGURATION.md documents each', async () => {
    assert.deepEqual(table.map((row) => row[0]), KEYS);
    const known = (await refused(() => load({ env: {}, options: { colour: 1 } }))).split('known keys: ')[1];
    assert.equal(known, KEYS.join(', '));
    const reference = readFileSync(join(REPO, 'docs', 'CONFIGURATION.md'), 'utf8');
    for (const key of KEYS) assert.ok(reference.includes(`| \`${key}\` |`), `docs/CONFIGURATION.md's table lacks ${key}`);
  });

  for (const [key, tomlValue, text, js, want] of table) {
    it(key, async () => {
      assert.deepEqual(changed(await load({ env: {}, configFile: toml(`[prompt.offload]\n${key} = ${tomlValue}\n`) })), { [key]: want });
      assert.deepEqual(changed(await load({ env: { [envVar(key)]: text } })), { [key]: want });
      assert.deepEqual(changed(await load({ env: {}, options: { [key]: js } })), { [key]: want });
    });
  }

  it('what the layers give is a config the component takes, a u64 past 2^53 exact', async () => {
    const config = await load({
      env: { [envVar('ttl_seconds')]: '18446744073709551615', [envVar('descriptor')]: 'bare' },
      configFile: toml('[prompt.offload]\nprefix = "notes"\n[prompt.offload.tools.search]\nsections = ["items"]\nthreshold_tokens = 10\n'),
      options: { threshold_tokens: 500, extract_tool: true, max_bytes: 2n ** 60n },
    });
    assert.equal(config.ttl_seconds, 2n ** 64n - 1n, 'a u64 past 2^53 stays exact, as a BigInt');
    assert.equal(config.max_bytes, 2n ** 60n, 'a BigInt option reaches the component exactly');
    const tools = JSON.parse(await lro.rewriteTools(config, [{ name: 'search', inputSchema: { type: 'object' } }]));
    assert.deepEqual(tools.map((t) => t.name), ['search', 'lro_extract']);
  });
});

describe('the environment', () => {
  const one = async (key, text) => (await load({ env: { [envVar(key)]: text } }))[key];

  it('switches: true, false, 1, 0, in any case', async () => {
    for (const [text, want] of [['true', true], ['TRUE', true], ['True', true], ['1', true], ['false', false], ['FALSE', false], ['0', false]]) {
      assert.equal(await one('enabled', text), want, text);
    }
    assert.equal(await refused(() => one('extract_tool', 'yes')),
      'prompt.offload.extract_tool (from ATLATL_PROMPT__OFFLOAD__EXTRACT_TOOL): expected true or false, got "yes"');
  });

  it('whole numbers: surrounding blanks and a plus sign allowed, as Rust parses them', async () => {
    assert.equal(await one('threshold_tokens', ' 42 '), 42);
    assert.equal(await one('threshold_tokens', '+5'), 5);
    assert.equal(await one('threshold_tokens', '4294967295'), 4294967295);
    assert.equal(await one('max_bytes', '18446744073709551615'), 2n ** 64n - 1n);
    assert.equal(await one('max_bytes', '9007199254740991'), Number.MAX_SAFE_INTEGER, 'a Number while it is exact');
  });

  it('a bad number names the variable, the range and the text, in the lro command\'s words', async () => {
    assert.equal(await refused(() => one('threshold_tokens', 'lots')),
      'prompt.offload.threshold_tokens (from ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS): expected a whole number from 0 to 4294967295, got "lots"');
    assert.equal(await refused(() => one('max_files', '-1')),
      'prompt.offload.max_files (from ATLATL_PROMPT__OFFLOAD__MAX_FILES): expected a whole number from 0 to 4294967295, got "-1"');
    assert.match(await refused(() => one('threshold_tokens', '4294967296')), /expected a whole number from 0 to 4294967295, got "4294967296"$/);
    assert.match(await refused(() => one('ttl_seconds', '1.5')), /^prompt\.offload\.ttl_seconds \(from ATLATL_PROMPT__OFFLOAD__TTL_SECONDS\): expected a whole number from 0 to 18446744073709551615, got "1.5"$/);
    assert.match(await refused(() => one('max_bytes', '18446744073709551616')), /got "18446744073709551616"$/);
  });

  it('a word outside the choices is refused; strings are taken as they are', async () => {
    assert.equal(await refused(() => one('descriptor', 'rich')),
      'prompt.offload.descriptor (from ATLATL_PROMPT__OFFLOAD__DESCRIPTOR): expected "full" or "bare", got "rich"');
    assert.match(await refused(() => one('recipes', 'v3')), /expected "v2" or "v1", got "v3"$/);
    assert.equal(await one('output_dir', ' /tmp/with space '), ' /tmp/with space ');
  });

  it('a variable under an old name is refused, naming the new one', async () => {
    for (const [old, now] of [['threshold', 'threshold_tokens'], ['ttl', 'ttl_seconds'], ['dir', 'output_dir'], ['native', 'extract_tool']]) {
      assert.equal(await refused(() => load({ env: { [envVar(old)]: '1' } })),
        `prompt.offload.${old} (from ${envVar(old)}): renamed: set ${envVar(now)} instead`);
    }
  });

  it('variables of other programs are left alone, and a misspelt one is refused', async () => {
    assert.deepEqual(await load({ env: { ATLATL_PROMPT__BUDGET: '3', PATH: '/bin' } }), defaults);
    // A typo used to change nothing and say nothing; it is refused as a typo in the file is.
    assert.equal(await refused(() => load({ env: { ATLATL_PROMPT__OFFLOAD__THRESHHOLD_TOKENS: '5' } })),
      `unknown key prompt.offload.threshhold_tokens in ATLATL_PROMPT__OFFLOAD__THRESHHOLD_TOKENS; known keys: ${KEYS.join(', ')}`);
    assert.equal(await refused(() => load({ env: { ATLATL_PROMPT__OFFLOAD__Threshold_Tokens: '5' } })),
      'prompt.offload.threshold_tokens (from ATLATL_PROMPT__OFFLOAD__Threshold_Tokens): variables are named with the key in capitals: set ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS instead');
  });
});

describe('the TOML file', () => {
  it('other tables of the file are ignored, and a file without [prompt.offload] sets nothing', async () => {
    const file = toml('[server]\nport = 1\n[prompt]\nbudget = 3\n[prompt.offload]\nenabled = false\n');
    assert.deepEqual(changed(await load({ env: {}, configFile: file })), { enabled: false });
    assert.deepEqual(await load({ env: {}, configFile: toml('[server]\nport = 1\n') }), defaults);
  });

  it('a bad value names the key and the file', async () => {
    const file = toml('[prompt.offload]\nenabled = "yes"\n');
    assert.equal(await refused(() => load({ env: {}, configFile: file })),
      `prompt.offload.enabled (from ${file}): expected true or false, got "yes"`);
    const float = toml('[prompt.offload]\nthreshold_tokens = 5.0\n');
    assert.match(await refused(() => load({ env: {}, configFile: float })),
      /^prompt\.offload\.threshold_tokens \(from .*\): expected a whole number from 0 to 4294967295, got 5\.0$/);
    const negative = toml('[prompt.offload]\nmax_files = -1\n');
    assert.match(await refused(() => load({ env: {}, configFile: negative })), /got -1$/);
    const text = toml('[prompt.offload]\nprefix = 5\n');
    assert.match(await refused(() => load({ env: {}, configFile: text })), /^prompt\.offload\.prefix \(from .*\): expected a string, got 5$/);
  });

  it('an unknown key is an error naming it, the file, the new name of an old one, and the known keys', async () => {
    const file = toml('[prompt.offload]\nttl = 5\n');
    assert.equal(await refused(() => load({ env: {}, configFile: file })),
      `unknown key prompt.offload.ttl in ${file} (now ttl_seconds); known keys: ${KEYS.join(', ')}`);
    // The converter's hint for a config object passed to a method is the component's table.
    for (const [old, now] of Object.entries(RENAMED)) {
      const renamed = toml(`[prompt.offload]\n${old} = 1\n`);
      assert.match(await refused(() => load({ env: {}, configFile: renamed })), new RegExp(`\\(now ${now}\\)`));
    }
    const other = toml('[prompt.offload]\ncolour = "red"\n');
    assert.equal(await refused(() => load({ env: {}, configFile: other })),
      `unknown key prompt.offload.colour in ${other}; known keys: ${KEYS.join(', ')}`);
  });

  it('[prompt.offload.tools.NAME] tables configure each tool, in the file\'s order, and their bad values are named', async () => {
    const file = toml('[prompt.offload.tools.ls]\nenabled = false\n'
      + '[prompt.offload.tools.github_search]\nthreshold_tokens = 500\nsections = ["items"]\ninline_keys = ["total_count"]\n');
    assert.deepEqual((await load({ env: {}, configFile: file })).tools, [
      { name: 'ls', enabled: false, threshold_tokens: null, sections: null, inline_keys: null },
      { name: 'github_search', enabled: null, threshold_tokens: 500, sections: ['items'], inline_keys: ['total_count'] },
    ]);
    const sections = toml('[prompt.offload.tools.ls]\nsections = "items"\n');
    assert.equal(await refused(() => load({ env: {}, configFile: sections })),
      `prompt.offload.tools.ls.sections (from ${sections}): expected a list of strings, got "items"`);
    const unknown = toml('[prompt.offload.tools.ls]\nthreshold = 5\n');
    assert.equal(await refused(() => load({ env: {}, configFile: unknown })),
      `prompt.offload.tools.ls.threshold (from ${unknown}): unknown key; known keys: enabled, threshold_tokens, sections, inline_keys`);
    const notTable = toml('[prompt.offload]\ntools = 5\n');
    assert.equal(await refused(() => load({ env: {}, configFile: notTable })), `config file ${notTable}: [prompt.offload.tools] must be a table`);
  });

  it('a missing file, a file that is not TOML, and a [prompt.offload] that is no table are named', async () => {
    const missing = join(dir, 'missing.toml');
    assert.equal(await refused(() => load({ env: {}, configFile: missing })), `config file ${missing}: No such file or directory (os error 2)`);
    const broken = toml('[prompt.offload\n');
    assert.match(await refused(() => load({ env: {}, configFile: broken })), new RegExp(`^config file ${broken}: .+`));
    const scalar = toml('[prompt]\noffload = 5\n');
    assert.equal(await refused(() => load({ env: {}, configFile: scalar })), `config file ${scalar}: [prompt.offload] must be a table`);
  });
});

describe('the options', () => {
  const options = (o, others = []) => load({ env: {}, options: o, source: 'withLro options', others });

  it('values are checked as in the file, naming the options as their source', async () => {
    assert.equal(await refused(() => options({ threshold_tokens: '500' })),
      'prompt.offload.threshold_tokens (from withLro options): expected a whole number from 0 to 4294967295, got "500"');
    assert.equal(await refused(() => options({ enabled: 'yes' })), 'prompt.offload.enabled (from withLro options): expected true or false, got "yes"');
    assert.equal(await refused(() => options({ ttl_seconds: 1.5 })),
      'prompt.offload.ttl_seconds (from withLro options): expected a whole number from 0 to 18446744073709551615, got 1.5');
    assert.equal((await options({ ttl_seconds: 2n ** 60n })).ttl_seconds, 2n ** 60n);
    assert.equal((await options({ ttl_seconds: 60n })).ttl_seconds, 60, 'a BigInt that fits is a Number');
  });

  it('an unknown key names the spec\'s name for an old one; the caller\'s other options are skipped', async () => {
    assert.equal(await refused(() => options({ threshold: 5 }, ['configFile', 'env', 'lro'])),
      `unknown key prompt.offload.threshold in withLro options (now threshold_tokens); known keys: ${KEYS.join(', ')}`);
    assert.deepEqual(changed(await options({ configFile: 'x', prefix: 'p' }, ['configFile'])), { prefix: 'p' });
  });

  it('tools: a list of {name, ...} objects or an object by name; null means not set; anything else is named', async () => {
    assert.deepEqual((await options({ tools: [{ name: 'a', enabled: null, threshold_tokens: 5, sections: null }] })).tools,
      [{ name: 'a', enabled: null, threshold_tokens: 5, sections: null, inline_keys: null }]);
    assert.equal(await refused(() => options({ tools: 'a' })),
      'prompt.offload.tools (from withLro options): expected a list of {"name": ..., ...} objects or an object of tool names to settings, got "a"');
    assert.equal(await refused(() => options({ tools: [{ enabled: true }] })),
      'prompt.offload.tools (from withLro options): expected a list of {"name": ..., ...} objects or an object of tool names to settings, got [{"enabled":true}]');
    assert.equal(await refused(() => options({ tools: [{ name: 'a', sections: 'items' }] })),
      'prompt.offload.tools.a.sections (from withLro options): expected a list of strings, got "items"');
    assert.equal(await refused(() => options({ tools: [{ name: 'a', threshold: 5 }] })),
      'prompt.offload.tools.a.threshold (from withLro options): unknown key; known keys: enabled, threshold_tokens, sections, inline_keys');
  });

  it('null and undefined set nothing', async () => {
    assert.deepEqual(await options({ prefix: null, threshold_tokens: undefined }), defaults);
  });

  it('options that are not an object are refused', async () => {
    assert.equal(await refused(() => options('fast')), 'withLro options: expected an object, got "fast"');
  });
});
