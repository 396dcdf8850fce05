// `node --import ./test/sdk/alias.mjs`: @modelcontextprotocol/sdk and zod resolve from the
// folder LRO_SDK_DIR names (an install of an older SDK) instead of this package's own
// node_modules, so that the same tests run against both ends of the peer range (package.json).
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';

if (!process.env.LRO_SDK_DIR) throw new Error('alias.mjs: set LRO_SDK_DIR to the folder holding node_modules/@modelcontextprotocol/sdk');
register('./hooks.mjs', import.meta.url, { data: { parent: pathToFileURL(`${process.env.LRO_SDK_DIR}/package.json`).href } });
