import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { exec } from '../../../src/platform/database/tx.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { CustomerEvents } from '../../../src/modules/webhooks/customer-events.js';
import { ParkedExpiryHandler } from '../../../src/modules/webhooks/parked-expiry.handler.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { waitFor } from '../../support/wait.js';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../../support/webhook-receiver.js';

/** Whole seconds between attempts (±20%): consecutive attempts always carry different timestamps. */
const SCHEDULE = '0,2,2';
const DISABLE_AFTER = 4;

describe('customer webhook delivery (Standard Webhooks, retries, health)', () => {
  let db: TestDatabase;
  let app: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startWebhookReceiver();
    app = await startTestApp({
      databaseUrl: db.url,
      relay: true,
      worker: true,
      env: { WEBHOOK_RETRY_SCHEDULE: SCHEDULE, WEBHOOK_DISABLE_AFTER_FAILURES: String(DISABLE_AFTER) },
    });
  });
  afterAll(async () => {
    await app.close();
    await receiver.close();
    await db.drop();
  });

  async function account(): Promise<{ id: string; key: string }> {
    const created = await app.app.get(AccountsService).createAccount('webhooks');
    return { id: created.account.id, key: created.api_key };
  }

  async function api(key: string, method: string, path: string, body?: unknown) {
    const res = await fetch(`${app.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  /** An endpoint on the local receiver; the path tells tests apart. */
  async function endpoint(key: string, path: string, eventTypes?: string[]): Promise<{ id: string; secret: string }> {
    const res = await api(key, 'POST', '/v2/webhook_endpoints', { url: `${receiver.url}${path}`, event_types: eventTypes });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  function emit(accountId: string, data: object = { id: 'msg_test', status: 'delivered' }): Promise<string> {
    return app.app.get(UnitOfWork).run((tx) => app.app.get(CustomerEvents).emit(tx, accountId, 'message.delivered', data));
  }

  function delivery(eventId: string, path: string) {
    return db.pool
      .query(`SELECT d.* FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.event_id = $1 AND e.url LIKE $2`, [eventId, `%${path}`])
      .then((r) => r.rows[0]);
  }

  function onPath(path: string) {
    return (r: ReceivedRequest) => r.path === path;
  }

  it('500, 500, 200: delivered on the third attempt, same webhook-id, fresh timestamp and signature, each verified by standardwebhooks', async () => {
    const acct = await account();
    const ep = await endpoint(acct.key, '/retry');
    receiver.script({ status: 500, body: 'boom' }, { status: 500, body: 'boom again' });
    const eventId = await emit(acct.id, { id: 'msg_1', status: 'delivered' });

    const requests = await receiver.waitForRequests(3, onPath('/retry'));
    await waitFor(() => delivery(eventId, '/retry'), (d) => d?.status === 'delivered', { what: 'delivered' });

    expect(requests).toHaveLength(3);
    const verifier = new Webhook(ep.secret);
    for (const r of requests) {
      expect(r.headers['webhook-id']).toBe(eventId);
      const payload = verifier.verify(r.body, r.headers) as { type: string; timestamp: string; data: object };
      expect(payload.type).toBe('message.delivered');
      expect(payload.data).toEqual({ id: 'msg_1', status: 'delivered' });
      expect(r.body).toBe(requests[0].body);
    }
    const timestamps = requests.map((r) => Number(r.headers['webhook-timestamp']));
    expect(new Set(timestamps).size).toBe(3);
    expect(new Set(requests.map((r) => r.headers['webhook-signature'])).size).toBe(3);

    const { rows: attempts } = await db.pool.query(`SELECT * FROM webhook_delivery_attempts WHERE delivery_id = (SELECT id FROM webhook_deliveries WHERE event_id = $1) ORDER BY attempt`, [eventId]);
    expect(attempts.map((a) => a.status_code)).toEqual([500, 500, 200]);
    expect(attempts.map((a) => a.response_excerpt)).toEqual(['boom', 'boom again', 'ok']);
    expect(attempts[0].error).toBe('HTTP 500');

    const { body } = await api(acct.key, 'GET', `/v2/events/${eventId}`);
    expect(body.data.deliveries).toHaveLength(1);
    expect(body.data.deliveries[0]).toMatchObject({ status: 'delivered', endpoint_id: ep.id, event_id: eventId });
    expect(body.data.deliveries[0].attempts.map((a: { status_code: number }) => a.status_code)).toEqual([500, 500, 200]);
    const health = await api(acct.key, 'GET', `/v2/webhook_endpoints/${ep.id}`);
    expect(health.body.data).toMatchObject({ enabled: true, consecutive_failures: 0 });
  });

  it('410 Gone disables the endpoint at once and parks the delivery', async () => {
    const acct = await account();
    const ep = await endpoint(acct.key, '/gone');
    receiver.script({ status: 410 });
    const eventId = await emit(acct.id);
    await waitFor(() => delivery(eventId, '/gone'), (d) => d?.status === 'parked', { what: 'parked after 410' });
    const { body } = await api(acct.key, 'GET', `/v2/webhook_endpoints/${ep.id}`);
    expect(body.data).toMatchObject({ enabled: false, disabled_reason: 'endpoint answered 410 Gone' });
    expect(receiver.requests.filter(onPath('/gone'))).toHaveLength(1);
  });

  it(`${DISABLE_AFTER} consecutive failures disable the endpoint; the last attempt fails a delivery; parked ones resume on enable`, async () => {
    const acct = await account();
    const ep = await endpoint(acct.key, '/flaky');
    receiver.script(...Array.from({ length: DISABLE_AFTER }, () => ({ status: 502 })));

    // Three attempts (the whole schedule) fail: that delivery is failed for good and stays visible.
    const first = await emit(acct.id, { n: 1 });
    await waitFor(() => delivery(first, '/flaky'), (d) => d?.status === 'failed', { what: 'first delivery failed' });
    expect((await delivery(first, '/flaky')).attempt_count).toBe(3);

    // The fourth consecutive failure disables the endpoint; the in-flight delivery is parked.
    const second = await emit(acct.id, { n: 2 });
    await waitFor(() => delivery(second, '/flaky'), (d) => d?.status === 'parked', { what: 'second delivery parked' });
    const disabled = await api(acct.key, 'GET', `/v2/webhook_endpoints/${ep.id}`);
    expect(disabled.body.data).toMatchObject({ enabled: false, disabled_reason: `${DISABLE_AFTER} consecutive failed delivery attempts`, consecutive_failures: DISABLE_AFTER });

    // New events for a disabled endpoint start parked: nothing is sent.
    const third = await emit(acct.id, { n: 3 });
    expect((await delivery(third, '/flaky')).status).toBe('parked');
    const parked = await api(acct.key, 'GET', `/v2/webhook_endpoints/${ep.id}/deliveries?status=parked`);
    expect(parked.body.data.map((d: { event_id: string }) => d.event_id).sort()).toEqual([second, third].sort());
    const sentBeforeEnable = receiver.requests.filter(onPath('/flaky')).length;
    expect(sentBeforeEnable).toBe(DISABLE_AFTER);

    const enabled = await api(acct.key, 'POST', `/v2/webhook_endpoints/${ep.id}/enable`);
    expect(enabled.status).toBe(200);
    expect(enabled.body.data).toMatchObject({ enabled: true, disabled_reason: null, resumed_deliveries: 2 });
    await waitFor(() => Promise.all([delivery(second, '/flaky'), delivery(third, '/flaky')]), (ds) => ds.every((d) => d.status === 'delivered'), { what: 'resumed deliveries delivered' });
    expect(receiver.requests.filter(onPath('/flaky')).length).toBe(sentBeforeEnable + 2);
    // Enabling again resumes nothing more.
    expect((await api(acct.key, 'POST', `/v2/webhook_endpoints/${ep.id}/enable`)).body.data.resumed_deliveries).toBe(0);
  });

  it('parked deliveries older than the retention become failed, not dropped', async () => {
    const acct = await account();
    const ep = await endpoint(acct.key, '/retention');
    await db.pool.query(`UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'test' WHERE id = $1`, [ep.id]);
    const old = await emit(acct.id, { n: 'old' });
    const fresh = await emit(acct.id, { n: 'fresh' });
    await db.pool.query(`UPDATE webhook_deliveries SET parked_at = now() - interval '8 days' WHERE event_id = $1`, [old]);
    await app.app.get(UnitOfWork).run((tx) => app.app.get(ParkedExpiryHandler).handle({ endpointId: ep.id }, { jobId: 'test', attempt: 1, tx }));
    expect((await delivery(old, '/retention')).status).toBe('failed');
    expect((await delivery(old, '/retention')).last_error).toMatch(/parked longer than 7 days/);
    expect((await delivery(fresh, '/retention')).status).toBe('parked');
    // The expiry job re-armed itself for the delivery still parked.
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE name = 'webhook-parked-expiry' AND data->>'endpointId' = $1 AND run_at > now() + interval '6 days'`, [ep.id])).toBe(1);
  });

  it('during a secret rotation every delivery carries both signatures, and each secret verifies alone', async () => {
    const acct = await account();
    const ep = await endpoint(acct.key, '/rotate');
    const rotated = await api(acct.key, 'POST', `/v2/webhook_endpoints/${ep.id}/rotate_secret`);
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.data.secret as string;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(ep.secret);
    expect((await api(acct.key, 'GET', `/v2/webhook_endpoints/${ep.id}/secret`)).body.data.secret).toBe(newSecret);

    const eventId = await emit(acct.id);
    const [request] = await receiver.waitForRequests(1, onPath('/rotate'));
    expect(request.headers['webhook-signature'].split(' ')).toHaveLength(2);
    const headers = request.headers;
    expect(() => new Webhook(ep.secret).verify(request.body, headers)).not.toThrow();
    expect(() => new Webhook(newSecret).verify(request.body, headers)).not.toThrow();
    expect(request.headers['webhook-id']).toBe(eventId);
    // After the overlap only the new secret signs.
    await db.pool.query(`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`, [ep.id]);
    const later = await emit(acct.id);
    const [second] = await receiver.waitForRequests(1, (r) => r.headers['webhook-id'] === later);
    expect(second.headers['webhook-signature'].split(' ')).toHaveLength(1);
    expect(() => new Webhook(ep.secret).verify(second.body, second.headers)).toThrow();
    expect(() => new Webhook(newSecret).verify(second.body, second.headers)).not.toThrow();
  });

  it('a producing transaction that rolls back emits nothing; a guarded change replayed emits once', async () => {
    const acct = await account();
    await endpoint(acct.key, '/once');
    const uow = app.app.get(UnitOfWork);
    const events = app.app.get(CustomerEvents);
    await expect(
      uow.run(async (tx) => {
        await events.emit(tx, acct.id, 'message.delivered', { id: 'msg_rolled_back' });
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE account_id = $1`, [acct.id])).toBe(0);
    expect(await db.count(`SELECT count(*) FROM webhook_deliveries WHERE account_id = $1`, [acct.id])).toBe(0);

    // The emitter's contract: emit only when the guarded UPDATE changed a row. A replayed handler
    // finds the guard closed and emits nothing (a stand-in resource table plays the message).
    await db.pool.query(`CREATE TABLE IF NOT EXISTS test_things (id text PRIMARY KEY, status text NOT NULL)`);
    await db.pool.query(`INSERT INTO test_things VALUES ('thing_1', 'sent')`);
    const handleReceipt = () =>
      uow.run(async (tx) => {
        const { affected } = await exec(tx, `UPDATE test_things SET status = 'delivered' WHERE id = 'thing_1' AND status NOT IN ('delivered', 'failed')`);
        if (affected === 1) await events.emit(tx, acct.id, 'message.delivered', { id: 'thing_1' });
      });
    await Promise.all([handleReceipt(), handleReceipt()]);
    await handleReceipt();
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE account_id = $1`, [acct.id])).toBe(1);
    await receiver.waitForRequests(1, onPath('/once'));
    await waitFor(() => db.count(`SELECT count(*) FROM webhook_deliveries WHERE account_id = $1 AND status = 'delivered'`, [acct.id]), (c) => c === 1, { what: 'one delivered' });
    expect(receiver.requests.filter(onPath('/once'))).toHaveLength(1);
  });

  it('a duplicate run of an attempt job records the attempt once', async () => {
    const acct = await account();
    await endpoint(acct.key, '/dup');
    const eventId = await emit(acct.id);
    await waitFor(() => delivery(eventId, '/dup'), (d) => d?.status === 'delivered', { what: 'delivered' });
    const d = await delivery(eventId, '/dup');
    const { DeliveryAttemptHandler } = await import('../../../src/modules/webhooks/delivery-attempt.handler.js');
    // Redis redelivering the same job (or recovery re-driving it) finds the guard closed.
    await app.app.get(DeliveryAttemptHandler).handle({ deliveryId: d.id, round: 1, attempt: 1 });
    expect(await db.count(`SELECT count(*) FROM webhook_delivery_attempts WHERE delivery_id = $1`, [d.id])).toBe(1);
    expect(receiver.requests.filter(onPath('/dup'))).toHaveLength(1);
  });

  it('redeliver sends the same event id again as a new attempt', async () => {
    const acct = await account();
    await endpoint(acct.key, '/again');
    const eventId = await emit(acct.id);
    await waitFor(() => delivery(eventId, '/again'), (d) => d?.status === 'delivered', { what: 'delivered' });
    const res = await api(acct.key, 'POST', `/v2/events/${eventId}/redeliver`);
    expect(res.status).toBe(202);
    const requests = await receiver.waitForRequests(2, onPath('/again'));
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual([eventId, eventId]);
    await waitFor(() => delivery(eventId, '/again'), (d) => d?.status === 'delivered' && d.attempt_count === 2, { what: 'second attempt delivered' });
  });
});
