import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApiClient } from '../../support/api-client.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { FakeCarrier } from '../../support/fake-carrier.js';
import { waitFor } from '../../support/wait.js';

describe('phone numbers, messages and usage API', () => {
  let db: TestDatabase;
  let app: TestApp;
  let carrier: FakeCarrier;
  let alice: ApiClient;
  let bob: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    carrier = await new FakeCarrier().start();
    app = await startTestApp({ databaseUrl: db.url, relay: true, worker: true, env: carrier.env() });
    alice = await ApiClient.forNewAccount(app, 'Alice');
    bob = await ApiClient.forNewAccount(app, 'Bob');
    await alice.assignNumber('+15550001111', 'telnyx');
    await alice.assignNumber('+15550001112', 'twilio');
  });
  afterAll(async () => {
    await app.close();
    await carrier.stop();
    await db.drop();
  });

  describe('phone numbers', () => {
    it('an assigned number belongs to one account: assigning it to another is a 409 and writes nothing; to the same account again returns it', async () => {
      await expect(bob.assignNumber('+15550001111', 'twilio')).rejects.toMatchObject({ status: 409, response: { code: 'phone_number_taken' } });
      expect(await db.count(`SELECT count(*) FROM phone_numbers WHERE account_id = $1`, [bob.accountId])).toBe(0);
      const [first] = (await alice.get('/v2/phone_numbers')).body.data.filter((n: { phone_number: string }) => n.phone_number === '+15550001111');
      expect(await alice.assignNumber('+15550001111', 'telnyx')).toMatchObject({ id: first.id, status: 'active' });
    });

    it.each([
      { phone_number: '+15550009999', carrier: 'telnyx' },
      { phone_number: '5550001111', carrier: 'bandwidth' },
    ])('the first-come registration is retired: %j answers 405 pointing to ordering and numbers:assign, writing nothing', async (body) => {
      const before = await db.count(`SELECT count(*) FROM phone_numbers`);
      const res = await alice.post('/v2/phone_numbers', body);
      expect(res.status).toBe(405);
      expect(res.body.errors[0]).toMatchObject({ code: 'method_not_allowed', detail: expect.stringContaining('POST /v2/phone_number_orders') });
      expect(res.body.errors[0].detail).toContain('numbers:assign');
      expect(await db.count(`SELECT count(*) FROM phone_numbers`)).toBe(before);
    });

    it('lists only the caller\'s numbers', async () => {
      const res = await alice.get('/v2/phone_numbers');
      expect(res.status).toBe(200);
      expect(res.body.data.map((n: { phone_number: string }) => n.phone_number).sort()).toEqual(['+15550001111', '+15550001112']);
      expect((await bob.get('/v2/phone_numbers')).body.data).toEqual([]);
    });
  });

  describe('sending', () => {
    it('accepts a message with its segments and encoding, dispatches it once, and bills it once', async () => {
      const res = await alice.post('/v2/messages', { from: '+15550001111', to: '+15557770000', text: 'Hello €' });
      expect(res.status).toBe(202);
      expect(res.body.data).toMatchObject({ record_type: 'message', direction: 'outbound', status: 'queued', segments: 1, encoding: 'GSM-7', carrier: 'telnyx' });
      const id = res.body.data.id as string;
      expect(id).toMatch(/^msg_/);
      const sent = await waitFor(() => alice.get(`/v2/messages/${id}`), (r) => r.body.data.status === 'sent', { what: 'the message to be sent' });
      expect(sent.body.data.carrier_message_id).toEqual(expect.any(String));
      expect(sent.body.data.status_history.map((h: { status: string }) => h.status)).toEqual(['queued', 'sending', 'sent']);
      expect(carrier.sendsFor(id)).toHaveLength(1);
      const request = JSON.parse(carrier.sendsFor(id)[0].body);
      expect(request).toMatchObject({ from: '+15550001111', to: '+15557770000', text: 'Hello €' });
      expect(carrier.sendsFor(id)[0].headers.authorization).toMatch(/^Bearer /);
      expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1 AND kind = 'sms_outbound_segments'`, [id])).toBe(1);
      expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'message.sent' AND payload->>'id' = $1`, [id])).toBe(1);
    });

    it('sends through Twilio for a Twilio number, form-encoded with basic auth', async () => {
      const res = await alice.post('/v2/messages', { from: '+15550001112', to: '+15557770001', text: 'Через Twilio' });
      expect(res.body.data).toMatchObject({ encoding: 'UCS-2', carrier: 'twilio' });
      const id = res.body.data.id;
      await waitFor(() => alice.get(`/v2/messages/${id}`), (r) => r.body.data.status === 'sent', { what: 'the Twilio message to be sent' });
      const [send] = carrier.sendsFor(id);
      expect(send.path).toMatch(/^\/twilio\/2010-04-01\/Accounts\/AC\w+\/Messages\.json$/);
      expect(send.headers.authorization).toMatch(/^Basic /);
      expect(new URLSearchParams(send.body).get('Body')).toBe('Через Twilio');
    });

    it('a carrier 4xx is an answer: failed with the carrier code, no charge, no retry', async () => {
      carrier.answerNext({ status: 422, body: { errors: [{ code: '40310', title: 'Invalid destination', detail: 'to is not a mobile number' }] } });
      const { body } = await alice.post('/v2/messages', { from: '+15550001111', to: '+15557770002', text: 'nope' });
      const failed = await waitFor(() => alice.get(`/v2/messages/${body.data.id}`), (r) => r.body.data.status === 'failed', { what: 'the rejection' });
      expect(failed.body.data).toMatchObject({ error_code: '40310', error_detail: 'to is not a mobile number' });
      expect(carrier.sendsFor(body.data.id)).toHaveLength(1);
      expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [body.data.id])).toBe(0);
      expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'message.failed' AND payload->>'id' = $1`, [body.data.id])).toBe(1);
    });

    it('a carrier 503 (a documented "not taken") is retried, then the message is sent', async () => {
      carrier.answerNext({ status: 503 }, { status: 503 });
      const { body } = await alice.post('/v2/messages', { from: '+15550001111', to: '+15557770003', text: 'retry me' });
      await waitFor(() => alice.get(`/v2/messages/${body.data.id}`), (r) => r.body.data.status === 'sent', { what: 'the send after retries', timeoutMs: 30000 });
      expect(carrier.sendsFor(body.data.id)).toHaveLength(3);
      expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [body.data.id])).toBe(1);
    });

    it('schedules a message with send_at in the future', async () => {
      const sendAt = new Date(Date.now() + 3600_000).toISOString();
      const { status, body } = await alice.post('/v2/messages', { from: '+15550001111', to: '+15557770004', text: 'later', send_at: sendAt });
      expect(status).toBe(202);
      expect(body.data).toMatchObject({ status: 'scheduled', send_at: sendAt });
      expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND run_at = $2 AND relayed_at IS NULL`, [`dispatch-${body.data.id}`, sendAt])).toBe(1);
    });

    it.each([
      [{ from: '+15550009999', to: '+15557770000', text: 'x' }, 422, '/from'],
      [{ from: '+15550001111', to: 'not-a-number', text: 'x' }, 422, '/to'],
      [{ from: '+15550001111', to: '+15557770000', text: '' }, 422, '/text'],
      [{ from: '+15550001111', to: '+15557770000', text: 'x'.repeat(1601) }, 422, '/text'],
      [{ from: '+15550001111', to: '+15557770000', text: 'x', send_at: '2020-01-01T00:00:00Z' }, 422, '/send_at'],
      [{ from: '+15550001111', to: '+15557770000', text: 'x', send_at: new Date(Date.now() + 31 * 86400_000).toISOString() }, 422, '/send_at'],
      [{ from: '+15550001111', to: '+15557770000', text: 'x', send_at: 'tomorrow' }, 422, '/send_at'],
    ])('rejects %j with %i at %s and writes nothing', async (body, status, pointer) => {
      const before = await db.count(`SELECT count(*) FROM messages`);
      const jobs = await db.count(`SELECT count(*) FROM outbox_jobs`);
      const res = await alice.post('/v2/messages', body);
      expect(res.status).toBe(status);
      expect(res.body.errors[0].source.pointer).toBe(pointer);
      expect(await db.count(`SELECT count(*) FROM messages`)).toBe(before);
      expect(await db.count(`SELECT count(*) FROM outbox_jobs`)).toBe(jobs);
    });

    it('malformed JSON is a 400 with errors[]', async () => {
      const res = await fetch(`${app.url}/v2/messages`, { method: 'POST', headers: { authorization: `Bearer ${alice.apiKey}`, 'content-type': 'application/json' }, body: '{"from":' });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { errors: { code: string }[] }).errors[0].code).toBe('bad_request');
    });
  });

  describe('Idempotency-Key', () => {
    const body = { from: '+15550001111', to: '+15558880000', text: 'once' };

    it('replays the stored response with Idempotent-Replayed, and nothing new happens', async () => {
      const first = await alice.post('/v2/messages', body, { 'Idempotency-Key': 'order-1' });
      expect(first.status).toBe(202);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const again = await alice.post('/v2/messages', body, { 'Idempotency-Key': '"order-1"' });
      expect(again.status).toBe(202);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      // the same document, key for key in the same order (jsonb would have sorted them)
      expect(JSON.stringify(again.body)).toBe(JSON.stringify(first.body));
      expect(await db.count(`SELECT count(*) FROM messages WHERE to_number = '+15558880000'`)).toBe(1);
    });

    it('the same key with a different body is 422', async () => {
      const res = await alice.post('/v2/messages', { ...body, text: 'different' }, { 'Idempotency-Key': 'order-1' });
      expect(res.status).toBe(422);
      expect(res.body.errors[0].code).toBe('idempotency_key_reused');
    });

    it('keys are per account', async () => {
      await bob.assignNumber('+15550002221', 'telnyx');
      const res = await bob.post('/v2/messages', { ...body, from: '+15550002221' }, { 'Idempotency-Key': 'order-1' });
      expect(res.status).toBe(202);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
    });

    it('a key older than 24 h is forgotten: reused with another body it creates a new message, and housekeeping deletes old keys', async () => {
      await alice.post('/v2/messages', body, { 'Idempotency-Key': 'old-key' });
      await db.pool.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old-key'`);
      const reused = await alice.post('/v2/messages', { ...body, text: 'a day later' }, { 'Idempotency-Key': 'old-key' });
      expect(reused.status).toBe(202);
      expect(reused.headers.get('idempotent-replayed')).toBeNull();
      expect(reused.body.data.text).toBe('a day later');
      await db.pool.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old-key'`);
      const { Housekeeping } = await import('../../../src/platform/outbox/housekeeping.js');
      expect((await app.app.get(Housekeeping).runAll())['idempotency-keys']).toBeGreaterThanOrEqual(1);
      expect(await db.count(`SELECT count(*) FROM idempotency_keys WHERE key = 'old-key'`)).toBe(0);
      expect(await db.count(`SELECT count(*) FROM idempotency_keys WHERE key = 'order-1'`)).toBe(2);
    });

    it('an invalid key is a 400 naming the header', async () => {
      const res = await alice.post('/v2/messages', body, { 'Idempotency-Key': 'spaces are not allowed' });
      expect(res.status).toBe(400);
      expect(res.body.errors[0].source.header).toBe('Idempotency-Key');
    });

    it('10 concurrent requests with one key: one message, one carrier call, ten identical answers', async () => {
      const twin = { from: '+15550001111', to: '+15558880001', text: 'concurrent' };
      const answers = await Promise.all(Array.from({ length: 10 }, () => alice.post('/v2/messages', twin, { 'Idempotency-Key': 'burst-1' })));
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(202));
      const ids = new Set(answers.map((a) => a.body.data.id));
      expect(ids.size).toBe(1);
      expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(9);
      const [id] = [...ids];
      await waitFor(() => alice.get(`/v2/messages/${id}`), (r) => r.body.data.status === 'sent', { what: 'the burst message to be sent' });
      expect(await db.count(`SELECT count(*) FROM messages WHERE to_number = '+15558880001'`)).toBe(1);
      expect(carrier.sendsFor(id as string)).toHaveLength(1);
    });
  });

  describe('reads', () => {
    it('another account\'s message is 404', async () => {
      const { body } = await alice.post('/v2/messages', { from: '+15550001111', to: '+15557770009', text: 'mine' });
      expect((await bob.get(`/v2/messages/${body.data.id}`)).status).toBe(404);
      expect((await alice.get(`/v2/messages/${body.data.id}`)).status).toBe(200);
    });

    it('lists newest first with filters and cursor pagination', async () => {
      const page1 = await alice.get('/v2/messages?direction=outbound&page[size]=2');
      expect(page1.status).toBe(200);
      expect(page1.body.data).toHaveLength(2);
      expect(page1.body.meta.next_cursor).toBe(page1.body.data[1].id);
      expect(page1.body.data[0].id > page1.body.data[1].id).toBe(true);
      const page2 = await alice.get(`/v2/messages?direction=outbound&page[size]=2&page[after]=${page1.body.meta.next_cursor}`);
      expect(page2.body.data[0].id < page1.body.data[1].id).toBe(true);
      const failed = await alice.get('/v2/messages?status=failed');
      expect(failed.body.data.every((m: { status: string }) => m.status === 'failed')).toBe(true);
      expect((await alice.get('/v2/messages?status=lost')).status).toBe(422);
      expect((await alice.get('/v2/messages?page[size]=251')).status).toBe(422);
      expect((await bob.get('/v2/messages?direction=outbound')).body.data.every((m: { from: string }) => m.from === '+15550002221')).toBe(true);
    });

    it('usage sums the ledger in integers and lists its rows', async () => {
      // Messages the earlier tests accepted may still be on their way to the carrier, and each is
      // billed as it is sent: the usage read and the ledger count below must see the same sends.
      await waitFor(() => db.count(`SELECT count(*) FROM messages WHERE account_id = $1 AND status IN ('queued', 'sending')`, [alice.accountId]), (n) => n === 0, {
        what: "alice's accepted messages to be sent or failed",
      });
      const usage = await alice.get('/v2/usage');
      expect(usage.status).toBe(200);
      const outbound = await db.count(`SELECT coalesce(sum(quantity), 0) FROM usage_records WHERE account_id = $1 AND kind = 'sms_outbound_segments'`, [alice.accountId]);
      expect(outbound).toBeGreaterThan(0);
      expect(usage.body.data).toEqual({
        sms_outbound_segments: outbound,
        sms_inbound_segments: 0,
        call_minutes: 0,
        number_months: 0,
        amount_micros: outbound * app.config.PRICE_SMS_OUTBOUND_SEGMENT_MICROS,
        currency: 'USD',
      });
      const records = await alice.get('/v2/usage/records');
      expect(records.body.data[0]).toMatchObject({ record_type: 'usage_record', kind: 'sms_outbound_segments', unit_price_micros: app.config.PRICE_SMS_OUTBOUND_SEGMENT_MICROS });
      expect(Number.isInteger(records.body.data[0].amount_micros)).toBe(true);
      const future = await alice.get(`/v2/usage?from=${new Date(Date.now() + 86400_000).toISOString()}`);
      expect(future.body.data.amount_micros).toBe(0);
      expect((await alice.get('/v2/usage?from=yesterday')).status).toBe(422);
      expect((await bob.get('/v2/usage')).body.data.sms_inbound_segments).toBe(0);
    });
  });
});
