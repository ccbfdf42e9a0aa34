// Node module hooks for the test workers (registered by register.mjs): TypeScript compiled by swc
// with the build's options (scripts/swc-options.mjs), `./x.js` specifiers resolved to `./x.ts` (the
// compiled program's spelling, as tsc wants it), and `@jest/globals` answered by jest-globals.mjs.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transform } from '@swc/core';
import { SWC_OPTIONS } from '../../../scripts/swc-options.mjs';

const JEST_GLOBALS = new URL('./jest-globals.mjs', import.meta.url).href;

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
  const { code } = await transform(String(source.source), { ...SWC_OPTIONS, sourceMaps: 'inline', filename });
  return { format: 'module', source: code, shortCircuit: true };
}
