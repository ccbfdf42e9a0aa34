// CPU time by process over a window, from /proc/<pid>/stat (utime + stime, all threads), grouped
// into what a benchmark is made of: the app's roles, PostgreSQL backends by database user, Redis,
// the benchmark itself. Run it beside a benchmark, e.g. during `node bench/e2e.mjs --timed-only`:
//   node bench/cpu-by-process.mjs --seconds 20
// Percentages are of one core (two cores busy = 200%). Linux only; reads nothing but /proc.
import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '20' } } });
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

function group(cmdline) {
  if (cmdline.includes('dist/main.js')) return `app ${cmdline.split('dist/main.js')[1].trim().split(' ')[0]}`;
  if (cmdline.startsWith('postgres:')) {
    // "postgres: [15/main: ]user database host activity", or a background process's name
    const words = cmdline.slice('postgres:'.length).trim().split(' ').filter((w) => !/^\d+\/\w+:$/.test(w));
    return `postgres ${words[0]}`;
  }
  if (cmdline.includes('redis-server')) return 'redis';
  if (cmdline.includes('bench/')) return `bench ${cmdline.split('bench/')[1].split(' ')[0]}`;
  return 'other';
}

/** pid → { ticks, group } for every process readable now. */
function snapshot() {
  const out = new Map();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      out.set(pid, { ticks, group: group(cmdline) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const before = snapshot();
const started = performance.now();
await new Promise((r) => setTimeout(r, Number(values.seconds) * 1000));
const after = snapshot();
const wall = (performance.now() - started) / 1000;
const byGroup = new Map();
for (const [pid, { ticks, group: name }] of after) {
  const used = ticks - (before.get(pid)?.ticks ?? 0);
  byGroup.set(name, (byGroup.get(name) ?? 0) + used);
}
const rows = [...byGroup].filter(([, t]) => t > 0).sort((a, b) => b[1] - a[1]);
const pct = (t) => `${((100 * t) / TICKS_PER_SECOND / wall).toFixed(1)}%`;
console.log(`CPU by process over ${wall.toFixed(1)} s (100% = one core)`);
for (const [name, t] of rows) console.log(`${pct(t).padStart(7)}  ${name}`);
console.log(`${pct(rows.reduce((a, [, t]) => a + t, 0)).padStart(7)}  total`);
