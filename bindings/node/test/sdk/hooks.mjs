// The resolve hook registered by alias.mjs.
let parent;

export function initialize(data) {
  parent = data.parent;
}

export function resolve(specifier, context, next) {
  if (specifier === 'zod' || specifier.startsWith('zod/') || specifier.startsWith('@modelcontextprotocol/sdk')) {
    return next(specifier, { ...context, parentURL: parent });
  }
  return next(specifier, context);
}
