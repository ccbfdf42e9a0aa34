import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { ProbeJob } from '../../../src/platform/outbox/probe.handler.js';
import { JobRegistry } from '../../../src/platform/outbox/job-registry.js';
import type { JobDefinition } from '../../../src/platform/outbox/job-definition.js';
import * as callsJobs from '../../../src/modules/calls/calls.jobs.js';
import * as ingestJobs from '../../../src/modules/ingest/ingest.jobs.js';
import * as messagingJobs from '../../../src/modules/messaging/messaging.jobs.js';
import * as numbersJobs from '../../../src/modules/numbers/numbers.jobs.js';
import * as webhooksJobs from '../../../src/modules/webhooks/webhooks.jobs.js';
import { OutboxRelay } from '../../../src/platform/outbox/outbox-relay.js';
import { OutboxService } from '../../../src/platform/outbox/outbox.service.js';
import { Queues } from '../../../src/platform/outbox/queues.js';
import { DataSource } from 'typeorm';
import { CteStatement } from '../../../src/platform/database/cte-statement.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/services.js';
import { waitFor } from '../../support/wait.js';
import { afterCommitJobs, newJobsCount } from '../../../src/platform/outbox/statement-jobs.js';

async function enqueueProbes(app: TestApp, prefix: string, n: number): Promise<void> {
  const uow = app.app.get(UnitOfWork);
  const outbox = app.app.get(OutboxService);
  await uow.run(async (tx) => {
    for (let i = 0; i < n; i++) await outbox.enqueue(tx, { job: ProbeJob, data: { label: prefix }, jobId: `${prefix}-${i}` });
  });
}

async function expectEachRanOnce(db: TestDatabase, prefix: string, n: number): Promise<void> {
  await waitFor(() => db.count(`SELECT count(*) FROM probe_runs WHERE label = $1`, [prefix]), (c) => c >= n, { what: `${n} ${prefix} probe runs`, timeoutMs: 30000 });
  expect(await db.count(`SELECT count(*) FROM probe_runs WHERE label = $1`, [prefix])).toBe(n);
  expect(await db.count(`SELECT count(DISTINCT job_id) FROM probe_runs WHERE label = $1`, [prefix])).toBe(n);
  expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id LIKE $1 AND completed_at IS NULL`, [`${prefix}-%`])).toBe(0);
}

describe('transactional outbox', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url, http: false });
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it('refuses to enqueue outside a transaction', async () => {
    const outbox = app.app.get(OutboxService);
    const { DataSource } = await import('typeorm');
    const manager = app.app.get(DataSource).manager;
    await expect(outbox.enqueue(manager as never, { job: ProbeJob, data: {}, jobId: 'outside-1' })).rejects.toThrow(/inside a transaction/);
    expect(await db.count(`SELECT count(*) FROM outbox_jobs`)).toBe(0);
  });

  it('a job enqueued in a rolled-back transaction never reaches a worker; a committed one runs once', async () => {
    const uow = app.app.get(UnitOfWork);
    const outbox = app.app.get(OutboxService);
    await expect(
      uow.run(async (tx) => {
        await outbox.enqueue(tx, { job: ProbeJob, data: { label: 'rolledback' }, jobId: 'rolledback-1' });
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');
    await enqueueProbes(app, 'committed', 1);
    const relay = app.app.get(OutboxRelay);
    const published = jest.spyOn(app.app.get(Queues), 'publish');
    await relay.start();
    const { JobWorkers } = await import('../../../src/platform/outbox/job-workers.js');
    app.app.get(JobWorkers).start();
    await expectEachRanOnce(db, 'committed', 1);
    expect(await db.count(`SELECT count(*) FROM probe_runs WHERE label = 'rolledback'`)).toBe(0);
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = 'rolledback-1'`)).toBe(0);
    const everPublished = published.mock.calls.flatMap(([jobs]) => jobs.map((j) => j.jobId));
    expect(everPublished).not.toContain('rolledback-1');
  });

  it('relays are woken after the commit (the row is visible then), never for a rollback', async () => {
    const { RelayWakeup } = await import('../../../src/platform/outbox/relay-wakeup.js');
    const uow = app.app.get(UnitOfWork);
    const outbox = app.app.get(OutboxService);
    const seenAtHint: number[] = [];
    const hint = jest.spyOn(app.app.get(RelayWakeup), 'hint').mockImplementation(() => {
      void db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = 'hinted-1'`).then((c) => seenAtHint.push(c));
    });
    await expect(
      uow.run(async (tx) => {
        await outbox.enqueue(tx, { job: ProbeJob, data: { label: 'hinted' }, jobId: 'hinted-0' });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(hint).not.toHaveBeenCalled();
    await uow.run((tx) => outbox.enqueue(tx, { job: ProbeJob, data: { label: 'hinted' }, jobId: 'hinted-1' }));
    expect(hint).toHaveBeenCalledTimes(1);
    await waitFor(() => seenAtHint.length, (n) => n === 1, { what: 'the visibility check' });
    expect(seenAtHint).toEqual([1]);
    hint.mockRestore();
  });

  it('the same jobId enqueued twice is one job', async () => {
    const uow = app.app.get(UnitOfWork);
    const outbox = app.app.get(OutboxService);
    const first = await uow.run((tx) => outbox.enqueue(tx, { job: ProbeJob, data: { label: 'twice' }, jobId: 'twice-0' }));
    const second = await uow.run((tx) => outbox.enqueue(tx, { job: ProbeJob, data: { label: 'twice' }, jobId: 'twice-0' }));
    expect([first, second]).toEqual([true, false]);
    await expectEachRanOnce(db, 'twice', 1);
  });

  it('enqueueMany: one statement for many jobs; an id twice in the list, or already in the outbox, is one job', async () => {
    const uow = app.app.get(UnitOfWork);
    const outbox = app.app.get(OutboxService);
    const probe = (i: number) => ({ job: ProbeJob, data: { label: 'many' }, jobId: `many-${i}` });
    expect(await uow.run((tx) => outbox.enqueueMany(tx, [probe(0), probe(1), probe(1), probe(2)]))).toBe(3);
    expect(await uow.run((tx) => outbox.enqueueMany(tx, [probe(2), probe(3)]))).toBe(1);
    await expectEachRanOnce(db, 'many', 4);
  });

  it('jobsFromCte: rows and their jobs in one statement, a job per row of the source; a job id already in the outbox is one job', async () => {
    const outbox = app.app.get(OutboxService);
    const write = async (from: number, to: number) => {
      const stmt = new CteStatement();
      const fresh = stmt.with('fresh', `SELECT 'cte-' || g AS id FROM generate_series(${stmt.param(from, 'int')}, ${stmt.param(to, 'int')}) g`);
      outbox.jobsFromCte(stmt, 'jobs', fresh, ProbeJob, { id: 'id', data: `jsonb_build_object('label', id)` });
      const [row] = await app.app.get(DataSource).query(stmt.text(`SELECT (${newJobsCount(stmt)})::int AS jobs, ${afterCommitJobs(stmt)} AS "afterCommit"`), stmt.params);
      outbox.jobsWritten(row.jobs);
      return row;
    };
    // No job of this statement runs after commit (StatementJobs.runAfterCommit unset): all are due now.
    expect(await write(1, 3)).toEqual({ jobs: 3, afterCommit: [] });
    expect(await write(3, 4)).toEqual({ jobs: 1, afterCommit: [] });
    const { rows: jobs } = await db.pool.query(`SELECT job_id, queue, name, data FROM outbox_jobs WHERE job_id LIKE 'cte-%' ORDER BY job_id`);
    expect(jobs).toEqual([1, 2, 3, 4].map((g) => ({ job_id: `cte-${g}`, queue: 'system', name: ProbeJob.name, data: { label: `cte-${g}` } })));
    await waitFor(() => db.count(`SELECT count(*) FROM probe_runs WHERE label LIKE 'cte-%'`), (n) => n === 4, { what: 'the four probe jobs to run' });
  });

  it('the running app has exactly one handler for every job its modules declare (JobRegistry checks it at boot)', async () => {
    const registry = app.app.get(JobRegistry);
    const declared = [ProbeJob, ...[messagingJobs, webhooksJobs, ingestJobs, callsJobs, numbersJobs].flatMap((jobs) => Object.values(jobs) as JobDefinition[])];
    // 13: messaging declares dispatch-reply beside dispatch-message (issue #42: replies in a queue of their own).
    expect(declared.length).toBe(13);
    for (const job of declared) {
      expect(registry.spec(job.name)).toBe(job);
      expect(registry.get(job.name)).toBeDefined();
    }
    expect(registry.queues().sort()).toEqual(['calls', 'carrier-events', 'messaging', 'messaging-replies', 'numbers', 'system', 'webhooks']);
  });
});

describe('relays running side by side', () => {
  let db: TestDatabase;
  let relayA: TestApp;
  let relayB: TestApp;
  let worker: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    relayA = await startTestApp({ databaseUrl: db.url, http: false, env: { OUTBOX_BATCH_SIZE: '20' } });
    const prefix = relayA.config.QUEUE_PREFIX;
    relayB = await startTestApp({ databaseUrl: db.url, http: false, env: { OUTBOX_BATCH_SIZE: '20', QUEUE_PREFIX: prefix } });
    worker = await startTestApp({ databaseUrl: db.url, http: false, worker: true, env: { QUEUE_PREFIX: prefix } });
  });
  afterAll(async () => {
    await Promise.all([relayA.close(), relayB.close(), worker.close()]);
    await db.drop();
  });

  it('two relays deliver every committed job exactly once', async () => {
    await relayA.app.get(OutboxRelay).start();
    await relayB.app.get(OutboxRelay).start();
    await enqueueProbes(relayA, 'pair', 300);
    await expectEachRanOnce(db, 'pair', 300);
  });

  it('a relay that dies between addBulk and commit leaves its rows to another, and each job still runs once', async () => {
    await relayA.app.close();
    await relayB.app.close();
    const prefix = worker.config.QUEUE_PREFIX;
    const crashing = await startTestApp({ databaseUrl: db.url, http: false, env: { QUEUE_PREFIX: prefix, OUTBOX_BATCH_SIZE: '50' } });
    const queues = crashing.app.get(Queues);
    const realPublish = queues.publish.bind(queues);
    jest.spyOn(queues, 'publish').mockImplementation(async (jobs) => {
      await realPublish(jobs);
      throw new Error('relay killed after addBulk, before commit');
    });
    await enqueueProbes(crashing, 'crash', 50);
    await expect(crashing.app.get(OutboxRelay).relayBatch()).rejects.toThrow('relay killed');
    // The jobs reached Redis, but Postgres still shows them unrelayed: the next relay publishes them
    // again. (The worker may have run some already: a run's claim stamps relayed_at with its outcome.)
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id LIKE 'crash-%' AND (relayed_at IS NULL OR completed_at IS NOT NULL)`)).toBe(50);
    await waitFor(() => db.count(`SELECT count(*) FROM probe_runs WHERE label = 'crash'`), (c) => c >= 1, { what: 'the first runs from the crashed publish' });
    await crashing.close();
    const survivor = await startTestApp({ databaseUrl: db.url, http: false, env: { QUEUE_PREFIX: prefix } });
    await survivor.app.get(OutboxRelay).start();
    await expectEachRanOnce(db, 'crash', 50);
    await waitFor(() => db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id LIKE 'crash-%' AND relayed_at IS NULL`), (c) => c === 0, { what: 'the survivor to mark the rows relayed' });
    await survivor.close();
    expect(await db.count(`SELECT count(*) FROM probe_runs WHERE label = 'crash'`)).toBe(50);
  });
});

describe('Redis loses its jobs', () => {
  let db: TestDatabase;
  let redis: PrivateRedis;
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await startPrivateRedis();
    app = await startTestApp({ databaseUrl: db.url, http: false, env: { REDIS_URL: redis.url, OUTBOX_REDRIVE_AFTER_SECONDS: '1' } });
  });
  afterAll(async () => {
    await app.close();
    redis.dispose();
    await db.drop();
  });

  it('FLUSHALL while jobs wait: every committed job still completes', async () => {
    await enqueueProbes(app, 'flushed', 100);
    const relayed = await app.app.get(OutboxRelay).relayBatch();
    expect(relayed).toBe(100);
    const queue = app.app.get(Queues).all()[0];
    expect(await queue.getJobCountByTypes('waiting')).toBe(100);
    const { Redis } = await import('ioredis');
    const admin = new Redis(redis.url);
    await admin.flushall();
    admin.disconnect();
    expect(await queue.getJobCountByTypes('waiting')).toBe(0);
    await app.app.get(OutboxRelay).start();
    const { JobWorkers } = await import('../../../src/platform/outbox/job-workers.js');
    app.app.get(JobWorkers).start();
    await expectEachRanOnce(db, 'flushed', 100);
  });

  it('Redis restarted empty mid-burst: nothing lost, nothing run twice', async () => {
    await enqueueProbes(app, 'restart', 100);
    await waitFor(() => db.count(`SELECT count(*) FROM probe_runs WHERE label = 'restart'`), (c) => c >= 1, { what: 'the burst to start' });
    redis.stop();
    await enqueueProbes(app, 'restartb', 50); // committed while Redis is down
    await redis.start();
    await expectEachRanOnce(db, 'restart', 100);
    await expectEachRanOnce(db, 'restartb', 50);
  });
});
