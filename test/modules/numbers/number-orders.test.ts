import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApiClient } from '../../support/api-client.js';
import { FakeNumberCarrier } from '../../support/fake-number-carrier.js';
import { pausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

type Carrier = 'telnyx' | 'twilio' | 'vonage';

/** Search, order and release on each carrier, against a real local HTTP fake of its numbers API. */
describe('numbers bought through the carrier', () => {
  const carrier = new FakeNumberCarrier(['+13125550101', '+13125550102', '+13125550103', '+13125550104', '+13125550105', '+13125550106', '+13125550107', '+13125550108', '+13125550109', '+14155550101', '+14155550102', '+14155550103']);
  beforeAll(async () => {
    await carrier.start();
  });
  afterAll(async () => {
    await carrier.stop();
  });
  const t = withTestApp({ relay: true, worker: true, env: () => ({ ...carrier.env(), PUBLIC_BASE_URL: 'http://127.0.0.1:7777', NUMBER_RELEASE_RECHECK_SECONDS: '1', API_RATE_LIMIT_PER_MINUTE: '1000000' }) });
  let alice: ApiClient;
  let bob: ApiClient;
  beforeAll(async () => {
    alice = await ApiClient.forNewAccount(t.app, 'Alice');
    bob = await ApiClient.forNewAccount(t.app, 'Bob');
  });

  const events = (type: string, id: string) => t.db.count(`SELECT count(*) FROM outbound_events WHERE type = $1 AND payload->>'id' = $2`, [type, id]);
  const order = (customer: ApiClient, c: Carrier, phone_numbers: string[], key?: string) =>
    customer.post('/v2/phone_number_orders', { carrier: c, phone_numbers }, key ? { 'Idempotency-Key': key } : {});
  const settled = (customer: ApiClient, id: string) =>
    waitFor(() => customer.get(`/v2/phone_number_orders/${id}`), (r) => r.body.data.status !== 'pending', { what: `order ${id} settled`, intervalMs: 100 });

  it.each([
    ['telnyx', '+13125550101'],
    ['twilio', '+13125550102'],
    ['vonage', '+13125550103'],
  ] as [Carrier, string][])('%s: search answers in one shape; an order buys the number once, configured to send its webhooks to us, and it becomes the account\'s', async (c, phoneNumber) => {
    const search = await alice.get(`/v2/available_phone_numbers?carrier=${c}&country=US&area_code=312&contains=${phoneNumber.slice(-4)}&features=sms,voice&limit=5`);
    expect(search.status).toBe(200);
    expect(search.body.data).toEqual([
      { record_type: 'available_phone_number', phone_number: phoneNumber, carrier: c, features: ['sms', 'voice'], region: c === 'vonage' ? null : 'IL', monthly_price_micros: 1_000_000, currency: 'USD' },
    ]);

    const placed = await order(alice, c, [phoneNumber]);
    expect(placed.status).toBe(202);
    expect(placed.body.data).toMatchObject({ record_type: 'phone_number_order', carrier: c, status: 'pending', phone_numbers: [{ phone_number: phoneNumber, status: 'ordering' }] });
    const done = await settled(alice, placed.body.data.id);
    expect(done.body.data).toMatchObject({ status: 'success', error: null, phone_numbers: [{ phone_number: phoneNumber, status: 'active' }] });
    const mine = (await alice.get('/v2/phone_numbers')).body.data.find((n: { phone_number: string }) => n.phone_number === phoneNumber);
    expect(mine).toMatchObject({ carrier: c, status: 'active' });

    expect(carrier.purchasesOf(phoneNumber)).toHaveLength(1);
    expect(carrier.boughtTwice).toBe(0);
    // Only headers the operations declare: none of CreateNumberOrder, CreateIncomingPhoneNumber, buyANumber declares an idempotency header.
    expect(Object.keys(carrier.purchasesOf(phoneNumber)[0].headers).filter((h) => /idempoten/i.test(h))).toEqual([]);
    const config = carrier.held.get(phoneNumber)!.config;
    if (c === 'twilio') expect(config).toEqual({ SmsUrl: 'http://127.0.0.1:7777/webhooks/twilio/messaging', VoiceUrl: 'http://127.0.0.1:7777/webhooks/twilio/voice', StatusCallback: 'http://127.0.0.1:7777/webhooks/twilio/voice/status' });
    if (c === 'telnyx') expect(config).toMatchObject({ connection_id: t.app.config.TELNYX_CONNECTION_ID, messaging_profile_id: t.app.config.TELNYX_MESSAGING_PROFILE_ID });
    if (c === 'vonage') expect(config).toEqual({ app_id: t.app.config.VONAGE_APPLICATION_ID });
    await waitFor(() => events('order.completed', placed.body.data.id), (n) => n === 1, { what: 'order.completed' });
    expect(await events('order.failed', placed.body.data.id)).toBe(0);

    // Release: routing stops at once (sending from it is refused), the carrier lets it go, number.released once.
    const released = await alice.request('DELETE', `/v2/phone_numbers/${mine.id}`);
    expect(released.status).toBe(202);
    expect(released.body.data).toMatchObject({ id: mine.id, status: 'releasing' });
    const send = await alice.post('/v2/messages', { from: phoneNumber, to: '+15557770000', text: 'after release' });
    expect(send.status).toBe(422);
    await waitFor(() => alice.get(`/v2/phone_numbers/${mine.id}`), (r) => r.body.data.status === 'released', { what: 'released' });
    expect(carrier.held.has(phoneNumber)).toBe(false);
    expect(carrier.released.filter((n) => n === phoneNumber)).toHaveLength(1);
    const again = await alice.request('DELETE', `/v2/phone_numbers/${mine.id}`);
    expect(again.body.data.status).toBe('released');
    await waitFor(() => events('number.released', mine.id), (n) => n === 1, { what: 'number.released' });
    expect((await alice.get('/v2/phone_numbers')).body.data.map((n: { id: string }) => n.id)).not.toContain(mine.id);
  });

  it.each([['telnyx', '+13125550104'], ['twilio', '+13125550105'], ['vonage', '+13125550106']] as [Carrier, string][])(
    '%s: the carrier\'s answer to the purchase is lost; the retries of the job and of the request (same Idempotency-Key, also at once) buy it once',
    async (c, phoneNumber) => {
      carrier.loseNextPurchaseAnswers(1);
      const key = `lost-${c}`;
      const [first, twin] = await Promise.all([order(alice, c, [phoneNumber], key), order(alice, c, [phoneNumber], key)]);
      expect([first.status, twin.status]).toEqual([202, 202]);
      expect(twin.body.data.id).toBe(first.body.data.id);
      const retried = await order(alice, c, [phoneNumber], key);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      const done = await settled(alice, first.body.data.id);
      expect(done.body.data.status).toBe('success');
      expect(await t.db.count(`SELECT count(*) FROM number_orders WHERE account_id = $1 AND id = $2`, [alice.accountId, first.body.data.id])).toBe(1);
      expect(carrier.boughtTwice).toBe(0);
      expect(carrier.held.get(phoneNumber)?.carrier).toBe(c);
      await waitFor(() => events('order.completed', first.body.data.id), (n) => n === 1, { what: 'order.completed' });
    },
  );

  it('two accounts order the same number at once: the held-number index decides, one gets it, the other a clear 409 and nothing written', async () => {
    const phoneNumber = '+13125550107';
    const pause = await pausePoint(t.db.url, { table: 'phone_numbers', on: 'INSERT', when: `NEW.phone_number = '${phoneNumber}' AND NEW.account_id = '${alice.accountId}'` });
    await pause.hold();
    const first = order(alice, 'twilio', [phoneNumber]);
    await pause.waitUntilPaused();
    const second = order(bob, 'twilio', [phoneNumber]);
    // Bob's insert waits on Alice's uncommitted row under the index.
    await waitFor(
      () => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event <> 'advisory' AND query LIKE '%INSERT INTO number_orders%'`),
      (n) => n === 1,
      { what: "Bob's order to wait on Alice's" },
    );
    await pause.release();
    const [won, lost] = await Promise.all([first, second]);
    await pause.remove();
    expect(won.status).toBe(202);
    expect(lost.status).toBe(409);
    expect(lost.body.errors).toEqual([expect.objectContaining({ code: 'phone_number_taken', detail: `${phoneNumber} is held by another account or order`, source: { pointer: '/phone_numbers/0' } })]);
    expect(await t.db.count(`SELECT count(*) FROM number_orders WHERE account_id = $1`, [bob.accountId])).toBe(0);
    expect(await t.db.count(`SELECT count(*) FROM phone_numbers WHERE account_id = $1`, [bob.accountId])).toBe(0);
    await settled(alice, won.body.data.id);
    expect(carrier.purchasesOf(phoneNumber)).toHaveLength(1);
  });

  it('a number the carrier will not sell: the order fails once (order.failed), the number is free again', async () => {
    const phoneNumber = '+13125550108';
    carrier.unavailable.add(phoneNumber);
    const placed = await order(alice, 'twilio', [phoneNumber]);
    const done = await settled(alice, placed.body.data.id);
    expect(done.body.data).toMatchObject({ status: 'failed', error: 'PhoneNumber requested is not available', phone_numbers: [{ phone_number: phoneNumber, status: 'failed' }] });
    await waitFor(() => events('order.failed', placed.body.data.id), (n) => n === 1, { what: 'order.failed' });
    expect(await events('order.completed', placed.body.data.id)).toBe(0);
    expect((await alice.get('/v2/phone_numbers')).body.data.map((n: { phone_number: string }) => n.phone_number)).not.toContain(phoneNumber);
    carrier.unavailable.delete(phoneNumber);
  });

  it('a number with a call in progress is released only after the call ends, and stops routing at once', async () => {
    const phoneNumber = '+13125550109';
    const placed = await order(alice, 'telnyx', [phoneNumber]);
    const number = (await settled(alice, placed.body.data.id)).body.data.phone_numbers[0];
    await t.db.pool.query(
      `INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id) VALUES ('call_releasetest', $1, 'inbound', '+15557771234', $2, 'in_progress', 'telnyx', 'v3:release-test')`,
      [alice.accountId, phoneNumber],
    );
    expect((await alice.request('DELETE', `/v2/phone_numbers/${number.id}`)).status).toBe(202);
    expect((await alice.post('/v2/messages', { from: phoneNumber, to: '+15557770000', text: 'no' })).status).toBe(422);
    // At least one recheck found the call still going: the carrier still has the number.
    await waitFor(() => t.db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id LIKE $1`, [`release-${number.id}-%`]), (n) => n >= 1, { what: 'a recheck' });
    expect(carrier.held.has(phoneNumber)).toBe(true);
    expect((await alice.get(`/v2/phone_numbers/${number.id}`)).body.data.status).toBe('releasing');
    await t.db.pool.query(`UPDATE calls SET status = 'completed', ended_at = now() WHERE id = 'call_releasetest'`);
    await waitFor(() => alice.get(`/v2/phone_numbers/${number.id}`), (r) => r.body.data.status === 'released', { what: 'released after the call', timeoutMs: 20000 });
    expect(carrier.held.has(phoneNumber)).toBe(false);
  });

  it('refuses bad searches and orders with 422 naming the field, writing nothing', async () => {
    for (const [query, parameter] of [['carrier=bandwidth', 'carrier'], ['country=usa', 'country'], ['area_code=abc', 'area_code'], ['features=fax', 'features'], ['limit=0', 'limit']]) {
      const res = await alice.get(`/v2/available_phone_numbers?${query}`);
      expect(res.status).toBe(422);
      expect(res.body.errors[0].source.parameter).toBe(parameter);
    }
    const before = await t.db.count(`SELECT count(*) FROM number_orders`);
    for (const [body, pointer] of [
      [{ carrier: 'telnyx', phone_numbers: ['5550001111'] }, '/phone_numbers'],
      [{ carrier: 'telnyx', phone_numbers: [] }, '/phone_numbers'],
      [{ carrier: 'sprint', phone_numbers: ['+13125550101'] }, '/carrier'],
    ] as [object, string][]) {
      const res = await alice.post('/v2/phone_number_orders', body);
      expect(res.status).toBe(422);
      expect(res.body.errors.map((e: { source: { pointer: string } }) => e.source.pointer)).toContain(pointer);
    }
    expect(await t.db.count(`SELECT count(*) FROM number_orders`)).toBe(before);
  });
});
