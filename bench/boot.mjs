// bench/boot.mjs — what one start of the built program costs: `node dist/main.js <role>` from
// spawn to its "onceline <role> started" line, wall time and the process's CPU (user + system,
// from /proc) at that moment, per role, N starts each, one at a time on a migrated database.
// The system tests start such processes dozens of times per `npm test` (clusters, restarts after a
// SIGKILL, npm start, the sandbox), so this is the price of each. Builds nothing: `npm run build` first.
// Usage: node bench/boot.mjs [--starts 5] [--roles api,worker,relay,sandbox]
import { parseArgs } from 'node:util';
import { cpuSecondsOf, fmt, freePort, freshDatabase, machine, percentile, REDIS_URL, startRole } from './lib.mjs';

const { values } = parseArgs({ options: { starts: { type: 'string', default: '5' }, roles: { type: 'string', default: 'api,worker,relay,sandbox' } } });
const STARTS = Number(values.starts);
const ROLES = values.roles.split(',');
const db = await freshDatabase('bench_boot');
const rows = [];
try {
  for (const role of ROLES) {
    const walls = [];
    const cpus = [];
    for (let i = 0; i < STARTS; i++) {
      const port = await freePort();
      const env = { DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: `benchboot${port}`, PORT: String(port), SANDBOX_PORT: String(port), LOG_LEVEL: 'warn' };
      const t0 = performance.now();
      const started = await startRole(role, env, { readyLine: new RegExp(`onceline ${role} started`) });
      walls.push(performance.now() - t0);
      cpus.push(cpuSecondsOf(started.child.pid) * 1000);
      await started.stop();
    }
    rows.push({ role, walls, cpus });
  }
} finally {
  await db.drop();
}

console.log(`\n## Starts of the built program (${new Date().toISOString()})\nmachine: ${machine()}\ncommand: node bench/boot.mjs --starts ${STARTS} --roles ${ROLES.join(',')}\n`);
console.log('| role | spawn → "started" p50 / max, ms | its CPU by then p50 / max, ms |\n|---|---|---|');
for (const { role, walls, cpus } of rows) {
  console.log(`| ${role} | ${fmt(percentile(walls, 50))} / ${fmt(Math.max(...walls))} | ${fmt(percentile(cpus, 50))} / ${fmt(Math.max(...cpus))} |`);
}
