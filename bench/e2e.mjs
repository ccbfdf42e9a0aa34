// bench/e2e.mjs — carrier webhook in → customer webhook out. Signed Telnyx inbound SMS webhooks
// at a fixed rate into the real app (`node dist/main.js all` plus extra workers), a local
// customer endpoint receiving `message.received`; reports throughput, end-to-end p50/p99, the
// app's peak RSS and duplicates. On a PostgreSQL cluster of its own (bench/private-pg.mjs) it also
// counts the statements one inbound SMS costs (pg_stat_statements, one database user per role, in
// a short counting phase with the roles in separate processes) and runs pgbench of the least SQL
// the same work needs (bench/e2e-least-sql.pgbench), printing the pipeline's rate over pgbench's.
// `--find-max` steps the rate up on the same started system and reports the highest rate whose
// p99 stays under 1 s. Loopback only, bounded in time; the cluster and every child are removed.
// Usage: npm run bench:e2e [-- --rate 500 --seconds 60 --workers 1 --find-max --statements --timed-only]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import pg from 'pg';
import { newRun, startInboundLoad } from './e2e-load.mjs';
import { createAccountWithNumber, fmt, freePort, freshDatabase, machine, peakRssBytes, percentile, pgbench, REDIS_URL, request, startRole, telnyxKeyPair, troublesCell } from './lib.mjs';
import { prepareStatementCounting, resetStatements, startPrivatePostgres, statementList, statementsBetween, statementsByUser } from './private-pg.mjs';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '60' },
    workers: { type: 'string', default: '1' },
    // The counting phase: its rate (default --rate) and length.
    'count-rate': { type: 'string' },
    'count-seconds': { type: 'string', default: '5' },
    'pgbench-seconds': { type: 'string', default: '15' },
    'pgbench-clients': { type: 'string', default: '16' },
    'find-max': { type: 'boolean', default: false },
    'step-seconds': { type: 'string', default: '15' },
    'max-minutes': { type: 'string', default: '4' },
    // Print each role's most frequent statements from the counting phase.
    statements: { type: 'boolean', default: false },
    'timed-only': { type: 'boolean', default: false },
    // Load at --rate on the started system before the timed run, not counted (0: measure from boot).
    'warmup-seconds': { type: 'string', default: '10' },
  },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const WARMUP_SECONDS = Number(values['warmup-seconds']);
const EXTRA_WORKERS = Number(values.workers);
const COUNT_RATE = Number(values['count-rate'] ?? values.rate);
const COUNT_SECONDS = Number(values['count-seconds']);
const P99_GOAL_MS = 1000;
const TO_NUMBER = '+15550100000';

// Everything started is stopped in reverse order, also on SIGINT/SIGTERM and on failure.
const cleanups = [];
let cleaning;
const cleanup = () => (cleaning ??= (async () => {
  while (cleanups.length > 0) await Promise.resolve().then(cleanups.pop()).catch((err) => process.stderr.write(`cleanup: ${err.message}\n`));
})());
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void cleanup().finally(() => process.exit(130)));
const say = (line) => process.stderr.write(`e2e: ${line}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const { privateKey, publicKeyBase64 } = telnyxKeyPair();
const load = await startInboundLoad(privateKey, TO_NUMBER);
cleanups.push(load.close);
const { offer, drain } = load;

// ---- the system -----------------------------------------------------------------------------
// One database user per process role: pg_stat_statements keys its counters by user.
const USERS = { all: 'onceline_all', api: 'onceline_api', relay: 'onceline_relay', worker: 'onceline_worker' };
let cluster, db, superUrl, sql;

/** The private cluster, the migrated database (as the superuser) and the role users. */
async function setUp() {
  cluster = await startPrivatePostgres();
  cleanups.push(cluster.stop);
  db = await freshDatabase('onceline_bench_e2e', cluster.baseUrl);
  superUrl = db.url;
  await prepareStatementCounting(superUrl, Object.values(USERS));
  sql = new pg.Pool({ connectionString: superUrl, max: 2 });
  cleanups.push(() => sql.end());
}

/** Starts `roles` (e.g. ['all', 'worker']) on a fresh queue prefix, each as its role's database user. */
async function startSystem(roles, extraEnv = {}) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    REDIS_URL, QUEUE_PREFIX: `benche2e${port}`, PORT: String(port), LOG_LEVEL: 'warn', TELNYX_PUBLIC_KEY: publicKeyBase64,
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', API_RATE_LIMIT_PER_MINUTE: '100000000', ...(process.env.BENCH_APP_ENV ? JSON.parse(process.env.BENCH_APP_ENV) : {}),
    ...extraEnv,
  };
  const procs = [];
  const stop = () => Promise.all(procs.map((p) => p.stop()));
  cleanups.push(stop);
  for (const role of roles) {
    const roleEnv = { ...env, DATABASE_URL: cluster.urlFor(db.name, USERS[role]) };
    const ready = role === 'all' || role === 'api' ? { readyUrl: `${base}/health/ready` } : { readyLine: new RegExp(`onceline ${role} started`) };
    procs.push(Object.assign(await startRole(role, roleEnv, ready), { role }));
  }
  return { base, env, procs, stop, peakRss: () => procs.map((p) => ({ role: p.role, bytes: peakRssBytes(p.child.pid) || 0 })) };
}

/** App statements since the last reset, per role, from pg_stat_statements (the bench's own, as postgres, excluded). */
async function statements() {
  const byUser = await statementsByUser(superUrl);
  return Object.fromEntries(Object.entries(USERS).map(([role, user]) => [role, byUser[user] ?? { calls: 0, tx: 0 }]));
}
const sum = (counts) => Object.values(counts).reduce((a, c) => ({ calls: a.calls + c.calls, tx: a.tx + c.tx }), { calls: 0, tx: 0 });
const minus = (a, b) => ({ calls: a.calls - b.calls, tx: a.tx - b.tx });
const per = (c, n) => `${fmt(c.calls / n, 2)} (${fmt(c.tx / n, 2)})`;

async function outboxPending() {
  return (await sql.query(`
    SELECT count(*) FILTER (WHERE name = 'process-carrier-event' AND completed_at IS NULL AND failed_at IS NULL)::int AS processing,
           count(*) FILTER (WHERE name = 'webhook-delivery-attempt' AND relayed_at IS NULL)::int AS unrelayed_deliveries
      FROM outbox_jobs`)).rows[0];
}
const attemptsSoFar = async () => Number((await sql.query('SELECT count(*) FROM webhook_delivery_attempts')).rows[0].count);

/**
 * One row per job kind and path: due → in Redis and in Redis → done, from the outbox rows. A job
 * run after the commit that created it (AfterCommitJobs) never went through Redis: its row has
 * no redrive_at, and its figures are commit → done (created_at → completed_at).
 */
async function stages(since) {
  return (await sql.query(`
    SELECT name || CASE WHEN after_commit THEN ' (run after commit, no Redis)' ELSE '' END AS name, count(*)::int AS jobs,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM relayed_at - run_at) * 1000) FILTER (WHERE NOT after_commit) AS relay_p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM relayed_at - run_at) * 1000) FILTER (WHERE NOT after_commit) AS relay_p99,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - started) * 1000) AS run_p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - started) * 1000) AS run_p99
      FROM (SELECT *, CASE WHEN after_commit THEN created_at ELSE relayed_at END AS started
              FROM (SELECT *, redrive_at IS NULL AND completed_at IS NOT NULL AS after_commit FROM outbox_jobs WHERE created_at >= $1) AS j) AS jobs
     GROUP BY name, after_commit ORDER BY 1`, [since])).rows;
}
/** Steps the rate up (×1.5 from 100/s, then halving the gap) until p99 > 1 s, within the time budget. */
async function findMax(system) {
  const stepSeconds = Number(values['step-seconds']);
  const budgetEnd = Date.now() + Number(values['max-minutes']) * 60_000;
  const steps = [];
  let good = 0;
  let bad = Infinity;
  let rate = 100;
  while (Date.now() + (stepSeconds + 10) * 1000 < budgetEnd) {
    const run = newRun();
    say(`find-max: ${rate}/s for ${stepSeconds} s`);
    await offer(system.base, run, rate, stepSeconds);
    const drained = await drain(run, 10_000);
    const p99 = percentile(run.latencies, 99);
    const ok = drained && run.rejected === 0 && p99 <= P99_GOAL_MS;
    steps.push({ rate, ok, p99, throughput: run.received / run.drainSeconds });
    if (ok) good = Math.max(good, rate);
    else bad = Math.min(bad, rate);
    // A failed step leaves a backlog: let it drain before the next step measures anything.
    if (!drained) await drain(run, Math.max(0, Math.min(60_000, budgetEnd - Date.now())));
    rate = bad === Infinity ? Math.round(rate * 1.5) : Math.round((good + bad) / 2);
    if (bad !== Infinity && bad - good <= Math.max(10, good * 0.1)) break;
  }
  return { max: good, steps, stepSeconds };
}

/** The timed run on `all` + extra workers; with --find-max, the steps after it on the same system. */
async function timedPhase() {
  say(`starting all + ${EXTRA_WORKERS} worker on a private cluster (port ${cluster.port})`);
  const main = await startSystem(['all', ...Array(EXTRA_WORKERS).fill('worker')]);
  const { auth } = await createAccountWithNumber(main.base, { ...main.env, DATABASE_URL: superUrl }, { phoneNumber: TO_NUMBER, carrier: 'telnyx' });
  const endpoint = await request(`${main.base}/v2/webhook_endpoints`, { method: 'POST', headers: auth, body: JSON.stringify({ url: load.hookUrl, event_types: ['message.received'] }) });
  if (endpoint.status !== 201) throw new Error(`endpoint: ${endpoint.status} ${endpoint.body}`);
  // A process just started has cold code paths, no database connections and no prepared
  // statements: its first seconds under full load are a start-up transient (reported), not the
  // steady state the timed run measures.
  let warmup;
  if (WARMUP_SECONDS > 0) {
    say(`warm-up: ${RATE}/s for ${WARMUP_SECONDS} s (not counted)`);
    warmup = newRun();
    await offer(main.base, warmup, RATE, WARMUP_SECONDS);
    await drain(warmup, 180_000);
  }
  await resetStatements(superUrl);
  const [{ since }] = (await sql.query('SELECT now() AS since')).rows;
  // bench/ingest/run.mjs (BENCH_BESIDE_RATE) starts its own load when it reads this line.
  say(`timed run: ${RATE}/s for ${SECONDS} s`);
  const run = newRun();
  await offer(main.base, run, RATE, SECONDS);
  const drained = await drain(run, 180_000);
  const statementsSeen = sum(await statements());
  // --statements: where PostgreSQL spent the timed run, per role, most execution time first.
  const timedLists = values.statements ? await Promise.all(['all', 'worker'].map(async (role) =>
    [role, statementsBetween(await statementList(superUrl, USERS[role])).sort((a, b) => b.ms - a.ms)])) : [];
  const jobStages = await stages(since);
  // Peak RSS (VmHWM, since boot) through the warm-up and the timed run: the goal's figure. The
  // find-max steps overload the processes on purpose; their peak is reported apart.
  const rss = main.peakRss();
  const maximum = values['find-max'] ? await findMax(main) : undefined;
  if (maximum) maximum.rss = main.peakRss();
  await main.stop();
  return { run, warmup, drained, statementsSeen, timedLists, jobStages, maximum, rss, troubles: await troublesCell(main.procs, sql) };
}

/**
 * api, relay and worker in separate processes (one database user each); the webhooks queue is
 * paused until every SMS is processed and its delivery job relayed, so the worker's statements
 * up to then are processing and the rest are delivery attempts. For that split every delivery
 * job goes through the relay and Redis here (WORKER_AFTER_COMMIT_JOBS=0): a first attempt run
 * after commit sends the same two statements from the same process, and only saves the relay its
 * share, so the relay figure here is an upper bound of the timed run's.
 */
async function countingPhase() {
  say(`counting phase: api, relay, worker apart; ${COUNT_RATE}/s for ${COUNT_SECONDS} s`);
  const split = await startSystem(['api', 'relay', 'worker'], { WORKER_AFTER_COMMIT_JOBS: '0' });
  const redis = new URL(REDIS_URL);
  const webhooksQueue = new Queue('webhooks', { connection: { host: redis.hostname, port: Number(redis.port || 6379) }, prefix: split.env.QUEUE_PREFIX });
  cleanups.push(() => webhooksQueue.close());
  await webhooksQueue.pause();
  await resetStatements(superUrl);
  const run = newRun();
  await offer(split.base, run, COUNT_RATE, COUNT_SECONDS);
  let processedAll = false;
  for (const until = Date.now() + 120_000; !processedAll && Date.now() < until; await sleep(100)) {
    const pending = await outboxPending();
    processedAll = pending.processing === 0 && pending.unrelayed_deliveries === 0;
  }
  const processed = await statements();
  const workerAtProcessed = values.statements ? await statementList(superUrl, USERS.worker) : undefined;
  const attemptsBefore = await attemptsSoFar();
  await webhooksQueue.resume();
  const drained = await drain(run, 120_000);
  const delivered = await statements();
  const attempts = (await attemptsSoFar()) - attemptsBefore;
  const lists = values.statements ? [
    ['ingest (api)', statementsBetween(await statementList(superUrl, USERS.api))],
    ['relay', statementsBetween(await statementList(superUrl, USERS.relay))],
    ['processing (worker, before the webhooks queue was resumed)', statementsBetween(workerAtProcessed)],
    ['delivery attempts (worker, after)', statementsBetween(await statementList(superUrl, USERS.worker), workerAtProcessed)],
  ] : [];
  await split.stop();
  return {
    events: run.offered - run.rejected, attempts, drained: drained && processedAll, processedAll, lists,
    ingest: delivered.api, relay: delivered.relay, processing: processed.worker, delivery: minus(delivered.worker, processed.worker),
  };
}

/**
 * pgbench of the least SQL, same cluster, the app's schema and the account the app run made:
 * in pgbench's simple mode (each statement parsed and planned every time, as an unnamed statement
 * is) and in prepared mode (parsed and planned once per connection, as the app's hot path runs
 * with DATABASE_PREPARED_STATEMENTS, the default). The ratio is taken against prepared.
 */
function referencePhase() {
  const seconds = Number(values['pgbench-seconds']);
  const run = (mode) => {
    say(`pgbench (${mode}): ${values['pgbench-clients']} clients for ${seconds} s`);
    return pgbench({
      dbUrl: superUrl, bin: cluster.bin, clients: Number(values['pgbench-clients']), seconds, mode,
      script: fileURLToPath(new URL('./e2e-least-sql.pgbench', import.meta.url)),
    });
  };
  const simple = run('simple');
  return { ...run('prepared'), simple, seconds };
}

/** p99 latency of the SMS sent in each `ms` window of the run, in sending order. */
function byWindow(run, ms) {
  const windows = [];
  run.sendOffsets.forEach((offset, i) => (windows[Math.floor(offset / ms)] ??= []).push(run.latencies[i]));
  return windows.map((latencies, i) => ({ from: (i * ms) / 1000, to: ((i + 1) * ms) / 1000, p99: latencies ? percentile(latencies, 99) : NaN }));
}

function report({ run, warmup, drained, statementsSeen, timedLists, jobStages, maximum, rss, troubles }, counted, reference) {
  const throughput = run.received / run.drainSeconds;
  // The goal is in MB (10^6 bytes); MiB beside it, as the kernel's kB are KiB.
  const mib = (b) => `${fmt(b / 1e6, 0)} MB (${fmt(b / 2 ** 20, 0)} MiB)`;
  console.log(`\n## End to end: carrier webhook → customer webhook (${new Date().toISOString()})\nmachine: ${machine()}\ncommand: node bench/e2e.mjs ${process.argv.slice(2).join(' ')}`);
  console.log(`database: private PostgreSQL cluster (pg_stat_statements), settings copied from the shared server: ${Object.entries(cluster.settings).map(([k, v]) => `${k}=${v}`).join(', ')}\n`);
  console.log('| measure | value | goal |\n|---|---|---|');
  console.log(`| inbound webhooks offered | ${run.offered} at ${RATE}/s (sent in ${fmt(run.sendSeconds)} s), ${run.rejected} not answered 200 | |`);
  console.log(`| customer events received (distinct webhook-id) | ${run.received} of ${run.offered - run.rejected}${drained ? '' : ' (NOT all within 180 s)'} | all |`);
  console.log(`| throughput, first send → last event | ${fmt(throughput)} events/s = ${fmt((100 * throughput) / RATE, 0)}% of offered | ≥ 98% |`);
  console.log(`| carrier webhook → customer webhook p50 / p99 | ${fmt(percentile(run.latencies, 50))} ms / ${fmt(percentile(run.latencies, 99))} ms | p99 ≤ 1,000 ms |`);
  const windows = (r) => byWindow(r, 10_000).map((w) => `${w.from}–${w.to} s: ${fmt(w.p99, 0)} ms`).join(', ');
  console.log(`| p99 by 10 s of sending (when the SMS was sent) | ${windows(run)} | |`);
  console.log(warmup
    ? `| warm-up just before, on the same processes (not counted above) | ${warmup.offered} SMS at ${RATE}/s from boot, ${warmup.received} received, p50 / p99 ${fmt(percentile(warmup.latencies, 50))} / ${fmt(percentile(warmup.latencies, 99))} ms; p99 by 10 s: ${windows(warmup)} | |`
    : '| warm-up | none: the timed run starts on processes just booted | |');
  console.log(`| peak RSS, boot to the end of the timed run | ${rss.map((r) => `${r.role} ${mib(r.bytes)}`).join(', ')} | ≤ 300 MB each |`);
  console.log(`| duplicate deliveries (same webhook-id again) | ${run.duplicates} | 0 |`);
  console.log(`| pool connect timeouts / deadlocks in every role's log, boot to stop / deadlocks PostgreSQL counted in this database | ${troubles} | 0 / 0 / 0 |`);
  console.log(`| statements per inbound SMS in this run, its delivery included (of which BEGIN/COMMIT/ROLLBACK/SAVEPOINT) | ${per(statementsSeen, run.received)} | |`);
  if (maximum) {
    console.log(`| maximum sustainable rate (p99 ≤ 1 s, all delivered), ${maximum.stepSeconds} s steps | ${maximum.max}/s; steps: ${maximum.steps.map((s) => `${s.rate}/s ${s.ok ? 'ok' : 'no'} (p99 ${fmt(s.p99, 0)} ms)`).join(', ')} | ≥ 500/s |`);
    console.log(`| peak RSS once the find-max steps had run (overloaded on purpose) | ${maximum.rss.map((r) => `${r.role} ${mib(r.bytes)}`).join(', ')} | |`);
  }
  if (counted) {
    const { events, attempts, ingest, relay, processing, delivery } = counted;
    console.log(`\nStatements per inbound SMS, counting phase (api, relay, worker as separate processes, each its own database user; ${events} SMS at ${COUNT_RATE}/s, deliveries held in the paused queue until processing finished${counted.processedAll ? '' : ' (NOT all processed within 120 s: the split is off)'}; ${attempts} delivery attempts${counted.drained ? '' : ', NOT all delivered'}). Each figure counts BEGIN/COMMIT/ROLLBACK/SAVEPOINT as statements; in brackets, how many of them those are.\n`);
    console.log('| stage | statements per inbound SMS (of which transaction control) | goal |\n|---|---|---|');
    console.log(`| ingest (api) | ${per(ingest, events)} | |`);
    console.log(`| relay (both jobs) | ${per(relay, events)} | |`);
    console.log(`| processing (process-carrier-event) | ${per(processing, events)} | |`);
    console.log(`| inbound SMS: ingest + relay + processing | ${per(sum({ ingest, relay, processing }), events)} | ≤ 4 |`);
    console.log(`| delivery attempt (webhook-delivery-attempt), per attempt | ${per(delivery, attempts)} | ≤ 3 |`);
    console.log(`| total per inbound SMS | ${per(sum({ ingest, relay, processing, delivery }), events)} | |`);
  }
  if (reference) {
    const pgEvents = reference.tps;
    console.log(`\npgbench of the least SQL (bench/e2e-least-sql.pgbench: 5 one-statement transactions per SMS, ${values['pgbench-clients']} clients, ${reference.seconds} s each, same cluster): prepared mode ${fmt(pgEvents, 0)} events/s (${fmt(pgEvents * 5, 0)} transactions/s, average ${fmt(reference.latencyMs, 2)} ms per script run); simple mode ${fmt(reference.simple.tps, 0)} events/s`);
    console.log(`pipeline ÷ pgbench: timed run ${fmt(throughput / pgEvents, 2)} (${fmt(throughput, 0)} ÷ ${fmt(pgEvents, 0)} events/s)${maximum ? `, maximum rate ${fmt(maximum.max / pgEvents, 2)}` : ''}; 500/s would be ${fmt(500 / pgEvents, 2)}`);
  }
  console.log('\n| job | jobs | due → in Redis p50 / p99 ms | in Redis (run after commit: commit) → done p50 / p99 ms |\n|---|---|---|---|');
  for (const s of jobStages) console.log(`| ${s.name} | ${s.jobs} | ${s.relay_p50 === null ? '–' : `${fmt(s.relay_p50)} / ${fmt(s.relay_p99)}`} | ${fmt(s.run_p50)} / ${fmt(s.run_p99)} |`);
  for (const [role, rows] of timedLists) {
    const total = rows.reduce((t, r) => t + r.ms, 0);
    console.log(`\n${role}, timed run, every statement by execution time inside PostgreSQL (pg_stat_statements; ${fmt(total / 1000, 1)} s in all, ${fmt(total / Math.max(1, run.received), 3)} ms per event received):\n| calls | exec ms total | exec ms per call | statement |\n|---|---|---|---|`);
    for (const r of rows) console.log(`| ${r.calls} | ${fmt(r.ms, 0)} | ${fmt(r.ms / r.calls, 3)} | \`${r.query.replaceAll('|', '\\|')}\` |`);
  }
  for (const [stage, rows] of counted?.lists ?? []) {
    console.log(`\n${stage}, counting phase, every statement (execution time inside PostgreSQL, from pg_stat_statements):\n| calls | exec ms per call | statement |\n|---|---|---|`);
    for (const r of rows) console.log(`| ${r.calls} | ${fmt(r.ms / r.calls, 3)} | \`${r.query.replaceAll('|', '\\|')}\` |`);
  }
}

try {
  await setUp();
  const timed = await timedPhase();
  // --timed-only: the load alone (bench/ingest/run.mjs runs it beside its own measurement).
  const counted = values['timed-only'] ? undefined : await countingPhase();
  const reference = values['timed-only'] ? undefined : referencePhase();
  report(timed, counted, reference);
  if (!timed.drained || counted?.drained === false || timed.run.duplicates > 0) process.exitCode = 1;
} catch (err) {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
