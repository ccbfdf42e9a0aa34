// bench/jest-boot.mjs — the floor under `npm test`'s time on this machine: what one integration
// test file costs before its first test, measured on N copies of bench/jest-boot/boot.test.ts run
// one after another in one jest worker. The first file of a worker imports the app's module graph;
// the files after it reuse it (jest-light-runner: one module registry per worker process; jest's
// own runner gave every file a registry of its own, so each imported the graph again). With the
// suite's file count, it says how much of a run's CPU no test-level change can save. Builds
// nothing; run `npm run build` first.
// Usage: node bench/jest-boot.mjs [--files 6]
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fmt, machine, percentile, ROOT } from './lib.mjs';

const { values } = parseArgs({ options: { files: { type: 'string', default: '6' } } });
const FILES = Number(values.files);
const dir = join(ROOT, 'bench', 'jest-boot');
const copies = Array.from({ length: FILES }, (_, i) => join(dir, `copy-${i}.test.ts`));
const out = join(mkdtempSync(join(tmpdir(), 'onceline-jest-boot-')), 'times.jsonl');
for (const copy of copies) copyFileSync(join(dir, 'boot.test.ts'), copy);
try {
  const jestConfig = (await import(join(ROOT, 'jest.config.js'))).default;
  const config = jestConfig.projects.find((p) => p.displayName === 'integration');
  const run = spawnSync('npx', ['jest', '--config', JSON.stringify({ ...config, rootDir: ROOT, testMatch: ['<rootDir>/bench/jest-boot/copy-*.test.ts'] }), '--runInBand'], {
    cwd: ROOT,
    env: { ...process.env, BENCH_JEST_BOOT_OUT: out },
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`jest failed:\n${run.stdout}\n${run.stderr}`);
  const rows = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  // The first file also compiles the TypeScript (swc's cache may be cold): left out.
  const warm = rows.slice(1);
  const p50 = (key) => fmt(percentile(warm.map((r) => r[key]), 50));
  const total = warm.map((r) => r.import + r.database + r.app + r.teardown);
  const files = readdirSync(join(ROOT, 'test'), { recursive: true }).filter((f) => String(f).endsWith('.test.ts')).length;
  console.log(`\n## Jest: what an integration test file costs before its first test (${new Date().toISOString()})\nmachine: ${machine()}\ncommand: node bench/jest-boot.mjs --files ${FILES}\n`);
  console.log('| measure (p50 of the files after the first) | ms |\n|---|---|');
  console.log(`| the first file: import of the app's module graph (once per worker) | ${fmt(rows[0].import)} |`);
  console.log(`| import of the app's module graph into the file's registry | ${p50('import')} |`);
  console.log(`| its database cloned from the template | ${p50('database')} |`);
  console.log(`| the app started (Nest, pools, Redis) | ${p50('app')} |`);
  console.log(`| closed, database dropped | ${p50('teardown')} |`);
  console.log(`| in all, per file | ${fmt(percentile(total, 50))} |`);
  console.log(`| × the ${files} integration files of test/ | ${fmt((percentile(total, 50) * files) / 1000)} s, on one core |`);
} finally {
  for (const copy of copies) rmSync(copy, { force: true });
  rmSync(join(out, '..'), { recursive: true, force: true });
}
