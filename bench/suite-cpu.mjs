// bench/suite-cpu.mjs — where a command's CPU goes, by kind of process: runs the command (by
// default `npm test`) and samples /proc every 200 ms meanwhile, keeping each process's highest
// user + system CPU, then sums them by kind: the built program by role (`dist/main.js <role>`),
// the CLI and the tests' CLI host, the jest workers, PostgreSQL (the machine's and private ones),
// Redis, and the rest of the machine. Plus the whole machine's busy and idle core-seconds from
// /proc/stat. A process that lives less than a sample is missed and one's last 200 ms may be: the
// figures are a floor, for comparing runs of the same suite, not an account to the millisecond.
// Processes already running when the command starts (the machine's PostgreSQL, Redis) count from then.
// Usage: node bench/suite-cpu.mjs [-- command args...]   (Linux only)
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { machineCpuSeconds, procStat, ROOT } from './lib.mjs';

const dashes = process.argv.indexOf('--');
const [command, ...args] = dashes >= 0 ? process.argv.slice(dashes + 1) : ['npm', 'test'];

function kindOf(cmdline) {
  const role = cmdline.match(/dist\/(?:lib\/)?main\.js (\w+)/);
  if (role) return `node dist/main.js ${role[1]}`;
  if (/dist\/(?:lib\/)?cli\.js|cli-host\.mjs/.test(cmdline)) return 'admin CLI (dist/cli.js, the tests\' CLI host)';
  if (/jest-light-runner|tinypool|jest-worker|node_modules\/\.bin\/jest|jest\/bin/.test(cmdline)) return 'jest (workers and parent)';
  if (/^postgres|\/postgres /.test(cmdline) || cmdline.startsWith('postgres:')) return 'PostgreSQL';
  if (/redis-server/.test(cmdline)) return 'Redis';
  if (/esbuild|typescript\/bin\/tsc|scripts\/build\.mjs/.test(cmdline)) return 'build (swc, esbuild; tsc of typecheck)';
  return 'everything else on the machine';
}

const seen = new Map();
/** The first sample, before the command starts: what processes already running had used by then is not the command's. */
function sample(baseline = false) {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const { cpuSeconds: cpu, startTicks } = procStat(pid);
      const key = `${pid}:${startTicks}`; // a reused pid is another process
      let entry = seen.get(key);
      if (!entry) {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
        if (!cmdline) continue; // kernel threads
        entry = { kind: kindOf(cmdline), cpu: 0, before: 0 };
        seen.set(key, entry);
      }
      if (baseline) entry.before = cpu;
      entry.cpu = Math.max(entry.cpu, cpu - entry.before);
    } catch {
      // it exited between readdir and read
    }
  }
}

sample(true);
const before = machineCpuSeconds();
const started = performance.now();
const child = spawn(command, args, { cwd: ROOT, stdio: 'inherit' });
const timer = setInterval(sample, 200);
const code = await new Promise((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
clearInterval(timer);
sample();
const after = machineCpuSeconds();

const byKind = new Map();
for (const { kind, cpu } of seen.values()) {
  const sum = byKind.get(kind) ?? { cpu: 0, processes: 0 };
  sum.cpu += cpu;
  sum.processes++;
  byKind.set(kind, sum);
}
console.log(`\n## CPU by kind of process (${new Date().toISOString()})\ncommand: ${[command, ...args].join(' ')} (exit ${code}), ${((performance.now() - started) / 1000).toFixed(1)} s`);
console.log(`whole machine: busy ${(after.busy - before.busy).toFixed(0)} core-s, idle ${(after.idle - before.idle).toFixed(0)} core-s\n`);
console.log('| processes of | CPU, s | processes seen |\n|---|---|---|');
for (const [kind, { cpu, processes }] of [...byKind].sort((a, b) => b[1].cpu - a[1].cpu)) console.log(`| ${kind} | ${cpu.toFixed(1)} | ${processes} |`);
process.exit(code);
