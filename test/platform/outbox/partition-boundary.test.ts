import { describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { OutboxService } from '../../../src/platform/outbox/outbox.service.js';
import { ProbeJob } from '../../../src/platform/outbox/probe.handler.js';
import { boundaryIn as boundaryOf, waitingOnAdvisoryLock } from '../../support/partitions.js';
import { withTestApp } from '../../support/with-test-app.js';

/**
 * outbox_jobs is partitioned by created_at (migration 0043), so UNIQUE (job_id) holds only within
 * a partition; "a job id already in the outbox is one job" is outbox_job_twin's, across them.
 * Each test puts a partition boundary a moment from now and enqueues the same job id across it.
 */
describe('outbox: one job per job id across a partition boundary', () => {
  const t = withTestApp({ http: false });
  const enqueue = (jobId: string) => t.app.app.get(UnitOfWork).run((tx) => t.app.app.get(OutboxService).enqueue(tx, { job: ProbeJob, data: { label: 'boundary' }, jobId }));
  const rowsOf = (jobId: string) => t.db.pool.query<{ part: string }>(`SELECT tableoid::regclass::text AS part FROM outbox_jobs WHERE job_id = $1`, [jobId]).then((r) => r.rows.map((row) => row.part));

  const boundaryIn = (ms: number) => boundaryOf(t.db.pool, 'outbox_jobs', ms);

  it('the same job enqueued again just after the boundary is not a new job: one row, before it', async () => {
    const { before, passed } = await boundaryIn(1000);
    const jobId = `probe-${randomUUID()}`;
    expect(await enqueue(jobId)).toBe(true);
    await passed();
    expect(await enqueue(jobId)).toBe(false);
    expect(await rowsOf(jobId)).toEqual([before]);
  }, 30_000);

  it.each([
    ['commits', false, 'before'],
    ['rolls back', true, 'after'],
  ] as const)('racing across the boundary with a twin the test holds uncommitted, which then %s: enqueue says new = %s, one row', async (ending, isNew, side) => {
    const { before, after, passed } = await boundaryIn(1000);
    const jobId = `probe-${randomUUID()}`;
    const holder = await t.db.pool.connect();
    try {
      await holder.query('BEGIN');
      // As enqueue does: no stored twin, so the id's lock is taken; then the row, before the boundary.
      expect((await holder.query(`SELECT outbox_job_twin($1) AS twin`, [jobId])).rows[0].twin).toBeNull();
      await holder.query(`INSERT INTO outbox_jobs (job_id, queue, name, data) VALUES ($1, 'system', 'probe', '{}')`, [jobId]);
      await passed();
      const racing = enqueue(jobId);
      await waitingOnAdvisoryLock(t.db.pool, "the enqueue to wait on the job id's lock the test holds");
      await holder.query(ending === 'commits' ? 'COMMIT' : 'ROLLBACK');
      expect(await racing).toBe(isNew);
      expect(await rowsOf(jobId)).toEqual([side === 'before' ? before : after]);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  }, 30_000);
});
