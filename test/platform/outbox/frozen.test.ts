import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { UnrecoverableError, Worker, type Processor, type WorkerOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { ProbeJob } from '../../../src/platform/outbox/probe.handler.js';
import { JobWorkers } from '../../../src/platform/outbox/job-workers.js';
import { OutboxRelay } from '../../../src/platform/outbox/outbox-relay.js';
import { OutboxService } from '../../../src/platform/outbox/outbox.service.js';
import { Queues } from '../../../src/platform/outbox/queues.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { TEST_REDIS_URL } from '../../support/env.js';
import { waitFor } from '../../support/wait.js';

/**
 * Jobs BullMQ holds as failed while Postgres shows them unfinished: our runner never recorded
 * an outcome (a worker that lost them, two stalls). Each test plays BullMQ's side with a raw
 * Worker on the app's queue prefix, whose processor is not our JobRunner.
 */
describe('jobs frozen in Redis', () => {
  let db: TestDatabase;
  let app: TestApp;
  const rawWorkers: Worker[] = [];
  /** BullMQ does not close a connection it was handed. */
  const rawConnections: Redis[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url, http: false, env: { WORKER_LOCK_DURATION_MS: '1000' } });
  });
  afterEach(async () => {
    await Promise.all(rawWorkers.splice(0).map((w) => w.close(true)));
    rawConnections.splice(0).forEach((c) => c.disconnect());
    await app.app.get(JobWorkers).beforeApplicationShutdown(); // each test starts ours when it wants them
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  /** Commits one probe job and hands it to Redis, as the relay does. */
  async function relayedProbe(jobId: string): Promise<void> {
    await app.app.get(UnitOfWork).run((tx) => app.app.get(OutboxService).enqueue(tx, { job: ProbeJob, data: { label: jobId }, jobId }));
    expect(await app.app.get(OutboxRelay).relayBatch()).toBe(1);
  }

  /**
   * A BullMQ Worker on the app's system queue that is not ours. Its stall check is off unless
   * asked for: a check claims the queue's check slot for a whole stalledInterval (30 s by default).
   */
  function rawWorker(processor: Processor, options: Partial<WorkerOptions> = {}): Worker {
    const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    rawConnections.push(connection);
    const worker = new Worker(ProbeJob.queue, processor, {
      connection,
      prefix: app.config.QUEUE_PREFIX,
      skipStalledCheck: true,
      ...options,
    });
    worker.on('error', () => undefined);
    rawWorkers.push(worker);
    return worker;
  }

  /**
   * Runs the job in two slots that never finish and never renew their lock: each run stalls, and
   * after the second stall BullMQ fails the job in the next worker that fetches it, without
   * running that worker's processor. Both slots stay busy, so this worker fetches it no more.
   */
  async function stallTwice(jobId: string): Promise<void> {
    const stalls: string[] = [];
    const stalling = rawWorker(() => new Promise<never>(() => undefined), {
      concurrency: 2,
      lockDuration: 300,
      stalledInterval: 300,
      skipLockRenewal: true,
      skipStalledCheck: false,
    });
    stalling.on('stalled', (id) => stalls.push(id));
    await waitFor(() => stalls.length, (n) => n >= 2, { what: `${jobId} to stall twice` });
    expect(stalls).toEqual([jobId, jobId]);
  }

  const stateOf = (jobId: string) => app.app.get(Queues).get(ProbeJob.queue).getJobState(jobId);
  const row = async (jobId: string) => (await db.pool.query(`SELECT completed_at, failed_at, last_error, attempts FROM outbox_jobs WHERE job_id = $1`, [jobId])).rows[0];
  const probeRuns = (jobId: string) => db.count(`SELECT count(*) FROM probe_runs WHERE job_id = $1`, [jobId]);
  const redriveNow = async (jobId: string) => {
    await db.pool.query(`UPDATE outbox_jobs SET redrive_at = now() WHERE job_id = $1`, [jobId]);
    return app.app.get(OutboxRelay).redriveBatch();
  };

  it('a job BullMQ failed without our runner seeing it is re-added by the redrive and runs once', async () => {
    await relayedProbe('frozen-1');
    rawWorker(async () => {
      throw new UnrecoverableError('the worker lost this job');
    });
    await waitFor(() => stateOf('frozen-1'), (s) => s === 'failed', { what: 'BullMQ to hold frozen-1 as failed' });
    await Promise.all(rawWorkers.splice(0).map((w) => w.close()));
    expect(await row('frozen-1')).toMatchObject({ completed_at: null, failed_at: null });

    app.app.get(JobWorkers).start([ProbeJob.queue]);
    expect(await redriveNow('frozen-1')).toBe(1);
    await waitFor(() => row('frozen-1'), (r) => r.completed_at !== null, { what: 'frozen-1 to complete after the redrive' });
    expect(await probeRuns('frozen-1')).toBe(1);
    expect(await stateOf('frozen-1')).toBe('unknown'); // completed jobs leave Redis

    expect(await redriveNow('frozen-1')).toBe(0); // finished in Postgres: nothing to redrive
    expect(await probeRuns('frozen-1')).toBe(1);
  });

  it('the redrive never removes a job that is running: it stays the one running copy', async () => {
    let finish!: () => void;
    const running = new Promise<void>((resolve) => (finish = resolve));
    await relayedProbe('busy-1');
    rawWorker(() => running);
    await waitFor(() => stateOf('busy-1'), (s) => s === 'active', { what: 'busy-1 to be running' });
    const queue = app.app.get(Queues).get(ProbeJob.queue);
    const before = await queue.getJob('busy-1');

    expect(await redriveNow('busy-1')).toBe(1);
    expect(await stateOf('busy-1')).toBe('active');
    expect((await queue.getJob('busy-1'))?.processedOn).toBe(before?.processedOn);
    expect(await queue.getJobCounts('waiting', 'delayed', 'active')).toEqual({ waiting: 0, delayed: 0, active: 1 });
    finish();
    await waitFor(() => stateOf('busy-1'), (s) => s !== 'active', { what: 'the raw run of busy-1 to end' });
    expect(await probeRuns('busy-1')).toBe(0); // the raw worker is not our runner
  });

  it('a job failed for stalling twice is recorded (last_error, not final), and the redrive then runs it once', async () => {
    await relayedProbe('stalled-1');
    await stallTwice('stalled-1');
    expect(await row('stalled-1')).toMatchObject({ last_error: null, attempts: 0 });

    app.app.get(JobWorkers).start([ProbeJob.queue]);
    await waitFor(() => stateOf('stalled-1'), (s) => s === 'failed', { what: 'BullMQ to fail stalled-1' });
    const recorded = await waitFor(() => row('stalled-1'), (r) => r.last_error !== null, { what: 'the stall failure to be recorded' });
    expect(recorded).toMatchObject({ last_error: 'job stalled more than allowable limit', attempts: 1, failed_at: null, completed_at: null });
    expect(await probeRuns('stalled-1')).toBe(0);

    expect(await redriveNow('stalled-1')).toBe(1);
    await waitFor(() => row('stalled-1'), (r) => r.completed_at !== null, { what: 'stalled-1 to complete after the redrive' });
    expect(await probeRuns('stalled-1')).toBe(1);
  });

  it('a stall failure is final once the job has spent its attempts', async () => {
    await relayedProbe('spent-1');
    await db.pool.query(`UPDATE outbox_jobs SET attempts = 4 WHERE job_id = 'spent-1'`); // probe: 5 attempts
    await stallTwice('spent-1');
    app.app.get(JobWorkers).start([ProbeJob.queue]);
    const recorded = await waitFor(() => row('spent-1'), (r) => r.last_error !== null, { what: 'the stall failure to be recorded' });
    expect(recorded.attempts).toBe(5);
    expect(recorded.failed_at).not.toBeNull();
    expect(await redriveNow('spent-1')).toBe(0);
    expect(await probeRuns('spent-1')).toBe(0);
  });
});
