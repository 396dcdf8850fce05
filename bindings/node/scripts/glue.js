// Textual changes to the JavaScript glue jco 1.35 writes (gen/component.js), made by
// scripts/build.js. Each makes a call cheaper and changes nothing the component sees. jco is
// pinned (package.json), so each text is expected exactly once: a jco that writes other glue
// fails the build here, naming the change that no longer applies, rather than silently running
// slower. Each waits for a change to jco; docs/UPSTREAM.md has the report to file for each one
// (the nearest open issue, for the first, is bytecodealliance/jco#1711).
//
// - WebAssembly.promising: without JSPI (Node 20), the glue calls it nine times per
//   instantiation in a try/catch and keeps the plain function. Each failed call costs ~5 ms,
//   because V8 re-parses the glue to word its "is not a function" message. The glue now asks
//   once whether it exists, and otherwise keeps the plain function directly, without setting
//   the global (the caller's program runs on the same thread: lro.js makes calls there).
// - _debugLog: read process.env.JCO_DEBUG (a lookup in the C++ environment) on each of its
//   hundreds of calls per component call; now once, when the glue is loaded.
// - _utf8AllocateAndEncode: measured a string's UTF-8 length in a JavaScript loop over every
//   UTF-16 unit (2 ms for a 380 kB JSON text, 200 ms for 38 MB); Buffer.byteLength does it
//   natively. The count of code points it also made is read nowhere.

const PATCHES = [
  {
    name: 'WebAssembly.promising asked once',
    find: /WebAssembly\.promising\(/g,
    replace: '_jcoPromising(',
    count: (n) => n > 0,
    // The identity is what the catch branch keeps.
    prelude: "const _jcoPromising = typeof WebAssembly.promising === 'function' ? WebAssembly.promising : (f) => f;\n",
  },
  {
    name: '_debugLog reads JCO_DEBUG once',
    find: `  const _debugLog = (...args) => {
    if (!globalThis?.process?.env?.JCO_DEBUG) { return; }
    console.debug(...args);
  };`,
    replace: `  const _debugLog = globalThis?.process?.env?.JCO_DEBUG ? (...args) => console.debug(...args) : () => {};`,
  },
  {
    name: '_utf8AllocateAndEncode measures natively',
    find: `    // Compute the exact allocation size up front. Some older preview1
    // adapters only support an initial allocation, not a subsequent shrink.
    let len = 0;
    let codepoints = 0;
    for (let i = 0; i < s.length; i++) {
      const ch = s.charCodeAt(i);
      codepoints++;
      if (ch < 0x80) { len += 1; }
      else if (ch < 0x800) { len += 2; }
      else if (ch >= 0xd800 && ch <= 0xdbff &&
      i + 1 < s.length &&
      (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        len += 4;
        i++;
      } else { len += 3; }
    }`,
    // A lone surrogate counts 3 bytes here as in the loop: TextEncoder writes U+FFFD for it.
    replace: `    // Compute the exact allocation size up front. Some older preview1
    // adapters only support an initial allocation, not a subsequent shrink.
    const len = Buffer.byteLength(s, 'utf8');
    const codepoints = undefined;`,
  },
];

/** The glue with every change of PATCHES made; throws naming a change whose text is not there. */
export function patchGlue(text) {
  let out = text;
  let prelude = '';
  for (const patch of PATCHES) {
    if (typeof patch.find === 'string') {
      const at = out.indexOf(patch.find);
      if (at === -1 || out.indexOf(patch.find, at + 1) !== -1) {
        throw new Error(`the glue change "${patch.name}" does not apply: jco wrote other glue than 1.35.0 does (update scripts/glue.js)`);
      }
      out = out.slice(0, at) + patch.replace + out.slice(at + patch.find.length);
    } else {
      const n = out.match(patch.find)?.length ?? 0;
      if (!patch.count(n)) {
        throw new Error(`the glue change "${patch.name}" does not apply: jco wrote other glue than 1.35.0 does (update scripts/glue.js)`);
      }
      out = out.replace(patch.find, patch.replace);
    }
    prelude += patch.prelude ?? '';
  }
  // After the glue's directive prologue ("use components";), which must stay first.
  const directive = /^("[^"\n]*";\n)*/.exec(out)[0];
  return directive + prelude + out.slice(directive.length);
}
