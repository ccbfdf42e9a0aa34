import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { ApiClient } from './support/api-client.js';
import { startTestApp, type TestApp } from './support/app.js';
import { telnyxReceipt, telnyxSigner, type TelnyxSigner } from './support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from './support/database.js';
import { FakeCarrier } from './support/fake-carrier.js';
import { pausePoint, type PausePoint } from './support/pause.js';
import { waitFor } from './support/wait.js';

const OUR_NUMBER = '+17735550002';

/**
 * Each guard of a message's life interleaved with its competitor on purpose: one transaction is
 * held at a chosen point (pausePoint, or a send request the fake carrier keeps open) while the
 * other runs against exactly that state.
 */
describe('message transitions raced against each other', () => {
  let db: TestDatabase;
  let app: TestApp;
  let carrier: FakeCarrier;
  let telnyx: TelnyxSigner;
  let customer: ApiClient;

  async function deliverReceipt(carrierMessageId: string, status: string): Promise<string> {
    const body = telnyxReceipt(carrierMessageId, status);
    const res = await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: telnyx.headers(body), body });
    expect(res.status).toBe(200);
    return JSON.parse(body).data.id;
  }

  const processed = (carrierEventId: string): Promise<{ note: string | null } | undefined> =>
    db.pool.query(`SELECT note FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [carrierEventId]).then((r) => r.rows[0]);
  const events = (type: string, messageId: string) => db.count(`SELECT count(*) FROM outbound_events WHERE type = $1 AND payload->>'id' = $2`, [type, messageId]);
  const history = (messageId: string) =>
    db.pool.query(`SELECT status FROM message_status_history WHERE message_id = $1 ORDER BY id`, [messageId]).then((r) => r.rows.map((h) => h.status));
  const statusOf = (messageId: string) => db.pool.query(`SELECT status FROM messages WHERE id = $1`, [messageId]).then((r) => r.rows[0]?.status);
  /** Transactions of the app waiting for a row another transaction holds (not for a test's pause). */
  const blockedOnRows = () =>
    db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`);

  async function withPauses<T>(pauses: PausePoint[], body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } finally {
      for (const pause of pauses) await pause.remove();
    }
  }

  async function sendAndWaitSent(text: string): Promise<{ id: string; carrierId: string }> {
    const { body } = await customer.post('/v2/messages', { from: OUR_NUMBER, to: '+13125550020', text });
    const sent = await waitFor(() => customer.get(`/v2/messages/${body.data.id}`), (r) => r.body.data.status === 'sent', { what: `${text} to be sent` });
    return { id: body.data.id, carrierId: sent.body.data.carrier_message_id };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    carrier = await new FakeCarrier().start();
    telnyx = telnyxSigner();
    app = await startTestApp({
      databaseUrl: db.url,
      relay: true,
      worker: true,
      env: { ...carrier.env(), TELNYX_PUBLIC_KEY: telnyx.publicKey, CARRIER_EVENT_RETRY_BASE_MS: '100' },
    });
    customer = await ApiClient.forNewAccount(app);
    expect((await customer.post('/v2/phone_numbers', { phone_number: OUR_NUMBER, carrier: 'telnyx' })).status).toBe(201);
  });
  afterAll(async () => {
    await app.close();
    await carrier.stop();
    await db.drop();
  });

  it('a delivered receipt processed while markSent has not committed: delivered, one message.delivered', async () => {
    // markSent held after its UPDATE; the receipt's guard held after it found nothing to change,
    // so markSent commits between the receipt's guard and whatever its transaction does next.
    const sendUncommitted = await pausePoint(db.url, { table: 'messages', on: 'UPDATE', when: "NEW.status = 'sent'" });
    const guardFoundNothing = await pausePoint(db.url, { table: 'messages', on: 'UPDATE', level: 'statement', when: 'NOT EXISTS (SELECT FROM changed)' });
    await withPauses([sendUncommitted, guardFoundNothing], async () => {
      await sendUncommitted.hold();
      await guardFoundNothing.hold();
      const carrierId = randomUUID();
      carrier.answerNext({ status: 200, body: { data: { id: carrierId } } });
      const { body } = await customer.post('/v2/messages', { from: OUR_NUMBER, to: '+13125550021', text: 'receipt beside an open send' });
      const id = body.data.id;
      await sendUncommitted.waitUntilPaused();

      const receiptId = await deliverReceipt(carrierId, 'delivered');
      await guardFoundNothing.waitUntilPaused();
      await sendUncommitted.release();
      await waitFor(() => statusOf(id), (s) => s === 'sent', { what: 'markSent to commit' });
      await guardFoundNothing.release();

      await waitFor(() => processed(receiptId), Boolean, { what: 'the receipt processed', timeoutMs: 30000 });
      expect(await statusOf(id)).toBe('delivered');
      // its first run found no committed stamp and was retried, not called a duplicate
      expect(await db.count(`SELECT attempts FROM carrier_events WHERE carrier_event_id = $1`, [receiptId])).toBeGreaterThan(1);
      expect(await history(id)).toEqual(['queued', 'sending', 'sent', 'delivered']);
      expect(await events('message.sent', id)).toBe(1);
      expect(await events('message.delivered', id)).toBe(1);
      expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
    });
  }, 60000);

  it('two copies of one delivered receipt processed at once: one transition, one message.delivered', async () => {
    const { id, carrierId } = await sendAndWaitSent('duplicate receipts');
    const firstApplied = await pausePoint(db.url, { table: 'messages', on: 'UPDATE', when: "NEW.status = 'delivered'" });
    await withPauses([firstApplied], async () => {
      await firstApplied.hold();
      const first = await deliverReceipt(carrierId, 'delivered');
      await firstApplied.waitUntilPaused();
      const second = await deliverReceipt(carrierId, 'delivered');
      await waitFor(blockedOnRows, (n) => n >= 1, { what: 'the second receipt to wait on the message row' });
      await firstApplied.release();

      const notes = await Promise.all([first, second].map((e) => waitFor(() => processed(e), Boolean, { what: `receipt ${e} processed` })));
      expect(notes.map((n) => n?.note ?? 'applied').sort()).toEqual(['applied', 'duplicate or superseded receipt (delivered)']);
      expect(await statusOf(id)).toBe('delivered');
      expect(await history(id)).toEqual(['queued', 'sending', 'sent', 'delivered']);
      expect(await events('message.delivered', id)).toBe(1);
    });
  }, 60000);
});
