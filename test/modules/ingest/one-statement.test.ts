import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ProcessCarrierEventHandler } from '../../../src/modules/ingest/process-carrier-event.handler.js';
import { MESSAGE_COLUMNS, MESSAGE_VIEW_JSON, toView } from '../../../src/modules/messaging/message-view.js';
import { DeliveryAttemptHandler } from '../../../src/modules/webhooks/delivery-attempt.handler.js';
import { ATTEMPT_JOB_ID_SQL, attemptJobId } from '../../../src/modules/webhooks/delivery-scheduler.js';
import { ApiClient } from '../../support/api-client.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { telnyxInboundSms, telnyxSigner } from '../../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { pausePoint } from '../../support/pause.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import { waitFor } from '../../support/wait.js';

const OUR_NUMBER = '+17735550091';
const signer = telnyxSigner();

/**
 * The hot path's one-statement jobs (an inbound SMS, a delivery attempt), each run twice at once
 * on purpose: the first held inside its statement, right after its guard, while the twin runs
 * against exactly that state. The app runs no relay and no worker: only the test runs jobs.
 */
describe('jobs that run as one statement, raced against a twin run', () => {
  let db: TestDatabase;
  let app: TestApp;
  let customer: ApiClient;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startWebhookReceiver();
    app = await startTestApp({ databaseUrl: db.url, env: { TELNYX_PUBLIC_KEY: signer.publicKey } });
    customer = await ApiClient.forNewAccount(app);
    await customer.assignNumber(OUR_NUMBER, 'telnyx');
    expect((await customer.post('/v2/webhook_endpoints', { url: `${receiver.url}/hook`, event_types: ['message.received'] })).status).toBe(201);
  });
  afterAll(async () => {
    await app.close();
    await receiver.close();
    await db.drop();
  });

  /** Statements of the app waiting for a row another transaction holds (not for a test's pause). */
  const blockedOnRows = () =>
    db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`);

  /** An inbound SMS ingested; returns the id of its stored event, which is also its job's id. */
  async function ingestInbound(text: string): Promise<{ eventId: string; carrierMessageId: string }> {
    const { body, carrierMessageId } = telnyxInboundSms(OUR_NUMBER, text);
    const res = await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body });
    expect(res.status).toBe(200);
    const { rows } = await db.pool.query(`SELECT id FROM carrier_events WHERE carrier_event_id = $1`, [JSON.parse(body).data.id]);
    return { eventId: rows[0].id, carrierMessageId };
  }

  it('an inbound SMS job run twice at once: one message, history row, usage row, event, delivery and delivery job', async () => {
    const { eventId, carrierMessageId } = await ingestInbound('twin runs');
    const claimed = await pausePoint(db.url, { table: 'outbox_jobs', on: 'UPDATE', when: `NEW.job_id = '${eventId}' AND NEW.completed_at IS NOT NULL` });
    try {
      await claimed.hold();
      const handler = app.app.get(ProcessCarrierEventHandler);
      const first = handler.runInOneStatement(eventId);
      await claimed.waitUntilPaused();
      // The twin reads the event as unprocessed (the first has not committed) and its claim
      // waits on the job row the first holds.
      const second = handler.runInOneStatement(eventId);
      await waitFor(blockedOnRows, (n) => n >= 1, { what: 'the twin to wait on the job row' });
      await claimed.release();
      expect(await Promise.all([first, second])).toEqual(['completed', 'skipped']);
    } finally {
      await claimed.remove();
    }
    const [message] = (await db.pool.query(`SELECT id FROM messages WHERE carrier_message_id = $1`, [carrierMessageId])).rows;
    expect(await db.count(`SELECT count(*) FROM messages WHERE carrier_message_id = $1`, [carrierMessageId])).toBe(1);
    expect(await db.count(`SELECT count(*) FROM message_status_history WHERE message_id = $1`, [message.id])).toBe(1);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [message.id])).toBe(1);
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE payload->>'id' = $1`, [message.id])).toBe(1);
    expect(await db.count(`SELECT count(*) FROM webhook_deliveries d JOIN outbound_events e ON e.id = d.event_id WHERE e.payload->>'id' = $1`, [message.id])).toBe(1);
    expect(await db.count(`SELECT count(*) FROM outbox_jobs j JOIN webhook_deliveries d ON j.job_id = 'dlv-' || d.id || '-1-1' JOIN outbound_events e ON e.id = d.event_id WHERE e.payload->>'id' = $1`, [message.id])).toBe(1);
    expect(await db.count(`SELECT attempts FROM carrier_events WHERE id = $1 AND processed_at IS NOT NULL`, [eventId])).toBe(1);
    expect(await db.count(`SELECT attempts FROM outbox_jobs WHERE job_id = $1 AND completed_at IS NOT NULL`, [eventId])).toBe(1);
  }, 30000);

  it('a delivery attempt run twice at once: both may call (at least once), one attempt recorded, delivered once', async () => {
    const { eventId, carrierMessageId } = await ingestInbound('twin attempts');
    expect(await app.app.get(ProcessCarrierEventHandler).runInOneStatement(eventId)).toBe('completed');
    const [delivery] = (
      await db.pool.query(
        `SELECT d.id, e.id AS event_id FROM webhook_deliveries d JOIN outbound_events e ON e.id = d.event_id JOIN messages m ON m.id = e.payload->>'id' WHERE m.carrier_message_id = $1`,
        [carrierMessageId],
      )
    ).rows;
    const jobId = attemptJobId({ id: delivery.id, round: 1, attempt: 1 });
    const recorded = await pausePoint(db.url, { table: 'webhook_deliveries', on: 'UPDATE', when: `NEW.id = '${delivery.id}' AND NEW.status = 'delivered'` });
    const handler = app.app.get(DeliveryAttemptHandler);
    try {
      await recorded.hold();
      const first = handler.runInOneStatement(jobId);
      await recorded.waitUntilPaused();
      const second = handler.runInOneStatement(jobId);
      await receiver.waitForRequests(2, (r) => r.headers['webhook-id'] === delivery.event_id);
      await waitFor(blockedOnRows, (n) => n >= 1, { what: 'the twin to wait on the delivery row' });
      await recorded.release();
      expect(await Promise.all([first, second])).toEqual(['completed', 'completed']);
    } finally {
      await recorded.remove();
    }
    expect(receiver.requestsFor(delivery.event_id)).toHaveLength(2);
    expect(await db.count(`SELECT count(*) FROM webhook_delivery_attempts WHERE delivery_id = $1`, [delivery.id])).toBe(1);
    const [row] = (await db.pool.query(`SELECT status, attempt_count FROM webhook_deliveries WHERE id = $1`, [delivery.id])).rows;
    expect(row).toEqual({ status: 'delivered', attempt_count: 1 });
    // a job that has its outcome is not run again: the general path finds nothing to do
    expect(await handler.runInOneStatement(jobId)).toBeUndefined();
  }, 30000);

  it('with DATABASE_PREPARED_STATEMENTS=false (a pooler that cannot keep them) the same one-statement job runs unnamed', async () => {
    const unnamed = await startTestApp({ databaseUrl: db.url, http: false, env: { DATABASE_PREPARED_STATEMENTS: 'false' } });
    try {
      expect(unnamed.config.DATABASE_PREPARED_STATEMENTS).toBe(false);
      const { eventId, carrierMessageId } = await ingestInbound('sent unnamed');
      expect(await unnamed.app.get(ProcessCarrierEventHandler).runInOneStatement(eventId)).toBe('completed');
      expect(await db.count(`SELECT count(*) FROM messages WHERE carrier_message_id = $1`, [carrierMessageId])).toBe(1);
    } finally {
      await unnamed.close();
    }
  });

  it('onceline_id() mints in order on one connection, within a millisecond too (events of one transaction list in the order written)', async () => {
    const client = await db.pool.connect();
    try {
      const first = (await client.query(`SELECT onceline_id('evt') AS id FROM generate_series(1, 5000) n ORDER BY n`)).rows.map((r) => r.id);
      const next = (await client.query(`SELECT onceline_id('evt') AS id`)).rows[0].id;
      const ids = [...first, next];
      expect([...ids].sort()).toEqual(ids);
      expect(new Set(ids).size).toBe(ids.length);
      // several per millisecond, or the order above proves nothing
      expect(new Set(ids.map((id) => id.slice(4, 14))).size).toBeLessThan(ids.length / 2);
    } finally {
      client.release();
    }
  });

  it('what the statements build in SQL matches what the code builds: ids, message views, attempt job ids', async () => {
    const [{ id }] = (await db.pool.query(`SELECT onceline_id('msg') AS id`)).rows;
    expect(id).toMatch(/^msg_[0-9a-hjkmnp-tv-z]{26}$/);
    const now = Date.now();
    const stamp = parseInt(
      [...id.slice(4, 14)].map((c) => '0123456789abcdefghjkmnpqrstvwxyz'.indexOf(c).toString(2).padStart(5, '0')).join(''),
      2,
    );
    expect(Math.abs(stamp - now)).toBeLessThan(60_000);

    const { eventId, carrierMessageId } = await ingestInbound('a view built in SQL');
    expect(await app.app.get(ProcessCarrierEventHandler).runInOneStatement(eventId)).toBe('completed');
    const [row] = (await db.pool.query(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE carrier_message_id = $1`, [carrierMessageId])).rows;
    expect(row).toBeDefined();
    const [{ view }] = (await db.pool.query(`SELECT ${MESSAGE_VIEW_JSON} AS view FROM (SELECT ${MESSAGE_COLUMNS} FROM messages WHERE carrier_message_id = $1) m`, [carrierMessageId])).rows;
    expect(view).toEqual(JSON.parse(JSON.stringify(toView(row))));

    const ref = { id: 'dlv_01abc', round: 3, attempt: 7 };
    const [{ job }] = (await db.pool.query(`SELECT ${ATTEMPT_JOB_ID_SQL} AS job FROM (SELECT $1::text AS id, $2::int AS round, $3::int AS attempt) r`, [ref.id, ref.round, ref.attempt])).rows;
    expect(job).toBe(attemptJobId(ref));
  });
});
