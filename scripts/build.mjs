// `npm run build`: compiles src/ into dist/lib/ with swc (scripts/swc-options.mjs, as the tests'
// module hook does) and bundles the programs into dist/main.js, dist/cli.js and
// dist/cli-program.js (scripts/bundle.mjs), unless dist/ was built by this script from exactly the
// sources there are now. swc only strips the types (with the decorator metadata Nest injects by):
// 281 files in about 0.1 s, where tsc took 11 s of a fresh clone's `npm test` and `npm start`.
// Types are checked by `npm run typecheck` (tsc --noEmit over src and test), which CI runs before
// the tests. The check, make's: the stamp dist/.build-stamp, written only after a build that
// succeeded, lists the inputs; a build runs when any input is newer than the stamp, when the list
// differs (a file added, removed or renamed: a rename keeps its mtime), or when an output is
// missing. `--force` always builds.
import { transformFile } from '@swc/core';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundlePrograms, PROGRAMS } from './bundle.mjs';
import { SWC_OPTIONS } from './swc-options.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STAMP = join(ROOT, 'dist', '.build-stamp');
const CONFIGS = ['package-lock.json', 'scripts/build.mjs', 'scripts/bundle.mjs', 'scripts/swc-options.mjs'];

/** What the build compiles: src/**\/*.ts but the unit specs. */
function sources() {
  return readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .filter((path) => !path.split('/').includes('__tests__'))
    .sort();
}

/** Whether dist/ must be built (it is not current). */
function buildNeeded(inputs) {
  if (process.argv.includes('--force')) return true;
  // No stamp, or the sources are not the ones last built (added, removed, renamed).
  if (!existsSync(STAMP) || readFileSync(STAMP, 'utf8') !== inputs.join('\n')) return true;
  const built = statSync(STAMP).mtimeMs;
  if ([...inputs, ...CONFIGS].some((path) => statSync(join(ROOT, path)).mtimeMs > built)) return true;
  if (inputs.some((path) => !existsSync(join(ROOT, libPath(path))))) return true;
  return PROGRAMS.some((name) => !existsSync(join(ROOT, 'dist', `${name}.js`)));
}

/** src/a/b.ts → dist/lib/a/b.js */
const libPath = (source) => join('dist', 'lib', source.replace(/^src\//, '').replace(/\.ts$/, '.js'));

/** dist/lib/ anew: each source compiled alone (swc runs them on its own threads), with its map, which esbuild follows to src/. */
async function compile(inputs) {
  rmSync(join(ROOT, 'dist', 'lib'), { recursive: true, force: true });
  await Promise.all(
    inputs.map(async (source) => {
      const out = join(ROOT, libPath(source));
      const { code, map } = await transformFile(join(ROOT, source), { ...SWC_OPTIONS, sourceMaps: true, sourceFileName: relative(dirname(out), join(ROOT, source)) });
      mkdirSync(dirname(out), { recursive: true });
      const name = out.slice(dirname(out).length + 1);
      writeFileSync(out, `${code}\n//# sourceMappingURL=${name}.map\n`);
      writeFileSync(`${out}.map`, map);
    }),
  );
}

const inputs = sources();
if (buildNeeded(inputs)) {
  // No stamp while it builds: after a failed or interrupted build the next one always runs.
  rmSync(STAMP, { force: true });
  // The stamp carries the time the build started: a source saved while it ran is newer than it.
  const started = new Date();
  await compile(inputs);
  await bundlePrograms(ROOT);
  writeFileSync(STAMP, inputs.join('\n'));
  utimesSync(STAMP, started, started);
}
