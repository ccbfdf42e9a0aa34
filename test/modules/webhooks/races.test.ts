import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { WebhookDeliveryAttemptJob, WebhookParkedExpiryJob } from '../../../src/modules/webhooks/webhooks.jobs.js';
import { Housekeeping } from '../../../src/platform/outbox/housekeeping.js';
import { JobRunner } from '../../../src/platform/outbox/job-runner.js';
import { CustomerEvents } from '../../../src/modules/webhooks/customer-events.js';
import { EndpointHealth } from '../../../src/modules/webhooks/endpoint-health.js';
import { ApiClient } from '../../support/api-client.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { pausePoint, type PausePointSpec } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

/**
 * Each webhook guard interleaved with its competitor on purpose: one transaction is held at a
 * pause point right after its row change, the competitor runs against exactly that state, then
 * both finish. No relay or worker runs here: jobs are run from their outbox rows by the test, so
 * what a race left behind is seen before anything repairs it.
 */
describe('customer webhook races (enable, disable and emit; two runs of one attempt; parked expiry)', () => {
  let db: TestDatabase;
  let app: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startWebhookReceiver();
    app = await startTestApp({ databaseUrl: db.url, env: { WEBHOOK_RETRY_SCHEDULE: '0,60' } });
  });
  afterAll(async () => {
    await app.close();
    await receiver.close();
    await db.drop();
  });

  /** A new customer with one endpoint on the receiver; disabled: the state a disable leaves once nothing is owed. */
  async function endpointOfNewAccount(path: string, enabled = true): Promise<{ customer: ApiClient; endpointId: string }> {
    const customer = await ApiClient.forNewAccount(app, 'webhook races');
    const res = await customer.post('/v2/webhook_endpoints', { url: `${receiver.url}${path}` });
    expect(res.status).toBe(201);
    if (!enabled) await db.pool.query(`UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'test' WHERE id = $1`, [res.body.data.id]);
    return { customer, endpointId: res.body.data.id };
  }

  function enable(customer: ApiClient, endpointId: string) {
    return customer.post(`/v2/webhook_endpoints/${endpointId}/enable`);
  }

  function emit(accountId: string): Promise<string> {
    return app.app.get(UnitOfWork).run((tx) => app.app.get(CustomerEvents).emit(tx, accountId, 'message.delivered', { id: 'msg_race' }));
  }

  /** The disable a failing attempt makes (410 Gone): the endpoint off, its pending deliveries parked. */
  function disable(endpointId: string): Promise<boolean> {
    return app.app.get(UnitOfWork).run((tx) => app.app.get(EndpointHealth).recordFailure(tx, endpointId, true));
  }

  async function deliveryOf(eventId: string) {
    const { rows } = await db.pool.query(`SELECT * FROM webhook_deliveries WHERE event_id = $1`, [eventId]);
    expect(rows).toHaveLength(1);
    return rows[0];
  }

  async function openJobs(name: string, key: string, value: string): Promise<string[]> {
    const { rows } = await db.pool.query(
      `SELECT job_id FROM outbox_jobs WHERE name = $1 AND data->>$2 = $3 AND completed_at IS NULL AND failed_at IS NULL ORDER BY id`,
      [name, key, value],
    );
    return rows.map((r) => r.job_id as string);
  }

  /** Runs the delivery's open attempt jobs as a worker would when Redis hands them over. */
  async function runAttemptJobs(deliveryId: string): Promise<void> {
    for (const jobId of await openJobs(WebhookDeliveryAttemptJob.name, 'deliveryId', deliveryId)) {
      await app.app.get(JobRunner).run(WebhookDeliveryAttemptJob.name, jobId, 1);
    }
  }

  /** What the race must leave: the delivery's open jobs, run now, deliver it with one HTTP call. */
  async function expectDeliveredOnce(eventId: string, expected: object = {}): Promise<void> {
    await runAttemptJobs((await deliveryOf(eventId)).id);
    expect(await deliveryOf(eventId)).toMatchObject({ status: 'delivered', ...expected });
    expect(receiver.requestsFor(eventId)).toHaveLength(1);
  }

  /** Backends of this database waiting on a row lock (the pause point's own wait is advisory). */
  function rowLockWaiters(): Promise<number> {
    return db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event <> 'advisory'`);
  }

  /**
   * The competitor has run as far as the held transaction lets it: finished (nothing stopped it)
   * or waiting on a row lock the held transaction has.
   */
  async function untilDoneOrBlocked(competitor: Promise<unknown>): Promise<void> {
    let done = false;
    competitor.then(
      () => (done = true),
      () => (done = true),
    );
    await waitFor(async () => done || (await rowLockWaiters()) > 0, Boolean, { what: 'the competitor to finish or wait on a row lock' });
  }

  /** Holds the first matching change of `spec`, runs `competitor` against it, then lets both finish. */
  async function interleave<A, B>(spec: PausePointSpec, held: () => Promise<A>, competitor: () => Promise<B>): Promise<[A, B]> {
    const pause = await pausePoint(db.url, spec);
    try {
      await pause.hold();
      const first = held();
      await pause.waitUntilPaused();
      const second = competitor();
      await untilDoneOrBlocked(second);
      await pause.release();
      return await Promise.all([first, second]);
    } finally {
      await pause.remove();
    }
  }

  const enablingOf = (endpointId: string): PausePointSpec => ({ table: 'webhook_endpoints', on: 'UPDATE', when: `NEW.id = '${endpointId}' AND NEW.enabled AND NOT OLD.enabled` });
  const disablingOf = (endpointId: string): PausePointSpec => ({ table: 'webhook_endpoints', on: 'UPDATE', when: `NEW.id = '${endpointId}' AND OLD.enabled AND NOT NEW.enabled` });
  const deliveryInsertFor = (endpointId: string): PausePointSpec => ({ table: 'webhook_deliveries', on: 'INSERT', when: `NEW.endpoint_id = '${endpointId}'` });

  it('enable held after its UPDATE, an event emitted meanwhile: the delivery starts pending and is delivered', async () => {
    const { customer, endpointId } = await endpointOfNewAccount('/enable-first', false);
    const [enabled, eventId] = await interleave(enablingOf(endpointId), () => enable(customer, endpointId), () => emit(customer.accountId));
    expect(enabled.body.data).toMatchObject({ enabled: true, resumed_deliveries: 0 });
    expect((await deliveryOf(eventId)).status).toBe('pending');
    await expectDeliveredOnce(eventId);
  });

  it('emit held after its delivery insert, the endpoint enabled meanwhile: the enable resumes that delivery', async () => {
    const { customer, endpointId } = await endpointOfNewAccount('/emit-first', false);
    const [eventId, enabled] = await interleave(deliveryInsertFor(endpointId), () => emit(customer.accountId), () => enable(customer, endpointId));
    expect(enabled.body.data).toMatchObject({ enabled: true, resumed_deliveries: 1 });
    expect((await deliveryOf(eventId)).status).toBe('pending');
    await expectDeliveredOnce(eventId);
  });

  it('disable held after its UPDATE, an event emitted meanwhile: the delivery starts parked with no attempt job', async () => {
    const { customer, endpointId } = await endpointOfNewAccount('/disable-first');
    const [disabled, eventId] = await interleave(disablingOf(endpointId), () => disable(endpointId), () => emit(customer.accountId));
    expect(disabled).toBe(true);
    const delivery = await deliveryOf(eventId);
    expect(delivery.status).toBe('parked');
    expect(await openJobs(WebhookDeliveryAttemptJob.name, 'deliveryId', delivery.id)).toEqual([]);
    expect(receiver.requestsFor(eventId)).toHaveLength(0);
  });

  it('emit held after its delivery insert, the endpoint disabled meanwhile: the disable parks that delivery', async () => {
    const { customer, endpointId } = await endpointOfNewAccount('/emit-then-disable');
    const [eventId, disabled] = await interleave(deliveryInsertFor(endpointId), () => emit(customer.accountId), () => disable(endpointId));
    expect(disabled).toBe(true);
    const delivery = await deliveryOf(eventId);
    expect(delivery.status).toBe('parked');
    // Its first attempt job was written with it; run now, it finds the delivery parked and calls nobody.
    await runAttemptJobs(delivery.id);
    expect((await deliveryOf(eventId)).status).toBe('parked');
    expect(receiver.requestsFor(eventId)).toHaveLength(0);
  });

  it('redeliver held after restarting a delivered delivery, the endpoint disabled meanwhile: the disable parks it', async () => {
    const { customer, endpointId } = await endpointOfNewAccount('/redeliver');
    const eventId = await emit(customer.accountId);
    const { id: deliveryId } = await deliveryOf(eventId);
    await runAttemptJobs(deliveryId);
    const restarting: PausePointSpec = { table: 'webhook_deliveries', on: 'UPDATE', when: `NEW.id = '${deliveryId}' AND OLD.status = 'delivered' AND NEW.status = 'pending'` };
    const [redelivered, disabled] = await interleave(restarting, () => customer.post(`/v2/events/${eventId}/redeliver`), () => disable(endpointId));
    expect(redelivered.status).toBe(202);
    expect(disabled).toBe(true);
    expect(await deliveryOf(eventId)).toMatchObject({ status: 'parked', round: 2 });
    await runAttemptJobs(deliveryId);
    expect(receiver.requestsFor(eventId)).toHaveLength(1);
  });

  /** An enabled endpoint's pending delivery with its attempt job, then the endpoint off without parking it. */
  async function pendingOnDisabledEndpoint(path: string) {
    const { customer, endpointId } = await endpointOfNewAccount(path);
    const eventId = await emit(customer.accountId);
    const { id: deliveryId } = await deliveryOf(eventId);
    // The state an attempt job can meet after any path that disables without parking.
    await db.pool.query(`UPDATE webhook_endpoints SET enabled = false WHERE id = $1`, [endpointId]);
    return { customer, endpointId, eventId, deliveryId };
  }

  it('an attempt that loaded the endpoint disabled, then an enable commits before its guard: it calls instead of parking', async () => {
    const { customer, endpointId, eventId, deliveryId } = await pendingOnDisabledEndpoint('/settle-enabled');
    const [enabled] = await interleave(enablingOf(endpointId), () => enable(customer, endpointId), () => runAttemptJobs(deliveryId));
    expect(enabled.body.data).toMatchObject({ enabled: true });
    await expectDeliveredOnce(eventId, { round: 1, attempt_count: 1 });
  });

  it('an attempt held after parking its delivery (endpoint disabled), an enable meanwhile: the enable resumes it', async () => {
    const { customer, endpointId, eventId, deliveryId } = await pendingOnDisabledEndpoint('/settle-parked');
    const parking: PausePointSpec = { table: 'webhook_deliveries', on: 'UPDATE', when: `NEW.id = '${deliveryId}' AND NEW.status = 'parked'` };
    const [, enabled] = await interleave(parking, () => runAttemptJobs(deliveryId), () => enable(customer, endpointId));
    expect(enabled.body.data).toMatchObject({ enabled: true, resumed_deliveries: 1 });
    await expectDeliveredOnce(eventId, { round: 2 });
  });

  it('the same attempt job run twice, one run held at its guarded UPDATE: one attempt row, one failure counted, one next job', async () => {
    const { customer, endpointId } = await endpointOfNewAccount('/twice');
    receiver.script({ status: 500, body: 'first' }, { status: 500, body: 'second' });
    const eventId = await emit(customer.accountId);
    const { id: deliveryId } = await deliveryOf(eventId);
    const [jobId] = await openJobs(WebhookDeliveryAttemptJob.name, 'deliveryId', deliveryId);
    const run = () => app.app.get(JobRunner).run(WebhookDeliveryAttemptJob.name, jobId, 1);
    await interleave({ table: 'webhook_deliveries', on: 'UPDATE', when: `NEW.id = '${deliveryId}' AND NEW.attempt_count = 1` }, run, run);

    // Both runs loaded the delivery before either recorded, so both called (at least once: the
    // customer deduplicates on webhook-id); the guard lets exactly one record it.
    expect(receiver.requestsFor(eventId).map((r) => r.headers['webhook-id'])).toEqual([eventId, eventId]);
    expect(await db.count(`SELECT count(*) FROM webhook_delivery_attempts WHERE delivery_id = $1`, [deliveryId])).toBe(1);
    expect(await deliveryOf(eventId)).toMatchObject({ status: 'pending', attempt_count: 1 });
    expect(await db.count(`SELECT consecutive_failures FROM webhook_endpoints WHERE id = $1`, [endpointId])).toBe(1);
    expect(await openJobs(WebhookDeliveryAttemptJob.name, 'deliveryId', deliveryId)).toEqual([`dlv-${deliveryId}-1-2`]);
  });

  it('a delivery parked after the expiry chain ended is failed by the housekeeping sweep once past the retention', async () => {
    const { customer, endpointId } = await endpointOfNewAccount('/expiry');
    expect(await disable(endpointId)).toBe(true);
    // The chain the disable started runs with nothing parked, so it ends.
    const [chainJob] = await openJobs(WebhookParkedExpiryJob.name, 'endpointId', endpointId);
    await app.app.get(JobRunner).run(WebhookParkedExpiryJob.name, chainJob, 1);
    expect(await openJobs(WebhookParkedExpiryJob.name, 'endpointId', endpointId)).toEqual([]);

    const old = await emit(customer.accountId);
    const fresh = await emit(customer.accountId);
    expect((await deliveryOf(old)).status).toBe('parked');
    await db.pool.query(`UPDATE webhook_deliveries SET parked_at = now() - interval '8 days' WHERE event_id = $1`, [old]);
    const swept = await app.app.get(Housekeeping).runAll();
    expect(swept['webhook-parked-expiry']).toBeGreaterThanOrEqual(1);
    expect(await deliveryOf(old)).toMatchObject({ status: 'failed', last_error: 'endpoint disabled; parked longer than 7 days' });
    expect((await deliveryOf(fresh)).status).toBe('parked');
  });
});
