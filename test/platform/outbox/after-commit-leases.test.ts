import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AfterCommitJobs } from '../../../src/platform/outbox/after-commit-jobs.js';
import { JobRunner } from '../../../src/platform/outbox/job-runner.js';
import { ProbeJob } from '../../../src/platform/outbox/probe.handler.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

/** The private parts of AfterCommitJobs this test puts in the order a race can give them. */
interface LeaseInternals {
  leased: Map<string, number>;
  renewLeases(): Promise<void>;
}

/**
 * A run after commit that throws records its failure and makes its row due now, for the relay;
 * until the run has ended this process still lists the row among its leases. A renewal whose turn
 * falls between that commit and the run's end must not push the row a lease ahead again (seen as a
 * flaky CI run: the retry came one grace late).
 */
describe('after-commit leases and a failed run', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    // No relay anywhere on this database: the row stays as the two statements leave it.
    app = await startTestApp({ databaseUrl: db.url, http: false, worker: true, relay: false, env: { WORKER_AFTER_COMMIT_GRACE_SECONDS: '30' } });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('a renewal after the failure was recorded, while the run still holds its lease, leaves the row due for the relay', async () => {
    const jobId = 'probe-leased-failed';
    // What a statement with an after-commit job writes: a row no relay has taken, a lease ahead.
    await db.pool.query(
      `INSERT INTO outbox_jobs (job_id, queue, name, data, run_at) VALUES ($1, $2, $3, '{}', now() + interval '30 seconds')`,
      [jobId, ProbeJob.queue, ProbeJob.name],
    );
    const leases = app.app.get(AfterCommitJobs) as unknown as LeaseInternals;
    leases.leased.set(jobId, 1); // the run is still going: its lease is listed
    try {
      // The run threw: its failure is recorded and the row made due now.
      expect(await app.app.get(JobRunner).recordFailure(ProbeJob.name, jobId, new Error('the run threw'), false)).toBe('retried');
      // Then the renewal's turn comes, before the run has ended.
      await leases.renewLeases();
      const { rows } = await db.pool.query(`SELECT run_at <= now() AS due, attempts FROM outbox_jobs WHERE job_id = $1`, [jobId]);
      expect(rows[0]).toEqual({ due: true, attempts: 1 });
    } finally {
      leases.leased.delete(jobId);
    }
  });

  it('a renewal still pushes the lease of a row whose run has not ended or failed', async () => {
    const jobId = 'probe-leased-running';
    await db.pool.query(`INSERT INTO outbox_jobs (job_id, queue, name, data, run_at) VALUES ($1, $2, $3, '{}', now() + interval '1 second')`, [
      jobId,
      ProbeJob.queue,
      ProbeJob.name,
    ]);
    const leases = app.app.get(AfterCommitJobs) as unknown as LeaseInternals;
    leases.leased.set(jobId, 1);
    try {
      await leases.renewLeases();
      const { rows } = await db.pool.query(`SELECT run_at > now() + interval '20 seconds' AS renewed FROM outbox_jobs WHERE job_id = $1`, [jobId]);
      expect(rows[0].renewed).toBe(true);
    } finally {
      leases.leased.delete(jobId);
    }
  });
});
