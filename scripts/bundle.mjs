// The programs as bundles (`npm run build` runs this after swc): dist/main.js (the roles),
// dist/cli.js (the admin CLI) and dist/cli-program.js (its runCli, for the tests' CLI host), each
// esbuild's bundle of swc's output in dist/lib/ with the packages they import, sharing chunks in
// dist/chunks/. Why: a start of the program was module loading, not work: Node resolving, reading
// and compiling ~2,000 files cost 1.5 s and 1.9 s of CPU per process (bench/boot.mjs), paid by
// every restart after a crash and dozens of times per `npm test`. One file per program is read and
// compiled at once. swc stays the compiler (esbuild cannot emit the decorator metadata Nest's
// injection reads); esbuild only joins its output.
import { parse } from 'cjs-module-lexer';
import * as esbuild from 'esbuild';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The bundled programs: entry in dist/lib/ → dist/<name>.js. */
export const PROGRAMS = ['main', 'cli', 'cli-program'];

/**
 * Packages left out of the bundle and loaded from node_modules at run time: each finds files of
 * its own next to itself (swagger-ui-dist its UI assets, pino its worker-thread transports,
 * msgpackr-extract its native addon, and msgpackr, which loads it). None shares state with a
 * bundled package: a second copy of @nestjs/common or reflect-metadata beside the bundle's would.
 * typescript and prettier: only nest-commander's helpers (cosmiconfig for a .ts config file,
 * shell completion) reach for them; bundled they were 70 MB of chunks.
 */
const EXTERNAL = ['swagger-ui-dist', 'pino', 'thread-stream', 'msgpackr', 'msgpackr-extract', 'typescript', 'prettier'];

/**
 * Optional packages our dependencies try to load and we do not install (Nest's microservices and
 * websockets, TypeORM's other drivers): left as run-time imports, which fail as they do unbundled.
 * "Not installed" is what esbuild's own resolver says, with the import's kind (an ES-only
 * package resolves for `import`, not for `require`).
 */
function externalWhenNotInstalled() {
  return {
    name: 'external-when-not-installed',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.path.startsWith('node:') || args.pluginData?.probing) return undefined;
        const found = await build.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: { probing: true } });
        return found.errors.length > 0 ? { path: args.path, external: true } : undefined;
      });
    },
  };
}

/** Whether Node loads `file` as CommonJS: a .cjs, or a .js whose nearest package.json is not "type": "module". */
function isCommonJs(file) {
  if (file.endsWith('.cjs')) return true;
  if (!file.endsWith('.js')) return false;
  for (let dir = dirname(file); dirname(dir) !== dir; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) return JSON.parse(readFileSync(manifest, 'utf8')).type !== 'module';
  }
  return true;
}

/**
 * The names a CommonJS module exports as Node finds them when an ES module imports it: Node's own
 * lexer (cjs-module-lexer) over its source, following its re-exports (`__exportStar(require(...))`).
 */
function commonJsExportNames(file, seen = new Set()) {
  if (seen.has(file)) return [];
  seen.add(file);
  const { exports, reexports } = parse(readFileSync(file, 'utf8'));
  const names = new Set(exports);
  for (const specifier of reexports) {
    const target = createRequire(file).resolve(specifier);
    if (isCommonJs(target)) commonJsExportNames(target, seen).forEach((name) => names.add(name));
  }
  return [...names].filter((name) => name !== 'default' && name !== '__esModule' && /^[A-Za-z_$][\w$]*$/.test(name));
}

/**
 * `await import('a-commonjs-package')` gives its named exports in Node but only `default` in
 * esbuild's split bundle, and Nest loads class-transformer that way (ValidationPipe: every request
 * body), our CLI nest-commander. Such an import is pointed at a module that requires the package
 * and exports what Node would: `default` its module.exports, and each name Node's lexer finds.
 */
function commonJsDynamicImportsAsInNode() {
  return {
    name: 'commonjs-dynamic-imports-as-in-node',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.kind !== 'dynamic-import' || args.path.startsWith('node:') || args.pluginData?.asInNode) return undefined;
        const resolved = await build.resolve(args.path, { kind: 'import-statement', resolveDir: args.resolveDir, pluginData: { asInNode: true } });
        if (resolved.errors.length || resolved.external || !isCommonJs(resolved.path)) return undefined;
        return { path: resolved.path, namespace: 'commonjs-as-in-node' };
      });
      build.onLoad({ filter: /.*/, namespace: 'commonjs-as-in-node' }, (args) => {
        const names = commonJsExportNames(args.path);
        return {
          contents: [
            `const commonJsExports = require(${JSON.stringify(args.path)});`,
            'export default commonJsExports;',
            names.length ? `export const { ${names.join(', ')} } = commonJsExports;` : '',
          ].join('\n'),
          resolveDir: dirname(args.path),
        };
      });
    },
  };
}

/**
 * CommonJS packages bundled into ES modules still read `require`, `__filename` and `__dirname`
 * (ioredis builds its error stacks from `__dirname`): each output file defines them as its own.
 */
const COMMONJS_GLOBALS = [
  "import { createRequire as __oncelineCreateRequire } from 'node:module';",
  "import { fileURLToPath as __oncelineFileURLToPath } from 'node:url';",
  "import { dirname as __oncelineDirname } from 'node:path';",
  'const require = __oncelineCreateRequire(import.meta.url);',
  'const __filename = __oncelineFileURLToPath(import.meta.url);',
  'const __dirname = __oncelineDirname(__filename);',
].join(' ');

export async function bundlePrograms(root) {
  const dist = join(root, 'dist');
  rmSync(join(dist, 'chunks'), { recursive: true, force: true });
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(PROGRAMS.map((name) => [name, join(dist, 'lib', `${name}.js`)])),
    outdir: dist,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    // Chunks shared by the programs, and a dynamic import() stays lazy: the sandbox role loads no Nest.
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Nest and TypeORM read class names (providers in messages, entity names); esbuild would rename clashes.
    keepNames: true,
    sourcemap: 'linked',
    external: EXTERNAL,
    plugins: [commonJsDynamicImportsAsInNode(), externalWhenNotInstalled()],
    banner: { js: COMMONJS_GLOBALS },
    logLevel: 'warning',
  });
}
