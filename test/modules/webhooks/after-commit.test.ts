import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { CustomerEvents } from '../../../src/modules/webhooks/customer-events.js';
import { CteStatement } from '../../../src/platform/database/cte-statement.js';
import { AfterCommitJobs, type AfterCommitSlot } from '../../../src/platform/outbox/after-commit-jobs.js';
import { WebhookDeliveryAttemptJob } from '../../../src/modules/webhooks/webhooks.jobs.js';
import { OutboxRelay } from '../../../src/platform/outbox/outbox-relay.js';
import { ApiClient } from '../../support/api-client.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { telnyxInboundSms, telnyxSigner } from '../../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { pausePoint } from '../../support/pause.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import { waitFor } from '../../support/wait.js';
import { StatementJobs, afterCommitJobs } from '../../../src/platform/outbox/statement-jobs.js';

const OUR_NUMBER = '+17735550092';
const GRACE_SECONDS = 2;
const signer = telnyxSigner();

interface JobRow {
  job_id: string;
  created_at: Date;
  run_at: Date;
  relayed_at: Date | null;
  redrive_at: Date | null;
  completed_at: Date | null;
  attempts: number;
  last_error: string | null;
}

/**
 * A new event's first webhook attempt is run by the worker whose one-statement run created it,
 * right after that statement committed (AfterCommitJobs), instead of through the relay and Redis.
 * The outbox row is still the truth: it waits out a grace period before the relay may take it,
 * which is what saves the delivery when the worker dies, cannot run it, or its run fails.
 */
describe('first webhook attempts run by the worker right after the commit that created them', () => {
  let db: TestDatabase;
  let app: TestApp;
  let customer: ApiClient;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startWebhookReceiver();
    app = await startTestApp({
      databaseUrl: db.url,
      relay: true,
      worker: true,
      env: { TELNYX_PUBLIC_KEY: signer.publicKey, WEBHOOK_TIMEOUT_MS: '1000', WORKER_AFTER_COMMIT_GRACE_SECONDS: String(GRACE_SECONDS) },
    });
    customer = await ApiClient.forNewAccount(app, 'after-commit');
    await customer.assignNumber(OUR_NUMBER, 'telnyx');
    expect((await customer.post('/v2/webhook_endpoints', { url: `${receiver.url}/hook`, event_types: ['message.received', 'message.delivered'] })).status).toBe(201);
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
    await db?.drop();
  });

  /** Posts a signed inbound SMS; resolves the customer event id (webhook-id) once its delivery exists. */
  async function inboundSms(text: string): Promise<string> {
    const { body, carrierMessageId } = telnyxInboundSms(OUR_NUMBER, text);
    expect((await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).status).toBe(200);
    const row = await waitFor(
      () => db.pool.query<{ id: string }>(`SELECT e.id FROM outbound_events e JOIN messages m ON m.id = e.payload->>'id' WHERE m.carrier_message_id = $1`, [carrierMessageId]).then((r) => r.rows[0]),
      (found) => found !== undefined,
      { what: 'the customer event of the inbound SMS' },
    );
    return row!.id;
  }

  /** The outbox row of the first attempt of the event's (only) delivery. */
  const firstAttemptJob = (eventId: string): Promise<JobRow | undefined> =>
    db.pool
      .query(`SELECT j.* FROM outbox_jobs j JOIN webhook_deliveries d ON j.job_id = 'dlv-' || d.id || '-1-1' WHERE d.event_id = $1`, [eventId])
      .then((r) => r.rows[0]);

  const deliveryStatus = (eventId: string) => db.pool.query(`SELECT status FROM webhook_deliveries WHERE event_id = $1`, [eventId]).then((r) => r.rows[0]?.status);

  it('an inbound SMS: one request to the customer; the job row was never due for the relay and never went through Redis', async () => {
    const eventId = await inboundSms('after commit');
    await receiver.waitForRequests(1, (r) => r.headers['webhook-id'] === eventId);
    const job = await waitFor(() => firstAttemptJob(eventId), (j) => Boolean(j?.completed_at), { what: 'the first attempt completed' });
    // Written with run_at the grace ahead, completed and stamped relayed by the run itself: the
    // relay claims only rows with relayed_at NULL, and marks what it claims with a redrive_at.
    expect(job!.run_at.getTime() - job!.created_at.getTime()).toBeGreaterThanOrEqual(GRACE_SECONDS * 1000 - 50);
    expect(job!.relayed_at).not.toBeNull();
    expect(job!.redrive_at).toBeNull();
    expect(job!.attempts).toBe(1);
    expect(await deliveryStatus(eventId)).toBe('delivered');
    expect(receiver.requestsFor(eventId)).toHaveLength(1);
  }, 30000);

  it('an inbound SMS stored by a process that works the carrier-events queue: its processing ran here after the ingest commit, never through Redis', async () => {
    const { body, carrierMessageId } = telnyxInboundSms(OUR_NUMBER, 'processed after commit');
    expect((await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).status).toBe(200);
    const job = await waitFor(
      () => db.pool.query<JobRow>(`SELECT j.* FROM outbox_jobs j JOIN carrier_events e ON j.job_id = e.id WHERE e.normalized->>'carrierMessageId' = $1`, [carrierMessageId]).then((r) => r.rows[0]),
      (j) => Boolean(j?.completed_at),
      { what: 'the processing job completed' },
    );
    // Written by ingest's batch statement with the grace ahead; claimed by the run after commit,
    // which stamped it relayed; no relay marked it (redrive_at), so it never went through Redis.
    expect(job!.run_at.getTime() - job!.created_at.getTime()).toBeGreaterThanOrEqual(GRACE_SECONDS * 1000 - 50);
    expect(job!.relayed_at).not.toBeNull();
    expect(job!.redrive_at).toBeNull();
    expect(job!.attempts).toBe(1);
    expect(await db.count(`SELECT count(*) FROM messages WHERE carrier_message_id = $1`, [carrierMessageId])).toBe(1);
  }, 30000);

  it('the grace runs out while the run is completing the row: the relay skips the locked row, and finds it relayed once it commits', async () => {
    // Held inside the run's completion, with the row locked, until the row is due for the relay.
    const completing = await pausePoint(db.url, {
      table: 'outbox_jobs',
      on: 'UPDATE',
      when: `NEW.name = 'webhook-delivery-attempt' AND OLD.completed_at IS NULL AND NEW.completed_at IS NOT NULL`,
    });
    const relay = app.app.get(OutboxRelay);
    try {
      await completing.hold();
      const eventId = await inboundSms('grace runs out');
      await completing.waitUntilPaused();
      await waitFor(
        () => db.pool.query<{ due: boolean }>(`SELECT j.run_at < now() AS due FROM outbox_jobs j JOIN webhook_deliveries d ON j.job_id = 'dlv-' || d.id || '-1-1' WHERE d.event_id = $1`, [eventId]).then((r) => r.rows[0]?.due),
        (due) => due === true,
        { what: 'the grace to run out', timeoutMs: GRACE_SECONDS * 1000 + 5000 },
      );
      // Due now, but locked by the completion: FOR UPDATE SKIP LOCKED passes over it.
      await relay.relayBatch();
      expect((await firstAttemptJob(eventId))!.relayed_at).toBeNull();
      await completing.release();
      const job = await waitFor(() => firstAttemptJob(eventId), (j) => Boolean(j?.completed_at), { what: 'the run to complete the row' });
      // The completion stamped it relayed, so no relay batch takes it now.
      await relay.relayBatch();
      expect((await firstAttemptJob(eventId))!.redrive_at).toBeNull();
      expect(job!.relayed_at).not.toBeNull();
      expect(receiver.requestsFor(eventId)).toHaveLength(1);
    } finally {
      await completing.remove();
    }
  }, 30000);

  it('the worker died after the commit, before the run: the relay takes the row once the grace is over, and the customer gets one request', async () => {
    // The statement a worker's one-statement run makes, with its after-commit jobs, committed,
    // and then no run: exactly what a worker killed between the two leaves behind.
    const stmt = new CteStatement();
    StatementJobs.of(stmt).runAfterCommit.add(WebhookDeliveryAttemptJob.name);
    stmt.with('evt_source', `SELECT ${stmt.param(customer.accountId)}::text AS account_id, ${stmt.param(JSON.stringify({ id: 'msg_orphan' }))}::jsonb AS payload`);
    const event = app.app.get(CustomerEvents).emitFromCte(stmt, 'evt_source', 'message.delivered', 'payload');
    const [row] = await app.app.get(DataSource).query(stmt.text(`SELECT (SELECT id FROM ${event}) AS id, ${afterCommitJobs(stmt)} AS "afterCommit"`), stmt.params);
    expect(row.afterCommit).toHaveLength(1);
    const eventId: string = row.id;
    const waiting = await firstAttemptJob(eventId);
    expect(waiting!.relayed_at).toBeNull();
    expect(waiting!.run_at.getTime()).toBeGreaterThan(Date.now());
    await receiver.waitForRequests(1, (r) => r.headers['webhook-id'] === eventId, 15000);
    const job = await waitFor(() => firstAttemptJob(eventId), (j) => Boolean(j?.completed_at), { what: 'the relayed attempt completed' });
    expect(job!.redrive_at).not.toBeNull(); // through the relay and Redis
    expect(job!.relayed_at!.getTime()).toBeGreaterThanOrEqual(waiting!.run_at.getTime());
    expect(await deliveryStatus(eventId)).toBe('delivered');
    expect(receiver.requestsFor(eventId)).toHaveLength(1);
  }, 30000);

  it('every place taken: the next first attempt is written due now and goes through the relay', async () => {
    const afterCommit = app.app.get(AfterCommitJobs);
    const taken: AfterCommitSlot[] = [];
    for (let slot = afterCommit.reserve(WebhookDeliveryAttemptJob); slot; slot = afterCommit.reserve(WebhookDeliveryAttemptJob)) taken.push(slot);
    expect(taken).toHaveLength(app.config.WORKER_AFTER_COMMIT_JOBS);
    try {
      const eventId = await inboundSms('no place left');
      await receiver.waitForRequests(1, (r) => r.headers['webhook-id'] === eventId);
      const job = await waitFor(() => firstAttemptJob(eventId), (j) => Boolean(j?.completed_at), { what: 'the first attempt completed' });
      expect(job!.run_at.getTime() - job!.created_at.getTime()).toBeLessThan(GRACE_SECONDS * 1000);
      expect(job!.redrive_at).not.toBeNull();
      expect(receiver.requestsFor(eventId)).toHaveLength(1);
    } finally {
      for (const slot of taken) slot.release();
    }
  }, 30000);

  it('a run that throws is recorded on the row and handed to the relay at once; Redis retries it until it is delivered', async () => {
    // A trigger the test owns makes recording the attempt fail while a marker row exists: the
    // customer was called, the outcome could not be written (at least once: it is called again).
    await db.pool.query(`CREATE TABLE test_fail_attempts (on_purpose boolean); INSERT INTO test_fail_attempts VALUES (true)`);
    await db.pool.query(`
      CREATE FUNCTION test_fail_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT FROM test_fail_attempts) THEN RAISE EXCEPTION 'test: recording the attempt fails'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_fail_attempt BEFORE INSERT ON webhook_delivery_attempts FOR EACH ROW EXECUTE FUNCTION test_fail_attempt();`);
    try {
      const eventId = await inboundSms('run throws');
      const failed = await waitFor(() => firstAttemptJob(eventId), (j) => Boolean(j?.last_error), { what: 'the failed run recorded' });
      expect(failed!.last_error).toContain('recording the attempt fails');
      expect(failed!.completed_at).toBeNull();
      // Handed to the relay at once, not after the grace.
      const relayed = await waitFor(() => firstAttemptJob(eventId), (j) => Boolean(j?.redrive_at), { what: 'the relay to take the row' });
      expect(relayed!.relayed_at!.getTime() - relayed!.created_at.getTime()).toBeLessThan(GRACE_SECONDS * 1000);
      await db.pool.query(`DELETE FROM test_fail_attempts`);
      await waitFor(() => deliveryStatus(eventId), (s) => s === 'delivered', { what: 'the delivery retried from Redis' });
      expect(receiver.requestsFor(eventId).length).toBeGreaterThanOrEqual(2);
      expect(new Set(receiver.requestsFor(eventId).map((r) => r.headers['webhook-id']))).toEqual(new Set([eventId]));
      const [{ n }] = (await db.pool.query(`SELECT count(*)::int AS n FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.event_id = $1`, [eventId])).rows;
      expect(n).toBe(1);
    } finally {
      await db.pool.query(`DROP TRIGGER test_fail_attempt ON webhook_delivery_attempts; DROP FUNCTION test_fail_attempt(); DROP TABLE test_fail_attempts`);
    }
  }, 40000);
});
