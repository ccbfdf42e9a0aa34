import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** TEMPORARY (issue #43 phase 3 profile): ONCELINE_WAIT_TRACE=<file> records when each job passed each point. */
const file = process.env.ONCELINE_WAIT_TRACE;
const marks = new Map<string, Record<string, number>>();
const aliases = new Map<string, string>();
const loop = file ? monitorEventLoopDelay({ resolution: 5 }) : undefined;
loop?.enable();
const now = () => performance.timeOrigin + performance.now();

export const tracing = file !== undefined;

export function mark(id: string | undefined, point: string, value?: number): void {
  if (!file || id === undefined) return;
  let m = marks.get(id);
  if (!m) marks.set(id, (m = {}));
  if (!(point in m)) m[point] = value ?? now();
}

const samples = new Map<string, number[]>();
export function sample(name: string, value: number): void {
  if (!file) return;
  let s = samples.get(name);
  if (!s) samples.set(name, (s = []));
  s.push(value);
}
export const clock = now;

export function alias(from: string, to: string): void {
  if (file) aliases.set(from, to);
}

if (file) {
  process.on('exit', () => {
    const q = (p: number) => loop!.percentile(p) / 1e6;
    writeFileSync(file, JSON.stringify({ marks: Object.fromEntries(marks), aliases: Object.fromEntries(aliases), samples: Object.fromEntries(samples), loop: { p50: q(50), p99: q(99), max: loop!.max / 1e6, mean: loop!.mean / 1e6 } }));
  });
}
