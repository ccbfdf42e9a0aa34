// `npm run build`: compiles src/ into dist/lib/ with tsc (tsconfig.build.json) and bundles the
// programs into dist/main.js, dist/cli.js and dist/cli-program.js (scripts/bundle.mjs), unless
// dist/ was built by this script from exactly the sources there are now. tsc's own incremental check of an
// unchanged tree still costs 4 s and 6 s of CPU here (it loads the compiler and reads every
// file), which `npm start` and `npm test` paid on every run. The check, make's: the stamp
// dist/.build-stamp, written only after a build that succeeded, lists the inputs; a build runs
// when any input is newer than the stamp, when the list differs (a file added, removed or
// renamed: a rename keeps its mtime), or when an output is missing. `--force` always builds.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundlePrograms, PROGRAMS } from './bundle.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STAMP = join(ROOT, 'dist', '.build-stamp');
const CONFIGS = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json', 'scripts/bundle.mjs'];

/** What tsconfig.build.json compiles: src/**\/*.ts but the unit specs. */
function sources() {
  return readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .filter((path) => !path.split('/').includes('__tests__'))
    .sort();
}

/** Undefined when dist/ is current; else a build, `full` when tsc must forget its incremental state. */
function buildNeeded(inputs) {
  if (process.argv.includes('--force')) return { full: true };
  // No stamp, or the sources are not the ones last built (added, removed, renamed).
  if (!existsSync(STAMP) || readFileSync(STAMP, 'utf8') !== inputs.join('\n')) return { full: false };
  const built = statSync(STAMP).mtimeMs;
  if ([...inputs, ...CONFIGS].some((path) => statSync(join(ROOT, path)).mtimeMs > built)) return { full: false };
  // An output deleted since: tsc's incremental state would not write it again.
  if (inputs.some((path) => !existsSync(join(ROOT, 'dist', 'lib', path.replace(/^src\//, '').replace(/\.ts$/, '.js'))))) return { full: true };
  if (PROGRAMS.some((name) => !existsSync(join(ROOT, 'dist', `${name}.js`)))) return { full: false };
  return undefined;
}

const inputs = sources();
const build = buildNeeded(inputs);
if (build) {
  if (build.full) rmSync(join(ROOT, 'dist', 'lib', '.tsbuildinfo'), { force: true });
  // No stamp while tsc runs: after a failed or interrupted build the next one always runs.
  rmSync(STAMP, { force: true });
  // The stamp carries the time the build started: a source saved while tsc ran is newer than it.
  const started = new Date();
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  if (tsc.status !== 0) process.exit(tsc.status ?? 1);
  await bundlePrograms(ROOT);
  writeFileSync(STAMP, inputs.join('\n'));
  utimesSync(STAMP, started, started);
}
