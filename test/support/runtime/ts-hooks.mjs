// Node module hooks for the test workers (registered by register.mjs): TypeScript compiled by swc
// with the options jest's own transform used, `./x.js` specifiers resolved to `./x.ts` (the
// compiled program's spelling, as tsc wants it), and `@jest/globals` answered by jest-globals.mjs.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transform } from '@swc/core';

const JEST_GLOBALS = new URL('./jest-globals.mjs', import.meta.url).href;

const SWC_OPTIONS = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
    keepClassNames: true,
  },
  module: { type: 'es6' },
  sourceMaps: 'inline',
};

export async function resolve(specifier, context, nextResolve) {
  if (specifier === '@jest/globals') return { url: JEST_GLOBALS, shortCircuit: true };
  if (specifier.endsWith('.js') && (specifier.startsWith('./') || specifier.startsWith('../')) && context.parentURL?.startsWith('file:')) {
    const asTs = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
    if (!existsSync(new URL(specifier, context.parentURL)) && existsSync(asTs)) {
      return { url: asTs.href, shortCircuit: true, format: 'module' };
    }
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !/\.ts(\?|$)/.test(url)) return nextLoad(url, context);
  const filename = fileURLToPath(url.split('?')[0]);
  const source = await nextLoad(url, { ...context, format: 'module' });
  const { code } = await transform(String(source.source), { ...SWC_OPTIONS, filename });
  return { format: 'module', source: code, shortCircuit: true };
}
