import Sequencer from '@jest/test-sequencer';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
/**
 * Per file, its wall time and the machine's CPU while it ran alone (`node bench/suite-files.mjs
 * --write` measures and writes them).
 */
const measured = JSON.parse(readFileSync(new URL('./test-durations.json', import.meta.url), 'utf8'));

/** A file that keeps about a core busy or more while it runs: it computes more than it waits. */
export const computes = ({ wall, cpu }) => cpu >= 0.9 * wall;

/**
 * The order for files with measured `wall` and `cpu`: those that compute, the most CPU first,
 * each followed by the longest of those that mostly wait (retry schedules, leases, ring timeouts).
 * With more workers than cores (four on two), a file that computes then mostly runs beside files
 * that leave it a core, instead of beside others that each want both.
 */
export function computingBesideWaiting(files) {
  const computing = files.filter(computes).sort((a, b) => b.cpu - a.cpu);
  const waiting = files.filter((f) => !computes(f)).sort((a, b) => b.wall - a.wall);
  const order = [];
  while (computing.length || waiting.length) {
    if (computing.length) order.push(computing.shift());
    if (waiting.length) order.push(waiting.shift());
  }
  return order;
}

/**
 * Files that failed last time first (jest's rule), then files with no measurement (new ones:
 * jest's order, by its cached time or their size), then the measured ones computing beside
 * waiting. By jest's order alone (the longest first), the system tests, which each keep the
 * cores busy, ran two at a time at the start of every run.
 */
export default class ComputingBesideWaiting extends Sequencer {
  sort(tests) {
    const jestOrder = super.sort(tests);
    const figures = (test) => measured[relative(root, test.path)];
    const first = [];
    const measuredTests = [];
    for (const test of jestOrder) {
      const figure = figures(test);
      if (this.hasFailed(test) || !figure) first.push(test);
      else measuredTests.push({ test, wall: figure.seconds, cpu: figure.cpu });
    }
    return [...first, ...computingBesideWaiting(measuredTests).map(({ test }) => test)];
  }
}
