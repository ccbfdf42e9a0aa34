// bench/soak.mjs — a soak of the time-partitioned tables (docs/retention.md) with the partition
// period compressed: the real app (`node dist/main.js all`, its relay making and dropping
// partitions) and the carrier sandbox (`node dist/main.js sandbox`, playing Telnyx: it takes the
// sends, answers with receipts, plays the calls), a partition a minute, every partitioned table
// kept 3 minutes. Three kinds of traffic at steady rates:
// - inbound Telnyx SMS signed by the bench (--rate): every event whose first delivery lands in the
//   last 1.5 s before a boundary is delivered again (re-signed, meta.attempt 2) 2 s later, across
//   the boundary, and 2% of the others a second time soon after;
// - outbound SMS (--outbound-rate): POST /v2/messages, the sandbox's receipts (message.sent,
//   message.finalized) come back as carrier events;
// - inbound calls (--call-rate) through a two-target ring plan: the first target rings out, the
//   second answers and talks (the sandbox's time scale 0.02: a 20 s ring takes 0.4 s).
// Every customer event goes to a local endpoint (all event types); each minute's usage is exported
// (`usage:export`) once it has ended, 20 s and 80 s after, so the ledger's partitions may go too.
// Samples every 15 s: rows and
// bytes of each hot table (all partitions), WAL written. At the end: every inbound first delivery
// answered `accepted` and every repeat `duplicate` (0 doubled), one message per event (0 lost),
// every outbound message delivered once at the sandbox, every call ended, `verify` ok; WAL per
// event (carrier events stored plus API sends).
// BENCH_APP_ROOT=<another checkout, built>: the same soak against that commit's app (a "before"
// run; tables that are not partitioned there are only sampled, and grow).
// Usage: npm run build && node bench/soak.mjs [-- --minutes 12 --rate 20 --outbound-rate 5 --call-rate 0.5]. Loopback only, bounded.
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { APP_ROOT, createAccountWithNumber, fmt, freePort, freshDatabase, machine, REDIS_URL, request, ROOT, startRole, telnyxHeaders } from './lib.mjs';
import { startPrivatePostgres } from './private-pg.mjs';

const { values } = parseArgs({
  options: { minutes: { type: 'string', default: '12' }, rate: { type: 'string', default: '20' }, 'outbound-rate': { type: 'string', default: '5' }, 'call-rate': { type: 'string', default: '0.5' } },
});
const MINUTES = Number(values.minutes);
const RATE = Number(values.rate);
const OUTBOUND_RATE = Number(values['outbound-rate']);
const CALL_RATE = Number(values['call-rate']);
const PERIOD_S = 60;
const RETENTION_H = 3 / 60;
const NUMBER = '+15550100000';
const RINGS_OUT = '+15550107001';
const ANSWERS = '+15550107002';
const SAMPLE = JSON.parse(readFileSync(new URL('../test/fixtures/carriers/telnyx/message.received.json', import.meta.url), 'utf8'));
/** The tables that grow with traffic (issue #44), sampled whether partitioned or not. */
const HOT_TABLES = [
  'carrier_events', 'outbox_jobs', 'messages', 'message_status_history', 'outbound_events', 'webhook_deliveries', 'webhook_delivery_attempts',
  'usage_records', 'calls', 'call_legs', 'call_timeline', 'call_transcript_fragments', 'call_command_sends',
];
/** Every table's retention setting, compressed alike (a setting the app does not know is ignored). */
const RETENTION_SETTINGS = [
  'CARRIER_EVENTS_RETENTION_HOURS', 'OUTBOX_RETENTION_HOURS', 'MESSAGES_RETENTION_HOURS', 'CUSTOMER_EVENTS_RETENTION_HOURS',
  'WEBHOOK_DELIVERIES_RETENTION_HOURS', 'CALLS_RETENTION_HOURS',
  // The ledger's partitions go only after a matching usage:export covers them: the soak exports
  // each minute once it has ended (exportEndedPeriods), as an operator exports each month.
  'USAGE_RETENTION_HOURS',
];
/** An ended period is exported this long after its end, and again later (a row a transaction begun before the end recorded after the first export). */
const EXPORT_AFTER_MS = [20_000, 80_000];

const deadline = setTimeout(() => {
  process.stderr.write(`soak: over ${MINUTES + 10} minutes, giving up\n`);
  process.exit(1);
}, (MINUTES + 10) * 60_000);
deadline.unref();

// The sandbox signs Telnyx webhooks with its development key pair; the bench signs its own
// inbound SMS with the same key, so the app verifies both with one TELNYX_PUBLIC_KEY.
const { telnyxDevKeyPair } = await import(join(APP_ROOT, 'dist/lib/telephony/telnyx-dev-key.js'));
const devKey = telnyxDevKeyPair();
// A private PostgreSQL cluster (the shared server's speed settings), so the WAL is the soak's own;
// BENCH_PRIVATE_PG=0: the shared server (its WAL then includes everyone's).
const privatePg = process.env.BENCH_PRIVATE_PG === '0' ? undefined : await startPrivatePostgres();
const db = await freshDatabase('onceline_bench_soak', privatePg?.baseUrl);
const pool = new pg.Pool({ connectionString: db.url, max: 3 });
const partitioned = (await pool.query(`SELECT to_regclass('partitioned_tables') IS NOT NULL AS yes`)).rows[0].yes
  ? (await pool.query(`SELECT parent FROM partitioned_tables ORDER BY parent`)).rows.map((r) => r.parent)
  : [];
/** Whether the app exports its ledger (usage_exports, #44 phase 2): the soak then exports each ended minute. */
const hasUsageExport = (await pool.query(`SELECT to_regclass('usage_exports') IS NOT NULL AS yes`)).rows[0].yes;
const sampled = [];
for (const table of HOT_TABLES) if ((await pool.query(`SELECT to_regclass($1) IS NOT NULL AS yes`, [table])).rows[0].yes) sampled.push(table);
// The migration's daily partitions are empty: minute ones instead, from this minute on (the
// relay's maintenance keeps PARTITIONS_AHEAD of them ahead from there).
for (const table of partitioned) {
  for (const { name } of (await pool.query(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass`, [table])).rows) {
    await pool.query(`DROP TABLE ${name}`);
  }
  const minute = Math.floor(Date.now() / 60_000) * 60_000;
  for (let m = 0; m < 3; m++) await pool.query(`SELECT onceline_add_partition($1, $2, $3)`, [table, new Date(minute + m * 60_000), new Date(minute + (m + 1) * 60_000)]);
}

// The customer's endpoint: every event type, answered at once; counts deliveries per webhook-id.
const deliveriesById = new Map();
const endpoint = http.createServer((req, res) => {
  const id = req.headers['webhook-id'];
  if (id) deliveriesById.set(id, (deliveriesById.get(id) ?? 0) + 1);
  req.resume();
  req.on('end', () => res.writeHead(204).end());
});
await new Promise((r) => endpoint.listen(0, '127.0.0.1', r));

const port = await freePort();
const sandboxPort = await freePort();
const base = `http://127.0.0.1:${port}`;
const sandboxBase = `http://127.0.0.1:${sandboxPort}`;
const env = {
  DATABASE_URL: db.url,
  REDIS_URL,
  QUEUE_PREFIX: `benchsoak${port}`,
  PORT: String(port),
  SANDBOX_PORT: String(sandboxPort),
  LOG_LEVEL: 'warn',
  TELNYX_API_URL: `${sandboxBase}/v2`,
  TELNYX_PUBLIC_KEY: devKey.publicKey,
  // Outbound SMS are a steady load here, not a pacing test (bench/messaging-pacing.mjs).
  MESSAGE_SEND_RATE_DEFAULT: '1000',
  API_RATE_LIMIT_PER_MINUTE: '100000000',
  WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
  PARTITION_PERIOD_SECONDS: String(PERIOD_S),
  // The tables with a period of their own (the usage ledger, the call history), compressed alike.
  USAGE_PARTITION_PERIOD_SECONDS: String(PERIOD_S),
  CALLS_PARTITION_PERIOD_SECONDS: String(PERIOD_S),
  PARTITIONS_AHEAD: '2',
  // Before partitioning (BENCH_APP_ROOT of an older commit) the app's defaults: its outbox trim
  // took whole hours, at least 1, so within the soak it deletes nothing.
  ...(partitioned.length ? Object.fromEntries(RETENTION_SETTINGS.map((name) => [name, String(RETENTION_H)])) : {}),
};
const sandbox = await startRole('sandbox', { ...env, SANDBOX_RECEIPT_DELAY_MS: '200' }, { readyUrl: `${sandboxBase}/sandbox/health` });
const app = await startRole('all', env, { readyUrl: `${base}/health/ready` });

const samples = [];
const answers = { first: { accepted: 0, duplicate: 0, other: 0 }, repeat: { accepted: 0, duplicate: 0, other: 0 } };
const refused = { outbound: 0, calls: 0 };
let straddling = 0;
const sent = new Set();
const outbound = [];
let callsStarted = 0;
const pending = [];

function deliver(key, carrierMessageId, attempt) {
  const body = JSON.stringify({
    data: { ...SAMPLE.data, id: key, occurred_at: new Date().toISOString(), payload: { ...SAMPLE.data.payload, id: carrierMessageId, to: [{ phone_number: NUMBER, status: 'webhook_delivered' }], text: `soak ${key}` } },
    meta: { attempt, delivered_to: `${base}/webhooks/telnyx` },
  });
  const tally = attempt === 1 ? answers.first : answers.repeat;
  const p = request(`${base}/webhooks/telnyx`, { method: 'POST', headers: telnyxHeaders(devKey.privateKey, body), body }).then(
    (res) => {
      const status = res.status === 200 ? JSON.parse(res.body).status : undefined;
      tally[status === 'accepted' || status === 'duplicate' ? status : 'other']++;
    },
    () => tally.other++,
  );
  pending.push(p);
}

function sendOutbound(auth, i) {
  const body = JSON.stringify({ from: NUMBER, to: `+1555020${String(i % 10000).padStart(4, '0')}`, text: `soak out ${i}` });
  pending.push(request(`${base}/v2/messages`, { method: 'POST', headers: { ...auth, 'idempotency-key': `soak-${i}` }, body }).then(
    (res) => (res.status === 202 || res.status === 201 ? outbound.push(JSON.parse(res.body).id) : refused.outbound++),
    () => refused.outbound++,
  ));
}

function startCall(i) {
  const body = JSON.stringify({ from: `+1312555${String(i % 10000).padStart(4, '0')}`, to: NUMBER });
  pending.push(request(`${sandboxBase}/sandbox/calls/inbound`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(
    (res) => (res.status < 300 ? callsStarted++ : refused.calls++),
    () => refused.calls++,
  ));
}

/**
 * What the end checks count, gathered as it is seen: retention drops a message's or a call's
 * minute 3 minutes after it ends, so a count taken only at the end would call the dropped ones
 * lost. Read at every sample (15 s) and while waiting at the end: each row lives longer than that.
 */
const seen = { inbound: new Set(), delivered: new Set(), ended: new Set(), doubled: new Set() };
const SEEN_SQL = {
  inbound: `SELECT carrier_message_id AS k FROM messages WHERE direction = 'inbound'`,
  delivered: `SELECT id AS k FROM messages WHERE direction = 'outbound' AND status = 'delivered'`,
  ended: `SELECT id AS k FROM calls WHERE ended_at IS NOT NULL`,
  doubled: `SELECT carrier_message_id AS k FROM messages WHERE carrier_message_id IS NOT NULL GROUP BY 1 HAVING count(*) > 1`,
};
async function look(what) {
  for (const { k } of (await pool.query(SEEN_SQL[what])).rows) seen[what].add(k);
  return seen[what].size;
}

const exportDir = mkdtempSync(join(tmpdir(), 'onceline-soak-usage-'));
const exportsDone = new Set();
let exportsRun = 0;
let exportFailures = 0;
/** `usage:export --from --to` of every minute period that ended EXPORT_AFTER_MS ago (each once per delay). */
function exportEndedPeriods(firstPeriodStart) {
  if (!hasUsageExport) return;
  for (let from = firstPeriodStart; from + PERIOD_S * 1000 <= Date.now(); from += PERIOD_S * 1000) {
    const to = from + PERIOD_S * 1000;
    for (const delay of EXPORT_AFTER_MS) {
      const key = `${from} ${delay}`;
      if (to + delay > Date.now() || exportsDone.has(key)) continue;
      exportsDone.add(key);
      const args = ['dist/cli.js', 'usage:export', '--from', new Date(from).toISOString(), '--to', new Date(to).toISOString(), '--out', join(exportDir, `${from}-${delay}.jsonl`)];
      pending.push(promisify(execFile)(process.execPath, args, { cwd: APP_ROOT, env: { ...process.env, ...env } }).then(() => exportsRun++, () => exportFailures++));
    }
  }
}

async function sample() {
  for (const what of Object.keys(SEEN_SQL)) await look(what);
  const sizes = {};
  for (const table of sampled) {
    // A partitioned table: the sum over its partitions (pg_partition_tree); a plain one: itself (0 partitions).
    const { rows } = await pool.query(
      `SELECT count(*) FILTER (WHERE t.isleaf)::int AS partitions, coalesce(sum(pg_total_relation_size(t.relid)), 0)::bigint AS bytes
         FROM pg_class c, LATERAL (SELECT relid, isleaf FROM pg_partition_tree(c.oid) WHERE c.relkind = 'p'
                                   UNION ALL SELECT c.oid, false WHERE c.relkind <> 'p') t
        WHERE c.oid = $1::regclass`,
      [table],
    );
    const count = (await pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;
    sizes[table] = { rows: count, bytes: Number(rows[0].bytes), partitions: rows[0].partitions };
  }
  const wal = (await pool.query(`SELECT pg_current_wal_lsn() AS lsn`)).rows[0].lsn;
  samples.push({ at: Date.now(), wal, sizes });
}

const pollUntil = async (what, target, ms = 180_000) => {
  const until = Date.now() + ms;
  let n = 0;
  while (Date.now() < until) {
    n = await look(what);
    if (n >= target) return n;
    await new Promise((r) => setTimeout(r, 500));
  }
  process.stderr.write(`soak: ${what}: ${n} of ${target} after ${ms / 1000} s\n`);
  return n;
};

try {
  const { auth } = await createAccountWithNumber(base, env, { phoneNumber: NUMBER, carrier: 'telnyx' });
  const hook = await request(`${base}/v2/webhook_endpoints`, { method: 'POST', headers: auth, body: JSON.stringify({ url: `http://127.0.0.1:${endpoint.address().port}/hook` }) });
  if (hook.status !== 201) throw new Error(`webhook endpoint: ${hook.status} ${hook.body}`);
  const numberId = JSON.parse((await request(`${base}/v2/phone_numbers`, { headers: auth })).body).data[0].id;
  const plan = { voice: { ring_plan: { targets: [{ to: RINGS_OUT, timeout_secs: 20 }, { to: ANSWERS }], fallback: { action: 'hangup' } } } };
  const patched = await request(`${base}/v2/phone_numbers/${numberId}`, { method: 'PATCH', headers: auth, body: JSON.stringify(plan) });
  if (patched.status !== 200) throw new Error(`ring plan: ${patched.status} ${patched.body}`);
  const behaviours = await request(`${sandboxBase}/sandbox/calls/behaviours`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ time_scale: 0.02, [RINGS_OUT]: { no_answer: true }, [ANSWERS]: { answer_after_ms: 2000, talk_ms: 100_000 } }),
  });
  if (behaviours.status >= 300) throw new Error(`sandbox behaviours: ${behaviours.status} ${behaviours.body}`);

  const started = Date.now();
  const firstPeriodStart = Math.floor(started / (PERIOD_S * 1000)) * PERIOD_S * 1000;
  const end = started + MINUTES * 60_000;
  let nextSample = started;
  let nextOutbound = started;
  let nextCall = started;
  let outboundAsked = 0;
  for (let i = 0; Date.now() < end; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (Date.now() >= nextSample) {
      nextSample += 15_000;
      await sample();
      exportEndedPeriods(firstPeriodStart);
    }
    for (; OUTBOUND_RATE > 0 && nextOutbound <= Date.now(); nextOutbound += 1000 / OUTBOUND_RATE) sendOutbound(auth, outboundAsked++);
    for (; CALL_RATE > 0 && nextCall <= Date.now(); nextCall += 1000 / CALL_RATE) startCall(callsStarted + refused.calls);
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
  // Processing catches up: every inbound event a message, every send delivered, every call over.
  const messages = await pollUntil('inbound', sent.size);
  const delivered = await pollUntil('delivered', outbound.length);
  const ended = await pollUntil('ended', callsStarted);
  await sample();
  const doubledMessages = seen.doubled.size;
  const stats = JSON.parse((await request(`${sandboxBase}/sandbox/stats`)).body);
  const verify = JSON.parse(execFileSync(process.execPath, ['dist/cli.js', 'verify', '--json'], { cwd: APP_ROOT, env: { ...process.env, ...env } }).toString());
  const walBytes = Number((await pool.query(`SELECT pg_wal_lsn_diff($1, $2)::bigint AS b`, [samples.at(-1).wal, samples[0].wal])).rows[0].b);
  const events = sent.size + stats.webhooks.events + outbound.length;
  const doubledDeliveries = [...deliveriesById.values()].filter((n) => n > 1).length;

  const mib = (b) => fmt(b / 2 ** 20, 2);
  const rev = (() => {
    try {
      return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: APP_ROOT }).toString().trim();
    } catch {
      return '?';
    }
  })();
  const lines = [
    `soak: ${MINUTES} min, app ${rev}${APP_ROOT === ROOT ? '' : ` (${APP_ROOT})`}: inbound Telnyx SMS ${RATE}/s, outbound SMS ${OUTBOUND_RATE}/s, calls ${CALL_RATE}/s; partition a minute, kept ${RETENTION_H * 60} min (partitioned: ${partitioned.join(', ') || 'none'}); ${privatePg ? 'private PostgreSQL cluster' : 'shared PostgreSQL'}; ${machine()}`,
    `  rows / MiB / partitions per table, every 15 s:`,
    `  t (s)  ${sampled.join('  ')}`,
    ...samples.map((s) => `  ${String(Math.round((s.at - started) / 1000)).padStart(5)}  ${sampled.map((t) => `${s.sizes[t].rows}/${mib(s.sizes[t].bytes)}/${s.sizes[t].partitions}`).join('  ')}`),
    `  inbound events ${sent.size}; first deliveries: ${answers.first.accepted} accepted, ${answers.first.duplicate} duplicate, ${answers.first.other} other; repeats: ${answers.repeat.duplicate} duplicate, ${answers.repeat.accepted} accepted (doubled), ${answers.repeat.other} other; ${straddling} repeats straddled a boundary`,
    `  inbound messages ${messages} (lost: ${sent.size - messages}), doubled carrier messages ${doubledMessages}; outbound accepted ${outbound.length} (refused ${refused.outbound}), delivered ${delivered}, at the sandbox ${stats.sends.accepted}; calls ${callsStarted} (refused ${refused.calls}), ended ${ended}`,
    `  usage exports ${exportsRun} (failed ${exportFailures})${hasUsageExport ? '' : ': none, the app has no usage:export'}`,
    `  customer deliveries ${[...deliveriesById.values()].reduce((a, b) => a + b, 0)} of ${deliveriesById.size} events (delivered twice: ${doubledDeliveries}); verify ok: ${verify.ok} (${verify.broken} broken)`,
    `  WAL ${mib(walBytes)} MiB; events (inbound SMS + sandbox webhooks + API sends) ${events}: ${fmt(walBytes / events, 0)} bytes per event`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const lost = sent.size !== messages || delivered !== outbound.length || stats.sends.accepted !== outbound.length || ended !== callsStarted;
  if (exportFailures > 0 || answers.repeat.accepted > 0 || lost || doubledMessages > 0 || doubledDeliveries > 0 || !verify.ok) process.exitCode = 1;
} finally {
  await pool.end();
  await app.stop();
  await sandbox.stop();
  endpoint.close();
  rmSync(exportDir, { recursive: true, force: true });
  await db.drop();
  privatePg?.stop();
}
