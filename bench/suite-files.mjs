// bench/suite-files.mjs — what each test file costs, and what that allows the whole suite: runs
// `npm test` with one file at a time (--maxWorkers=1) and, per file, its wall time and the whole
// machine's CPU meanwhile (bench/suite-files-reporter.mjs: PostgreSQL, Redis and every process the
// file starts count). Then the floor those figures set for N workers on this machine's cores: a
// model where the files running at once share the cores in proportion to what each asks for
// (its CPU over its wall time alone), for jest's order (the longest first) and for the sequencer's
// (test/support/sequencer.mjs: a file that mostly waits beside one that mostly computes). The model has no cost for
// running things at once (caches, locks, connection queues), so real runs take longer than it
// says: it is a lower bound, for asking "could more workers or another order reach a time?".
// Usage: node bench/suite-files.mjs [--top 25] [--workers 2,3,4] [--from saved.json] [--write] [-- jest args]
//   --write keeps the figures for the sequencer (test/support/test-durations.json: each file's wall
//   time and CPU), which orders a fresh clone's run by them (test/support/sequencer.mjs).
//   --from reads the rows of an earlier run (SUITE_FILES_OUT of it, /tmp/suite-files.json by default)
//   instead of running the suite. Linux only; about 5.5 minutes on a 2-core machine.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { computingBesideWaiting } from '../test/support/sequencer.mjs';
import { machine, ROOT } from './lib.mjs';

const dashes = process.argv.indexOf('--');
const { values } = parseArgs({
  args: process.argv.slice(2, dashes >= 0 ? dashes : undefined),
  options: { top: { type: 'string', default: '25' }, workers: { type: 'string', default: '2,3,4' }, from: { type: 'string' }, write: { type: 'boolean', default: false } },
});
const extraJestArgs = dashes >= 0 ? process.argv.slice(dashes + 1) : [];
const OUT = '/tmp/suite-files.json';

if (!values.from) {
  // An earlier run's rows must not pass for this one's if it fails before its first file.
  rmSync(OUT, { force: true });
  const run = spawnSync(
    process.execPath,
    // The caller's arguments first: jest's --reporters takes every value after it, file paths included.
    [join(ROOT, 'scripts', 'test.mjs'), ...extraJestArgs, '--maxWorkers=1', '--reporters=default', `--reporters=${join(ROOT, 'bench', 'suite-files-reporter.mjs')}`],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, SUITE_FILES_OUT: OUT } },
  );
  if (run.status !== 0) console.log(`\n(npm test exited ${run.status}: the figures below are of the files that ran)`);
}
const rows = JSON.parse(readFileSync(values.from ?? OUT, 'utf8'));

/**
 * The suite's wall time in the model: `workers` files at a time, taken in `order`; each running
 * file asks for cpu / wall cores (at most all of them), and when the asks add up to more than the
 * cores each gets its share in proportion, its progress slowed by as much.
 */
function modelledWall(order, workers, cores) {
  // A file's wall time alone (never 0, so its ask stays finite) and the share of it still to run.
  const queue = order.map((row) => ({ wall: Math.max(row.wall, 0.001), ask: Math.min(row.cpu / Math.max(row.wall, 0.001), cores), left: 1 }));
  const running = [];
  let t = 0;
  let busy = 0;
  while (queue.length || running.length) {
    while (running.length < workers && queue.length) running.push(queue.shift());
    const demand = running.reduce((sum, r) => sum + r.ask, 0);
    const share = demand > cores ? cores / demand : 1;
    const step = Math.min(...running.map((r) => (r.left * r.wall) / share));
    for (const r of running) r.left -= (step * share) / r.wall;
    busy += step * Math.min(demand, cores);
    t += step;
    for (let i = running.length - 1; i >= 0; i--) if (running[i].left <= 1e-9) running.splice(i, 1);
  }
  return { wall: t, busy: busy / (t * cores) };
}

const cores = availableParallelism();
const sum = (key) => rows.reduce((s, r) => s + r[key], 0);
const fmt = (n) => n.toFixed(1);
console.log(`\n## Test files one at a time (${new Date().toISOString()})\nmachine: ${machine()}\ncommand: node bench/suite-files.mjs${values.from ? ` --from ${values.from}` : ''}\n`);
console.log(`${rows.length} files${rows.some((r) => r.failed) ? ` (${rows.filter((r) => r.failed).length} with a failure)` : ''}: ${fmt(sum('wall'))} s of wall time one after another, ${fmt(sum('cpu'))} core-s of the machine's CPU (the floor on ${cores} cores: ${fmt(sum('cpu') / cores)} s)\n`);
console.log(`| file | machine CPU, core-s | wall, s | cores it asks for |\n|---|---|---|---|`);
for (const r of [...rows].sort((a, b) => b.cpu - a.cpu).slice(0, Number(values.top))) {
  console.log(`| ${r.file} | ${fmt(r.cpu)} | ${fmt(r.wall)} | ${(r.cpu / Math.max(r.wall, 0.001)).toFixed(2)} |`);
}
const rest = [...rows].sort((a, b) => b.cpu - a.cpu).slice(Number(values.top));
if (rest.length) console.log(`| the other ${rest.length} files | ${fmt(rest.reduce((s, r) => s + r.cpu, 0))} | ${fmt(rest.reduce((s, r) => s + r.wall, 0))} | |`);

console.log(`\nThe model's suite time on ${cores} cores (a lower bound: no cost for running at once), s (cores busy):\n`);
console.log('| workers | the longest first (jest\'s order) | computing beside waiting (the sequencer\'s) |\n|---|---|---|');
const longestFirst = [...rows].sort((a, b) => b.wall - a.wall);
for (const workers of values.workers.split(',').map(Number)) {
  const a = modelledWall(longestFirst, workers, cores);
  const b = modelledWall(computingBesideWaiting(rows), workers, cores);
  console.log(`| ${workers} | ${fmt(a.wall)} (${Math.round(a.busy * 100)} %) | ${fmt(b.wall)} (${Math.round(b.busy * 100)} %) |`);
}

if (values.write) {
  // One file a line, the most CPU first.
  const lines = [...rows]
    .sort((a, b) => b.cpu - a.cpu)
    .map((r) => ` ${JSON.stringify(r.file)}: ${JSON.stringify({ seconds: Math.round(r.wall * 10) / 10, cpu: Math.round(r.cpu * 10) / 10 })}`);
  writeFileSync(join(ROOT, 'test', 'support', 'test-durations.json'), `{\n${lines.join(',\n')}\n}\n`);
  console.log(`\ntest/support/test-durations.json: ${rows.length} files`);
}
