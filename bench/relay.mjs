// Relay benchmark (`npm run bench:relay`, which builds first). Loopback only, bounded in time.
//
// 1. Lag: jobs enqueued with the SQL OutboxService.enqueue runs (one transaction per job: INSERT
//    into outbox_jobs, COMMIT, then the after-commit pg_notify coalesced to one in flight, as
//    RelayWakeup does) at BENCH_RATE jobs/s for BENCH_SECONDS, with the real
//    relay (`node dist/main.js relay`) running. Latency = the Redis server time of the job's
//    'added' event (its events-stream id) minus the moment COMMIT returned to the producer.
// 2. Maximum throughput: the relay stopped, a backlog of BENCH_BACKLOG due rows committed, the
//    relay started again and timed until the backlog is drained into Redis.
// Peak RSS of the relay process (VmHWM) for both phases. Everything runs against a fresh
// database and a unique queue prefix on the local Redis, both removed at the end.
import { cpus, totalmem } from 'node:os';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ProbeJob } from '../dist/lib/platform/outbox/probe.handler.js';
import { OUTBOX_CHANNEL } from '../dist/lib/platform/outbox/relay-wakeup.js';
import { freshDatabase, peakRssBytes, percentile, PG_BASE, REDIS_URL, startRole } from './lib.mjs';

const env = process.env;
const RATE = Number(env.BENCH_RATE ?? 1000);
const SECONDS = Number(env.BENCH_SECONDS ?? 60);
const BACKLOG = Number(env.BENCH_BACKLOG ?? 100_000);
const PRODUCER_CONNECTIONS = Number(env.BENCH_PRODUCER_CONNECTIONS ?? 16);
/** Relay settings under test (the application's defaults unless overridden). */
const RELAY_ENV = Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('OUTBOX_')));

for (const [url, what] of [[PG_BASE, 'BENCH_PG_BASE (or BENCH_DATABASE_URL)'], [REDIS_URL, 'BENCH_REDIS_URL']]) {
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) throw new Error(`${what} must point at this machine (loopback only)`);
}

const say = (line) => process.stderr.write(`[bench] ${line}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const nowMs = () => performance.timeOrigin + performance.now();

const queueName = ProbeJob.queue;

/**
 * `node dist/main.js relay` as a child with only these settings in its environment; resolves once
 * it says it started.
 */
function startRelay(db, prefix) {
  const relayEnv = { PATH: env.PATH, DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn', ...RELAY_ENV };
  return startRole('relay', relayEnv, { readyLine: /onceline relay started/, inheritEnv: false });
}

/** Peak resident set size of a process so far, in MiB. */
const peakRssMiB = (pid) => peakRssBytes(pid) / 2 ** 20;

async function lagPhase(pool, queueEvents) {
  const committedAt = new Map();
  const latencies = [];
  let seenEarly = 0;
  const visibleAt = new Map();
  queueEvents.on('added', ({ jobId }, eventId) => {
    const at = Number(eventId.split('-')[0]); // Redis server time of the add, in ms
    const committed = committedAt.get(jobId);
    if (committed === undefined) {
      visibleAt.set(jobId, at); // COMMIT's reply had not reached the producer yet
      seenEarly++;
    } else latencies.push(Math.max(0, at - committed));
  });

  let issued = 0;
  let inflight = 0;
  let failed = 0;
  // The statements OutboxService.enqueue runs, sent as one simple-protocol round trip so that
  // the producer (same 2 cores as the relay, Postgres and Redis) stays out of the measurement.
  // Job ids here are plain literals, so inlining them is safe.
  // RelayWakeup: after the commit, one NOTIFY in flight at a time, another if more commits came.
  let notifyInFlight = false;
  let notifyAgain = false;
  const wakeRelay = () => {
    if (notifyInFlight) return void (notifyAgain = true);
    notifyInFlight = true;
    pool.query(`SELECT pg_notify('${OUTBOX_CHANNEL}', '')`).catch(() => undefined).finally(() => {
      notifyInFlight = false;
      if (notifyAgain) {
        notifyAgain = false;
        wakeRelay();
      }
    });
  };
  const enqueue = async (jobId) => {
    const client = await pool.connect();
    try {
      await client.query(
        `BEGIN;
         INSERT INTO outbox_jobs (job_id, queue, name, data) VALUES ('${jobId}', '${queueName}', '${ProbeJob.name}', '{}')
           ON CONFLICT DO NOTHING;
         COMMIT`,
      );
      const committed = nowMs();
      wakeRelay();
      const early = visibleAt.get(jobId);
      if (early !== undefined) latencies.push(Math.max(0, early - committed));
      else committedAt.set(jobId, committed);
    } catch (err) {
      failed++;
      await client.query('ROLLBACK').catch(() => undefined);
      if (failed === 1) say(`enqueue failed: ${err.message}`);
    } finally {
      client.release();
    }
  };

  say(`lag phase: ${RATE} jobs/s for ${SECONDS} s, one transaction per job`);
  const started = nowMs();
  const tasks = new Set();
  while (nowMs() - started < SECONDS * 1000) {
    const due = Math.floor(((nowMs() - started) * RATE) / 1000);
    while (issued < due) {
      if (inflight >= PRODUCER_CONNECTIONS * 4) break; // catch up on the next tick
      inflight++;
      const task = enqueue(`lag-${issued++}`).finally(() => {
        inflight--;
        tasks.delete(task);
      });
      tasks.add(task);
    }
    await sleep(1);
  }
  await Promise.all(tasks);
  const produceSeconds = (nowMs() - started) / 1000;
  const expected = issued - failed;
  const deadline = Date.now() + 30_000;
  while (latencies.length < expected && Date.now() < deadline) await sleep(50);
  latencies.sort((a, b) => a - b);
  return {
    offered_rate: RATE,
    seconds: SECONDS,
    jobs_committed: expected,
    achieved_rate: Math.round(expected / produceSeconds),
    enqueue_failures: failed,
    jobs_seen_in_redis: latencies.length,
    seen_before_commit_reply: seenEarly,
    latency_ms: {
      p50: percentile(latencies, 50),
      p90: percentile(latencies, 90),
      p99: percentile(latencies, 99),
      p999: percentile(latencies, 99.9),
      max: latencies[latencies.length - 1],
    },
  };
}

async function throughputPhase(pool, db, prefix) {
  say(`throughput phase: committing a backlog of ${BACKLOG} due jobs with the relay stopped`);
  await pool.query(
    `INSERT INTO outbox_jobs (job_id, queue, name, data)
     SELECT 'backlog-' || g, $2, $3, '{}' FROM generate_series(1, $1::int) AS g`,
    [BACKLOG, queueName, ProbeJob.name],
  );
  const t0 = nowMs();
  const relay = await startRelay(db, prefix);
  const booted = nowMs();
  let pending = BACKLOG;
  const deadline = Date.now() + 600_000;
  while (pending > 0 && Date.now() < deadline) {
    await sleep(100);
    pending = Number((await pool.query(`SELECT count(*) FROM outbox_jobs WHERE relayed_at IS NULL`)).rows[0].count);
  }
  const drained = nowMs();
  const rss = peakRssMiB(relay.child.pid);
  await relay.stop();
  const { rows } = await pool.query(
    `SELECT extract(epoch FROM max(relayed_at) - min(relayed_at))::float8 AS span FROM outbox_jobs WHERE job_id LIKE 'backlog-%'`,
  );
  const drainSeconds = (drained - booted) / 1000;
  return {
    backlog: BACKLOG,
    left_unrelayed: pending,
    relay_boot_seconds: +((booted - t0) / 1000).toFixed(2),
    drain_seconds_wall: +drainSeconds.toFixed(2),
    jobs_per_second_wall: Math.round(BACKLOG / drainSeconds),
    jobs_per_second_first_to_last_batch: Math.round(BACKLOG / rows[0].span),
    relay_peak_rss_mib: Math.round(rss),
  };
}

async function main() {
  const db = await freshDatabase('onceline_bench'); // onceline_bench_<tag>
  const prefix = `bench${db.name.slice('onceline_bench_'.length)}`;
  say(`database ${db.name}, queue prefix ${prefix}`);
  const pool = new pg.Pool({ connectionString: db.url, max: PRODUCER_CONNECTIONS });
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue(queueName, { connection: redis, prefix });
  let queueEvents;
  try {
    queueEvents = new QueueEvents(queueName, { connection: { url: REDIS_URL }, prefix });
    await queueEvents.waitUntilReady();
    const relay = await startRelay(db, prefix);
    const lag = await lagPhase(pool, queueEvents);
    lag.relay_peak_rss_mib = Math.round(peakRssMiB(relay.child.pid));
    await relay.stop();
    await queueEvents.close();
    queueEvents = undefined;
    const throughput = await throughputPhase(pool, db, prefix);
    const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed');
    const result = {
      machine: { cpus: cpus().length, memory_gib: +(totalmem() / 2 ** 30).toFixed(1), node: process.version },
      relay_settings: { OUTBOX_BATCH_SIZE: 500, OUTBOX_POLL_MS: 250, ...RELAY_ENV },
      lag,
      throughput,
      redis_jobs_waiting: counts.waiting,
      every_job_in_redis_once: counts.waiting === lag.jobs_committed + BACKLOG,
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await queueEvents?.close().catch(() => undefined);
    say('cleaning up: removing the bench queue from Redis and dropping the database');
    await queue.obliterate({ force: true }).catch((err) => say(`obliterate failed: ${err.message}`));
    await queue.close();
    redis.disconnect();
    await pool.end();
    await db.drop();
  }
}

main().catch((err) => {
  say(err.stack ?? String(err));
  process.exit(1);
});
