// What PostgreSQL's busy backends are doing, sampled from pg_stat_activity over a window: the share
// of samples on CPU (no wait event) and in each wait (Lock/tuple, LWLock/WALWrite, IO/WALSync...),
// by database user, with the statements most often seen waiting. Run it beside a benchmark, e.g.
// during `node bench/e2e.mjs --timed-only` (which prints its private cluster's port):
//   node bench/pg-waits.mjs --url postgres://postgres@127.0.0.1:PORT/postgres --seconds 20
// Samples every --interval-ms (default 20) on one connection; loopback only.
import { parseArgs } from 'node:util';
import pg from 'pg';

const { values } = parseArgs({
  options: { url: { type: 'string' }, seconds: { type: 'string', default: '20' }, 'interval-ms': { type: 'string', default: '20' } },
});
if (!values.url || !/^postgres(ql)?:\/\/[^@]*@(127\.0\.0\.1|localhost)[:/]/.test(values.url)) {
  throw new Error('--url postgres://user@127.0.0.1:PORT/db (loopback only)');
}

const client = new pg.Client({ connectionString: values.url });
await client.connect();
const byWait = new Map();
const byStatement = new Map();
let samples = 0;
let busy = 0;
const deadline = Date.now() + Number(values.seconds) * 1000;
while (Date.now() < deadline) {
  const { rows } = await client.query(
    `SELECT usename AS user, coalesce(wait_event_type || '/' || wait_event, 'CPU') AS wait, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS query
       FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
  );
  samples++;
  busy += rows.length;
  for (const r of rows) {
    const key = `${r.user} ${r.wait}`;
    byWait.set(key, (byWait.get(key) ?? 0) + 1);
    if (r.wait !== 'CPU') byStatement.set(`${r.wait} ${r.query}`, (byStatement.get(`${r.wait} ${r.query}`) ?? 0) + 1);
  }
  await new Promise((resolve) => setTimeout(resolve, Number(values['interval-ms'])));
}
await client.end();

const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
console.log(`pg-waits: ${samples} samples, ${(busy / samples).toFixed(2)} active backends on average`);
console.log('| user, state | backends on average | share of active |\n|---|---|---|');
for (const [key, n] of top(byWait, 20)) console.log(`| ${key} | ${(n / samples).toFixed(2)} | ${((100 * n) / busy).toFixed(1)}% |`);
console.log('\n| wait, statement | backends on average |\n|---|---|');
for (const [key, n] of top(byStatement, 15)) console.log(`| ${key.replaceAll('|', '\\|')} | ${(n / samples).toFixed(2)} |`);
