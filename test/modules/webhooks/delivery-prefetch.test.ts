import { beforeAll, describe, expect, it } from '@jest/globals';
import { CustomerEvents } from '../../../src/modules/webhooks/customer-events.js';
import { DELIVERY_COLUMNS, DELIVERY_JOINS, deliveryFromJson } from '../../../src/modules/webhooks/delivery-row.js';
import { CteStatement } from '../../../src/platform/database/cte-statement.js';
import { WebhookDeliveryAttemptJob } from '../../../src/modules/webhooks/webhooks.jobs.js';
import { ApiClient } from '../../support/api-client.js';
import { withTestApp } from '../../support/with-test-app.js';
import { StatementJobs, afterCommitJobs } from '../../../src/platform/outbox/statement-jobs.js';

/**
 * A first attempt run right after the statement that created its delivery starts from what that
 * statement returned (StatementJobs.afterCommitPrefetchCtes), not from a read: what it returns
 * must be the row the read gives, field for field, or the first attempt would sign or send
 * something its retries do not.
 */
describe('the delivery a first attempt run after commit starts from', () => {
  const t = withTestApp();
  let customer: ApiClient;

  beforeAll(async () => {
    customer = await ApiClient.forNewAccount(t.app, 'prefetch');
    const rotated = await customer.post('/v2/webhook_endpoints', { url: 'http://127.0.0.1:9/rotated', event_types: ['message.received'] });
    expect(rotated.status).toBe(201);
    // Signed with both secrets until the previous one expires.
    expect((await customer.post(`/v2/webhook_endpoints/${rotated.body.data.id}/rotate_secret`, {})).status).toBeLessThan(300);
    expect((await customer.post('/v2/webhook_endpoints', { url: 'http://127.0.0.1:9/plain' })).status).toBe(201);
    // Neither subscribed nor live: no delivery.
    expect((await customer.post('/v2/webhook_endpoints', { url: 'http://127.0.0.1:9/other', event_types: ['message.delivered'] })).status).toBe(201);
  });

  /** Emits one event as a statement whose process runs the first attempts after commit; returns its after-commit jobs. */
  async function emitRunningAfterCommit(payload: object): Promise<{ name: string; jobId: string; prefetched: never }[]> {
    const stmt = new CteStatement();
    StatementJobs.of(stmt).runAfterCommit.add(WebhookDeliveryAttemptJob.name);
    stmt.with('evt_source', `SELECT ${stmt.param(customer.accountId)}::text AS account_id, ${stmt.param(JSON.stringify(payload))}::jsonb AS payload`);
    t.app.app.get(CustomerEvents).emitFromCte(stmt, 'evt_source', 'message.received', 'payload');
    const { rows } = await t.db.pool.query(stmt.text(`SELECT ${afterCommitJobs(stmt)} AS jobs`), stmt.params);
    return rows[0].jobs;
  }

  it('is the row the read gives, for each subscribed endpoint (a rotated secret, nulls and unicode in the payload included)', async () => {
    const jobs = await emitRunningAfterCommit({ id: 'msg_prefetch', text: 'héllo \u{1F600} "quoted"', error_code: null, nested: { list: [1, null, 'x'] } });
    expect(jobs.map((j) => j.name)).toEqual([WebhookDeliveryAttemptJob.name, WebhookDeliveryAttemptJob.name]);
    for (const job of jobs) {
      const { rows } = await t.db.pool.query(
        `SELECT (j.data->>'round')::int AS job_round, (j.data->>'attempt')::int AS job_attempt, ${DELIVERY_COLUMNS}
           FROM outbox_jobs j JOIN webhook_deliveries d ON d.id = j.data->>'deliveryId' ${DELIVERY_JOINS} WHERE j.job_id = $1`,
        [job.jobId],
      );
      expect(rows).toHaveLength(1);
      expect(deliveryFromJson(job.prefetched)).toEqual(rows[0]);
    }
    const secrets = jobs.map((j) => deliveryFromJson<object>(j.prefetched).secrets.length).sort();
    expect(secrets).toEqual([1, 2]);
  });
});
