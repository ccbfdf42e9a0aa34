// What the bench databases' backends wait on: samples pg_stat_activity every few ms while another
// bench runs beside it, and counts each wait (its type, its event, the statement's first
// characters) with the longest time its statement had run when seen. Loopback only.
//   node bench/wait-events.mjs [--ms 25000] [--every 3] [--like onceline_bench%] & node bench/calls.mjs --calls 5 --rounds 10
// (issue #43: the 5-call tail's waits were the commits' WAL flushes, IO:WALSync and LWLock:WALWrite.)
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PG_BASE } from './lib.mjs';

const { values } = parseArgs({ options: { ms: { type: 'string', default: '25000' }, every: { type: 'string', default: '3' }, like: { type: 'string', default: 'onceline_bench%' } } });
const client = new pg.Client({ connectionString: PG_BASE });
await client.connect();
const seen = new Map();
const until = Date.now() + Number(values.ms);
let samples = 0;
while (Date.now() < until) {
  const { rows } = await client.query(
    `SELECT wait_event_type || ':' || wait_event AS wait, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS statement,
            extract(epoch FROM clock_timestamp() - query_start) * 1000 AS ms
       FROM pg_stat_activity
      WHERE datname LIKE $1 AND state = 'active' AND wait_event_type IS NOT NULL AND wait_event_type <> 'Client'`,
    [values.like],
  );
  samples++;
  for (const row of rows) {
    const key = `${row.wait} | ${row.statement}`;
    const entry = seen.get(key) ?? { count: 0, longest: 0 };
    entry.count++;
    entry.longest = Math.max(entry.longest, row.ms);
    seen.set(key, entry);
  }
  await new Promise((resolve) => setTimeout(resolve, Number(values.every)));
}
await client.end();
console.log(`${samples} samples over ${values.ms} ms of the backends of databases like '${values.like}'\n`);
console.log('| seen | its statement had run (longest) | wait | statement |\n|---|---|---|---|');
for (const [key, { count, longest }] of [...seen].sort((a, b) => b[1].count - a[1].count).slice(0, 20)) {
  const [wait, statement] = key.split(' | ');
  console.log(`| ${count} | ${longest.toFixed(1)} ms | ${wait} | \`${statement.replaceAll('|', '\\|')}\` |`);
}
