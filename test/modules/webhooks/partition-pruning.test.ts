import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CustomerEvents } from '../../../src/modules/webhooks/customer-events.js';
import { attemptJobId } from '../../../src/modules/webhooks/delivery-scheduler.js';
import type { CustomerEventType } from '../../../src/modules/webhooks/event-types.js';
import { WebhookDeliveryAttemptJob } from '../../../src/modules/webhooks/webhooks.jobs.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { JobRunner } from '../../../src/platform/outbox/job-runner.js';
import { ApiClient } from '../../support/api-client.js';
import { partitionsRead, type StatementReads } from '../../support/partition-plans.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import { withTestApp } from '../../support/with-test-app.js';

const TABLES = ['webhook_deliveries', 'outbound_events'];
const PAST_DAYS = 5;

/**
 * A delivery attempt finds its delivery by its own id, which carries the delivery's time, while
 * webhook_deliveries is partitioned by its event's id time (migration 0047): the attempt's job
 * carries the event id, so each statement of an attempt reads the one partition of the event's day
 * (of webhook_deliveries and of outbound_events), not all of them. Read from the plans of the
 * app's own statements as they run (EXPLAIN ANALYZE of each, test/support/partition-plans.ts), with
 * days of partitions besides today's. A job written before jobs carried the event id still runs:
 * it finds its delivery in every partition once, then by its event.
 */
describe('webhook delivery attempts: one partition by the event id the job carries', () => {
  // No relay and no worker: the test runs each attempt's job itself.
  const t = withTestApp({ env: { WEBHOOK_RETRY_SCHEDULE: '0,0,0' } });
  let receiver: WebhookReceiver;
  let customer: ApiClient;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    // Days before today, so that a lookup naming no partition would have some to probe.
    for (const table of [...TABLES, 'webhook_delivery_attempts']) {
      for (let day = 1; day <= PAST_DAYS; day++) {
        await t.db.pool.query(`SELECT onceline_add_partition($1, date_trunc('day', now()) - make_interval(days => $2), date_trunc('day', now()) - make_interval(days => $2 - 1))`, [table, day]);
      }
    }
    customer = await ApiClient.forNewAccount(t.app, 'delivery partitions');
  });
  afterAll(() => receiver.close());

  async function endpoint(path: string): Promise<string> {
    const res = await customer.post('/v2/webhook_endpoints', { url: `${receiver.url}${path}`, event_types: [`message.${path.slice(1)}`] });
    expect(res.status).toBe(201);
    return res.body.data.id;
  }

  /** An event with one delivery (to the endpoint subscribed to its type), and its first attempt's job. */
  async function delivery(type: CustomerEventType) {
    const eventId = await t.app.app.get(UnitOfWork).run((tx) => t.app.app.get(CustomerEvents).emit(tx, customer.accountId, type, { id: 'msg_partitions' }));
    const { rows } = await t.db.pool.query(`SELECT id, tableoid::regclass::text AS part FROM webhook_deliveries WHERE event_id = $1`, [eventId]);
    expect(rows).toHaveLength(1);
    const { rows: event } = await t.db.pool.query(`SELECT tableoid::regclass::text AS part FROM outbound_events WHERE id = $1`, [eventId]);
    return { eventId, id: rows[0].id as string, part: rows[0].part as string, eventPart: event[0].part as string };
  }

  const job = (deliveryId: string, attempt: number) =>
    t.db.pool.query(`SELECT job_id, data FROM outbox_jobs WHERE job_id = $1`, [attemptJobId({ id: deliveryId, round: 1, attempt })]).then((r) => r.rows[0]);
  const run = (jobId: string) => partitionsRead(TABLES, () => t.app.app.get(JobRunner).run(WebhookDeliveryAttemptJob.name, jobId, 1));
  const status = (id: string) => t.db.pool.query(`SELECT status FROM webhook_deliveries WHERE id = $1`, [id]).then((r) => r.rows[0].status);
  const partitionCount = async () => Number((await t.db.pool.query(`SELECT count(*) FROM pg_inherits WHERE inhparent = 'webhook_deliveries'::regclass`)).rows[0].count);

  /** Every statement read at most the delivery's partition of webhook_deliveries and its event's of outbound_events. */
  function expectPruned(statements: StatementReads[], d: { part: string; eventPart: string }) {
    for (const s of statements) {
      expect({ text: s.text, scanned: s.scanned.webhook_deliveries }).toEqual({ text: s.text, scanned: s.text.includes('webhook_deliveries') ? [d.part] : [] });
      expect({ text: s.text, scanned: s.scanned.outbound_events }).toEqual({ text: s.text, scanned: s.scanned.outbound_events.length ? [d.eventPart] : [] });
    }
  }

  it('a first attempt that succeeds: the job\'s read of its delivery and event, and the record of its success, each read one partition', async () => {
    await endpoint('/delivered');
    const d = await delivery('message.delivered');
    const first = await job(d.id, 1);
    expect(first.data).toEqual({ deliveryId: d.id, eventId: d.eventId, round: 1, attempt: 1 });
    expect(await partitionCount()).toBeGreaterThanOrEqual(PAST_DAYS + 3);
    const { result, statements } = await run(first.job_id);
    expect(result).toBe('completed');
    expect(await status(d.id)).toBe('delivered');
    expect(receiver.requestsFor(d.eventId)).toHaveLength(1);
    // The read (job, delivery, endpoint, event) and the recording UPDATE.
    expect(statements.filter((s) => /^WITH job AS/.test(s.text))).toHaveLength(1);
    expect(statements.filter((s) => s.text.includes('UPDATE webhook_deliveries'))).toHaveLength(1);
    expectPruned(statements, d);
  }, 30_000);

  it('a failed attempt records its failure and writes the next attempt\'s job with the event id; that job reads one partition too', async () => {
    await endpoint('/failed');
    const d = await delivery('message.failed');
    receiver.script({ status: 500, body: 'no' });
    const { statements } = await run((await job(d.id, 1)).job_id);
    expect(await status(d.id)).toBe('pending');
    expect(statements.filter((s) => s.text.includes('UPDATE webhook_deliveries'))).toHaveLength(1);
    expectPruned(statements, d);
    const second = await job(d.id, 2);
    expect(second.data).toEqual({ deliveryId: d.id, eventId: d.eventId, round: 1, attempt: 2 });
    const again = await run(second.job_id);
    expect(await status(d.id)).toBe('delivered');
    expectPruned(again.statements, d);
  }, 30_000);

  it('an endpoint disabled meanwhile: the general path loads and parks the delivery in its one partition', async () => {
    const endpointId = await endpoint('/sent');
    const d = await delivery('message.sent');
    await t.db.pool.query(`UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'test' WHERE id = $1`, [endpointId]);
    const { statements } = await run((await job(d.id, 1)).job_id);
    expect(await status(d.id)).toBe('parked');
    expect(statements.filter((s) => s.text.includes('UPDATE webhook_deliveries'))).toHaveLength(1);
    expectPruned(statements, d);
    expect(receiver.requestsFor(d.eventId)).toHaveLength(0);
  }, 30_000);

  it('a job written before jobs carried the event id is still run: its delivery found in every partition once, then recorded in its own', async () => {
    await endpoint('/cancelled');
    const d = await delivery('message.cancelled');
    const { job_id: jobId } = await job(d.id, 1);
    await t.db.pool.query(`UPDATE outbox_jobs SET data = data - 'eventId' WHERE job_id = $1`, [jobId]);
    const { result, statements } = await run(jobId);
    expect(result).toBe('completed');
    expect(await status(d.id)).toBe('delivered');
    expect(receiver.requestsFor(d.eventId)).toHaveLength(1);
    // The fast path's read finds nothing without the event id; the general path's load probes
    // every partition for the delivery (one finds it), as before jobs carried it; the record reads one.
    const load = statements.filter((s) => /FROM webhook_deliveries d .* WHERE d\.id = \$1$/.test(s.text));
    expect(load).toHaveLength(1);
    expect(load[0].scanned.webhook_deliveries).toHaveLength(await partitionCount());
    const record = statements.filter((s) => s.text.includes('UPDATE webhook_deliveries'));
    expect(record).toHaveLength(1);
    expectPruned(record, d);
  }, 30_000);
});
