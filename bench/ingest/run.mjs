// Ingest benchmark: signed Telnyx webhooks against the api role (32 connections, bounded time,
// loopback only; 10% of events delivered again with a higher meta.attempt, as a carrier retry),
// then pgbench of the same SQL (event insert ON CONFLICT DO NOTHING + outbox row + NOTIFY) at 32
// clients on the same machine. Prints req/s, p50/p99, tps and their ratio.
//   npm run bench:ingest            (BENCH_SECONDS=30 BENCH_CONNECTIONS=32 by default)
// BENCH_BESIDE_RATE=500: the same measurement while bench/e2e.mjs offers that many inbound SMS/s to
// the whole pipeline (`all` + a worker) on the same machine; the ingest database and pgbench then
// go on e2e's PostgreSQL cluster, and both the ingest loop and pgbench run while its load runs.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { cpuSecondsOf, fmt, freePort, freshDatabase, machine, percentile, PG_BASE, pgbench, REDIS_URL, startRole, telnyxHeaders, telnyxKeyPair } from '../lib.mjs';
import { encodePost, rawClosedLoop } from '../raw-http-load.mjs';
import { startE2eBeside } from './e2e-beside.mjs';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DUPLICATE_SHARE = 0.1;
// Signing costs the client CPU the server needs: sign everything before the clock starts.
const POOL = Number(process.env.BENCH_POOL ?? 200_000);
const BESIDE_RATE = Number(process.env.BENCH_BESIDE_RATE ?? 0);

const { privateKey, publicKeyBase64 } = telnyxKeyPair();

function receipt(id, attempt) {
  return JSON.stringify({
    data: {
      event_type: 'message.finalized', id, occurred_at: new Date().toISOString(), record_type: 'event',
      payload: {
        id: randomUUID(), record_type: 'message', direction: 'outbound', type: 'SMS',
        from: { phone_number: '+17735550002', carrier: 'Telnyx', line_type: 'Wireless' },
        to: [{ phone_number: '+13125550001', status: 'delivered', carrier: 'T-MOBILE USA, INC.', line_type: 'Wireless' }],
        parts: 1, errors: [], completed_at: new Date().toISOString(), cost: { amount: '0.0051', currency: 'USD' },
      },
    },
    meta: { attempt, delivered_to: 'http://127.0.0.1/webhooks/telnyx' },
  });
}

function signed(body) {
  return { body, headers: telnyxHeaders(privateKey, body) };
}

/** Deliveries in send order: each new event, and for 10% of them a retry a little later. */
function deliveries(n) {
  const out = [];
  const pendingRetries = [];
  while (out.length < n) {
    if (pendingRetries.length > 0 && (Math.random() < DUPLICATE_SHARE || out.length + pendingRetries.length >= n)) {
      out.push(signed(receipt(pendingRetries.shift(), 2)));
      continue;
    }
    const id = randomUUID();
    out.push(signed(receipt(id, 1)));
    if (Math.random() < DUPLICATE_SHARE / (1 - DUPLICATE_SHARE)) pendingRetries.push(id);
  }
  return out;
}

function ingestPgbench(dbUrl) {
  const dir = mkdtempSync(join(tmpdir(), 'onceline-pgbench-'));
  const payload = receipt('pgbench', 1);
  const normalized = JSON.stringify({ carrier: 'telnyx', kind: 'message.status', carrierEventId: 'x', occurredAt: new Date().toISOString(), carrierMessageId: 'm', status: 'delivered', carrierStatus: 'delivered' });
  const script = join(dir, 'ingest.sql');
  // The transaction ingest runs for a new event (src/modules/ingest/ingest.service.ts + OutboxService.enqueue;
  // the relay wake-up NOTIFY is sent after commit, coalesced, outside this transaction).
  writeFileSync(script, [
    '\\set n random(1, 2000000000)',
    'BEGIN;',
    `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce) VALUES ('cev_' || :client_id || '_' || :n, 'telnyx', 'pgb-' || :client_id || '-' || :n, 'message.finalized', 'message.status', '${payload}'::jsonb, '${normalized}'::jsonb, NULL) ON CONFLICT DO NOTHING;`,
    `INSERT INTO outbox_jobs (job_id, queue, name, data, run_at) VALUES ('cev_' || :client_id || '_' || :n, 'carrier-events', 'process-carrier-event', '{"carrierEventId":"x"}', coalesce(NULL::timestamptz, now())) ON CONFLICT DO NOTHING;`,
    'END;',
    '',
  ].join('\n'));
  // prepared: ingest's statement is a named prepared statement (DATABASE_PREPARED_STATEMENTS), so like for like.
  return pgbench({ dbUrl, script, clients: CONNECTIONS, seconds: SECONDS, mode: 'prepared', latencies: true });
}

/** How many deliveries each ingest transaction held (the app's own histogram). */
async function batchSizes(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  const value = (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  const count = value('onceline_ingest_batch_size_count');
  return { transactions: count, mean_deliveries: Number(fmt(value('onceline_ingest_batch_size_sum') / count, 1)) };
}

async function main() {
  process.stderr.write(`signing ${POOL} deliveries...\n`);
  const pool = deliveries(POOL);
  // Beside: e2e's load runs through the ingest loop, the api's stop and pgbench, with a margin.
  const beside = BESIDE_RATE > 0 ? await startE2eBeside(BESIDE_RATE, 2 * SECONDS + 20) : undefined;
  let db;
  let api;
  try {
    db = await freshDatabase('onceline_bench_ingest', beside?.pgBase ?? PG_BASE);
    const port = await freePort();
    api = await startRole('api', { DATABASE_URL: db.url, REDIS_URL, PORT: String(port), TELNYX_PUBLIC_KEY: publicKeyBase64, LOG_LEVEL: 'warn' }, { readyUrl: `http://127.0.0.1:${port}/health/live` });
    if (beside) {
      process.stderr.write(`waiting for bench/e2e.mjs's load (${BESIDE_RATE}/s)...\n`);
      await beside.timedRun;
    }
    await measure(pool, port, db, api, beside);
  } finally {
    await api?.stop();
    await db?.drop().catch(() => undefined);
    await beside?.stop();
  }
}

/**
 * CPU seconds used so far by the api process and by this database's PostgreSQL backends (a backend
 * started since the last reading counts from 0; one gone keeps its last reading): the cost of a
 * request, which a busy machine stretches far less than it stretches req/s.
 */
function cpuReader(db, api) {
  const watcher = new pg.Client({ connectionString: db.url });
  const backends = new Map();
  let connected;
  return {
    async read() {
      connected ??= watcher.connect();
      await connected;
      const { rows } = await watcher.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
      for (const { pid } of rows) {
        try {
          backends.set(pid, cpuSecondsOf(pid));
        } catch {
          // gone meanwhile: its last reading stands
        }
      }
      return { app: cpuSecondsOf(api.child.pid), postgres: [...backends.values()].reduce((a, b) => a + b, 0) };
    },
    close: () => watcher.end(),
  };
}

async function measure(pool, port, db, api, beside) {
  const url = `http://127.0.0.1:${port}/webhooks/telnyx`;
  const cpu = cpuReader(db, api);
  const requests = pool.map((d) => encodePost(url, d.headers, d.body));
  let next = 0;
  const statuses = {};
  process.stderr.write(`ingest: ${CONNECTIONS} connections for ${SECONDS} s...\n`);
  const cpuBefore = await cpu.read();
  const started = performance.now();
  const result = await rawClosedLoop({
    url,
    connections: CONNECTIONS,
    seconds: SECONDS,
    next: () => requests[next++ % requests.length],
    onResponse: (status, body) => {
      const key = status === 200 ? JSON.parse(body).status : String(status);
      statuses[key] = (statuses[key] ?? 0) + 1;
      return status === 200;
    },
  });
  const elapsed = (performance.now() - started) / 1000;
  const cpuAfter = await cpu.read();
  await cpu.close();
  const served = result.latencies.length;
  const cpuPerRequest = { app_us: ((cpuAfter.app - cpuBefore.app) / served) * 1e6, postgres_us: ((cpuAfter.postgres - cpuBefore.postgres) / served) * 1e6 };
  const batches = await batchSizes(`http://127.0.0.1:${port}/metrics`);
  await api.stop();
  process.stderr.write(`pgbench: ${CONNECTIONS} clients for ${SECONDS} s...\n`);
  const bench = ingestPgbench(db.url);
  const rps = result.latencies.length / elapsed;
  const report = {
    machine: machine(),
    // The app's defaults unless overridden in the environment (see docs/operations.md, Configuration).
    settings: Object.fromEntries(['INGEST_BATCH_MAX', 'INGEST_BATCH_CONCURRENCY', 'INGEST_VERIFY_THREADS'].map((k) => [k, process.env[k] ?? 'default'])),
    load: `${CONNECTIONS} keep-alive connections, closed loop, raw sockets (bench/raw-http-load.mjs), ${SECONDS} s`,
    beside: beside ? `bench/e2e.mjs --rate ${BESIDE_RATE} --timed-only running through the ingest loop and pgbench, same PostgreSQL cluster` : 'nothing',
    ingest: {
      requests: result.latencies.length, errors: result.errors, wrapped_pool: next > pool.length, statuses,
      req_per_s: Math.round(rps), p50_ms: Number(fmt(percentile(result.latencies, 50), 2)), p99_ms: Number(fmt(percentile(result.latencies, 99), 2)),
    },
    // Beside a busy machine's other work this is the steadier figure: what one request costs.
    cpu_per_request_us: { app: Math.round(cpuPerRequest.app_us), postgres: Math.round(cpuPerRequest.postgres_us), total: Math.round(cpuPerRequest.app_us + cpuPerRequest.postgres_us) },
    batches,
    pgbench: { tps: Math.round(bench.tps), latency_avg_ms: bench.latencyMs, p50_ms: Number(fmt(bench.p50Ms, 2)), p99_ms: Number(fmt(bench.p99Ms, 2)), command: bench.command },
    ratio: Number(fmt(rps / bench.tps, 2)),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`ingest ${fmt(rps, 0)} req/s (p50 ${fmt(percentile(result.latencies, 50), 2)} ms, p99 ${fmt(percentile(result.latencies, 99), 2)} ms; CPU ${fmt(cpuPerRequest.app_us, 0)} us app + ${fmt(cpuPerRequest.postgres_us, 0)} us PostgreSQL a request), pgbench ${fmt(bench.tps, 0)} tps (p50 ${fmt(bench.p50Ms, 2)} ms, p99 ${fmt(bench.p99Ms, 2)} ms), ratio ${fmt(rps / bench.tps, 2)}${beside ? `, beside ${BESIDE_RATE} inbound SMS/s` : ''}\n`);
  if (beside) process.stdout.write(`\nThe load beside it:\n${await beside.report()}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
