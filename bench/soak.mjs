// bench/soak.mjs — a soak of the time-partitioned tables (docs/retention.md) with the partition
// period compressed: inbound Telnyx SMS at a steady rate into the real app (`node dist/main.js
// all`, its relay making and dropping partitions), a partition a minute, carrier_events and
// outbox_jobs kept 3 minutes. Every event whose first delivery lands in the last 1.5 s before a
// boundary is delivered again (re-signed, meta.attempt 2) 2 s later, across the boundary, and 2%
// of the others a second time soon after. Samples every 15 s: rows and bytes of each partitioned
// table (all partitions), WAL written. At the end: every first delivery answered `accepted` and
// every repeat `duplicate` (0 doubled), one message per event (0 lost), `verify` ok.
// Usage: npm run build && node bench/soak.mjs [-- --minutes 12 --rate 20]. Loopback only, bounded.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createAccountWithNumber, fmt, freePort, freshDatabase, machine, REDIS_URL, request, ROOT, startRole, telnyxHeaders, telnyxKeyPair } from './lib.mjs';
import { startPrivatePostgres } from './private-pg.mjs';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '12' }, rate: { type: 'string', default: '20' } } });
const MINUTES = Number(values.minutes);
const RATE = Number(values.rate);
const PERIOD_S = 60;
const RETENTION_H = 3 / 60;
const NUMBER = '+15550100000';
const SAMPLE = JSON.parse(readFileSync(new URL('../test/fixtures/carriers/telnyx/message.received.json', import.meta.url), 'utf8'));

const deadline = setTimeout(() => {
  process.stderr.write(`soak: over ${MINUTES + 10} minutes, giving up\n`);
  process.exit(1);
}, (MINUTES + 10) * 60_000);
deadline.unref();

const { privateKey, publicKeyBase64 } = telnyxKeyPair();
// A private PostgreSQL cluster (the shared server's speed settings), so the WAL is the soak's own;
// BENCH_PRIVATE_PG=0: the shared server (its WAL then includes everyone's).
const privatePg = process.env.BENCH_PRIVATE_PG === '0' ? undefined : await startPrivatePostgres();
const db = await freshDatabase('onceline_bench_soak', privatePg?.baseUrl);
const pool = new pg.Pool({ connectionString: db.url, max: 3 });
// The migration's daily partitions are empty: minute ones instead, from this minute on (the
// relay's maintenance keeps PARTITIONS_AHEAD of them ahead from there).
for (const table of ['carrier_events', 'outbox_jobs']) {
  for (const { name } of (await pool.query(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass`, [table])).rows) {
    await pool.query(`DROP TABLE ${name}`);
  }
  const minute = Math.floor(Date.now() / 60_000) * 60_000;
  for (let m = 0; m < 3; m++) await pool.query(`SELECT onceline_add_partition($1, $2, $3)`, [table, new Date(minute + m * 60_000), new Date(minute + (m + 1) * 60_000)]);
}
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env = {
  DATABASE_URL: db.url,
  REDIS_URL,
  QUEUE_PREFIX: `benchsoak${port}`,
  PORT: String(port),
  LOG_LEVEL: 'warn',
  TELNYX_PUBLIC_KEY: publicKeyBase64,
  PARTITION_PERIOD_SECONDS: String(PERIOD_S),
  CARRIER_EVENTS_RETENTION_HOURS: String(RETENTION_H),
  OUTBOX_RETENTION_HOURS: String(RETENTION_H),
  PARTITIONS_AHEAD: '2',
};
const app = await startRole('all', env, { readyUrl: `${base}/health/ready` });

const samples = [];
const answers = { first: { accepted: 0, duplicate: 0, other: 0 }, repeat: { accepted: 0, duplicate: 0, other: 0 } };
let straddling = 0;
const sent = new Set();
const pending = [];

function deliver(key, carrierMessageId, attempt) {
  const body = JSON.stringify({
    data: { ...SAMPLE.data, id: key, occurred_at: new Date().toISOString(), payload: { ...SAMPLE.data.payload, id: carrierMessageId, to: [{ phone_number: NUMBER, status: 'webhook_delivered' }], text: `soak ${key}` } },
    meta: { attempt, delivered_to: `${base}/webhooks/telnyx` },
  });
  const tally = attempt === 1 ? answers.first : answers.repeat;
  const p = request(`${base}/webhooks/telnyx`, { method: 'POST', headers: telnyxHeaders(privateKey, body), body }).then(
    (res) => {
      const status = res.status === 200 ? JSON.parse(res.body).status : undefined;
      tally[status === 'accepted' || status === 'duplicate' ? status : 'other']++;
    },
    () => tally.other++,
  );
  pending.push(p);
}

async function sample() {
  const sizes = {};
  for (const table of ['carrier_events', 'outbox_jobs']) {
    const { rows } = await pool.query(
      `SELECT count(*)::int AS partitions, coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass`,
      [table],
    );
    const count = (await pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;
    sizes[table] = { rows: count, bytes: Number(rows[0].bytes), partitions: rows[0].partitions };
  }
  const wal = (await pool.query(`SELECT pg_current_wal_lsn() AS lsn`)).rows[0].lsn;
  samples.push({ at: Date.now(), wal, ...sizes });
}

try {
  await createAccountWithNumber(base, env, { phoneNumber: NUMBER, carrier: 'telnyx' });
  const started = Date.now();
  const end = started + MINUTES * 60_000;
  let nextSample = started;
  for (let i = 0; Date.now() < end; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (Date.now() >= nextSample) {
      nextSample += 15_000;
      await sample();
    }
    const key = randomUUID();
    const carrierMessageId = randomUUID();
    sent.add(key);
    deliver(key, carrierMessageId, 1);
    const toBoundary = PERIOD_S * 1000 - (Date.now() % (PERIOD_S * 1000));
    if (toBoundary < 1500) {
      straddling++;
      setTimeout(() => deliver(key, carrierMessageId, 2), 2000);
    } else if (Math.random() < 0.02) {
      setTimeout(() => deliver(key, carrierMessageId, 2), 500 + Math.random() * 3000);
    }
    if (pending.length > 5000) await Promise.all(pending.splice(0));
  }
  await new Promise((r) => setTimeout(r, 4000));
  await Promise.all(pending.splice(0));
  // Processing catches up: every event a message.
  const until = Date.now() + 120_000;
  let messages = 0;
  while (Date.now() < until) {
    messages = (await pool.query(`SELECT count(*)::int AS n FROM messages WHERE direction = 'inbound'`)).rows[0].n;
    if (messages >= sent.size) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  await sample();
  const doubledMessages = (await pool.query(`SELECT count(*)::int AS n FROM (SELECT carrier_message_id FROM messages GROUP BY 1 HAVING count(*) > 1) d`)).rows[0].n;
  const verify = JSON.parse(execFileSync(process.execPath, ['dist/cli.js', 'verify', '--json'], { cwd: ROOT, env: { ...process.env, ...env } }).toString());
  const walBytes = Number((await pool.query(`SELECT pg_wal_lsn_diff($1, $2)::bigint AS b`, [samples.at(-1).wal, samples[0].wal])).rows[0].b);

  const mib = (b) => fmt(b / 2 ** 20, 2);
  const lines = [
    `soak: ${MINUTES} min of inbound Telnyx SMS at ${RATE}/s, a partition a minute, carrier_events and outbox_jobs kept ${RETENTION_H * 60} min; ${privatePg ? 'private PostgreSQL cluster' : 'shared PostgreSQL'}; ${machine()}`,
    '  t (s)  carrier_events rows / MiB / partitions   outbox_jobs rows / MiB / partitions',
    ...samples.map((s) => `  ${String(Math.round((s.at - started) / 1000)).padStart(5)}  ${String(s.carrier_events.rows).padStart(7)} / ${mib(s.carrier_events.bytes).padStart(6)} / ${s.carrier_events.partitions}   ${String(s.outbox_jobs.rows).padStart(14)} / ${mib(s.outbox_jobs.bytes).padStart(6)} / ${s.outbox_jobs.partitions}`),
    `  events ${sent.size}; first deliveries: ${answers.first.accepted} accepted, ${answers.first.duplicate} duplicate, ${answers.first.other} other; repeats: ${answers.repeat.duplicate} duplicate, ${answers.repeat.accepted} accepted (doubled), ${answers.repeat.other} other; ${straddling} repeats straddled a boundary`,
    `  messages ${messages} (lost: ${sent.size - messages}), doubled messages ${doubledMessages}; verify ok: ${verify.ok} (${verify.broken} broken); WAL ${mib(walBytes)} MiB, ${fmt(walBytes / sent.size, 0)} bytes per event`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (answers.repeat.accepted > 0 || sent.size !== messages || doubledMessages > 0 || !verify.ok) process.exitCode = 1;
} finally {
  await pool.end();
  await app.stop();
  await db.drop();
  privatePg?.stop();
}
