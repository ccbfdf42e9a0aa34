import { beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { CustomerEvents } from '../../../src/modules/webhooks/customer-events.js';
import { DeliveredAttempts, type DeliveredAttempt } from '../../../src/modules/webhooks/delivered-attempts.js';
import { attemptJobId } from '../../../src/modules/webhooks/delivery-scheduler.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { ApiClient } from '../../support/api-client.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

/**
 * Successful attempts are recorded together (group commit): one statement for those that finish
 * while the previous one runs. Each keeps its own guard, a twin is recorded once, and one value
 * Postgres refuses fails only its own record.
 */
describe('successful delivery attempts recorded together', () => {
  // No worker and no relay: the first attempts' jobs stay pending for the test to record.
  const t = withTestApp();
  let customer: ApiClient;
  let recorder: DeliveredAttempts;

  beforeAll(async () => {
    customer = await ApiClient.forNewAccount(t.app, 'delivered');
    expect((await customer.post('/v2/webhook_endpoints', { url: 'http://127.0.0.1:9/hook' })).status).toBe(201);
    recorder = t.app.app.get(DeliveredAttempts);
  });

  /** A new event's delivery (pending, its first attempt's job written); returns the success of that attempt. */
  async function firstAttemptSucceeded(durationMs = 12): Promise<DeliveredAttempt> {
    const eventId = await t.app.app.get(UnitOfWork).run((tx) => t.app.app.get(CustomerEvents).emit(tx, customer.accountId, 'message.delivered', { id: 'msg_batch' }));
    const { rows } = await t.db.pool.query<{ id: string }>(`SELECT id FROM webhook_deliveries WHERE event_id = $1`, [eventId]);
    const ref = { id: rows[0].id, eventId, round: 1, attempt: 1 };
    return { outcome: { ref, status: 'delivered', nextAt: null, result: { statusCode: 200, body: 'ok', durationMs }, at: new Date() }, jobId: attemptJobId(ref) };
  }

  const delivery = (id: string) => t.db.pool.query(`SELECT status, attempt_count, xmin::text AS xmin FROM webhook_deliveries WHERE id = $1`, [id]).then((r) => r.rows[0]);
  const attemptRows = (id: string) => t.db.count(`SELECT count(*) FROM webhook_delivery_attempts WHERE delivery_id = $1`, [id]);
  const jobDone = (attempt: DeliveredAttempt) => t.db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND completed_at IS NOT NULL`, [attempt.jobId]);

  it('successes submitted together commit in one transaction; a twin of one of them is recorded once', async () => {
    const [a, b] = [await firstAttemptSucceeded(), await firstAttemptSucceeded()];
    await Promise.all([recorder.record(a), recorder.record(b), recorder.record(b)]);
    const [da, db_] = [await delivery(a.outcome.ref.id), await delivery(b.outcome.ref.id)];
    expect([da.status, db_.status]).toEqual(['delivered', 'delivered']);
    expect(da.xmin).toBe(db_.xmin);
    expect([await attemptRows(a.outcome.ref.id), await attemptRows(b.outcome.ref.id)]).toEqual([1, 1]);
    expect([await jobDone(a), await jobDone(b)]).toEqual([1, 1]);
  });

  it('a value Postgres refuses fails that record alone; the others in its batch are recorded', async () => {
    const [bad, good] = [await firstAttemptSucceeded(2 ** 40), await firstAttemptSucceeded()];
    const [badOutcome, goodOutcome] = await Promise.allSettled([recorder.record(bad), recorder.record(good)]);
    expect(badOutcome.status).toBe('rejected');
    expect(goodOutcome.status).toBe('fulfilled');
    expect((await delivery(bad.outcome.ref.id)).status).toBe('pending');
    expect(await jobDone(bad)).toBe(0);
    expect((await delivery(good.outcome.ref.id)).status).toBe('delivered');
    expect(await attemptRows(good.outcome.ref.id)).toBe(1);
  });

  it('a competitor records one delivery first while the batch waits on its row: the batch re-reads that guard, records the rest', async () => {
    const [a, b] = [await firstAttemptSucceeded(), await firstAttemptSucceeded()];
    // The competitor (a twin run of b's attempt) holds b's row, its record written, not committed.
    const competitor = new pg.Client({ connectionString: t.db.url });
    await competitor.connect();
    try {
      await competitor.query('BEGIN');
      await competitor.query(`UPDATE webhook_deliveries SET attempt_count = 1, status = 'delivered', delivered_at = now() WHERE id = $1`, [b.outcome.ref.id]);
      const batch = Promise.all([recorder.record(a), recorder.record(b)]);
      await waitFor(
        () => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`),
        (n) => n === 1,
        { what: 'the batch to wait on the competitor' },
      );
      await competitor.query('COMMIT');
      await batch;
    } finally {
      await competitor.end();
    }
    // b: the competitor's record stands, the batch added none; a: recorded by the batch.
    expect(await attemptRows(b.outcome.ref.id)).toBe(0);
    expect((await delivery(a.outcome.ref.id)).status).toBe('delivered');
    expect(await attemptRows(a.outcome.ref.id)).toBe(1);
    expect([await jobDone(a), await jobDone(b)]).toEqual([1, 1]);
  });
});
