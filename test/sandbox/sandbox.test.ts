import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ApiClient } from '../support/api-client.js';
import type { TestApp } from '../support/app.js';
import type { TestDatabase } from '../support/database.js';
import type { SandboxChild } from '../support/sandbox-child.js';
import { startAppAgainstSandbox, type AppAgainstSandbox } from '../support/sandbox-app.js';
import { waitFor } from '../support/wait.js';

const TELNYX_NUMBER = '+17735550102';
const TWILIO_NUMBER = '+14155550102';
const VONAGE_NUMBER = '+447700900102';

/**
 * The real app against the carrier sandbox run as `node dist/main.js sandbox`: the app sends
 * through the sandbox (TELNYX_API_URL / TWILIO_API_URL / VONAGE_API_URL), the sandbox calls the app back with
 * signed webhooks under chaos, and every assertion is a count. TELNYX_PUBLIC_KEY is left unset:
 * the app trusts the sandbox's dev key because it talks to a loopback Telnyx API.
 */
describe('the app against the carrier sandbox with chaos on', () => {
  let db: TestDatabase;
  let app: TestApp;
  let sandbox: SandboxChild;
  let customer: ApiClient;

  const count = (sql: string, params: unknown[] = []) => db.count(sql, params);
  const events = (type: string, resourceId: string) =>
    count(`SELECT count(*) FROM outbound_events WHERE type = $1 AND payload->>'id' = $2`, [type, resourceId]);
  const usage = (resourceId: string) => count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [resourceId]);
  const carrierEventsFor = (carrierMessageId: string) =>
    count(`SELECT count(*) FROM carrier_events WHERE normalized->>'carrierMessageId' = $1`, [carrierMessageId]);

  /** Every series delivered and every carrier event the app accepted processed. */
  async function settled(): Promise<void> {
    await waitFor(() => sandbox.stats(), (s) => s.webhooks.pending === 0, { timeoutMs: 30000, what: 'the sandbox to finish its webhooks' });
    await waitFor(() => count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL`), (n) => n === 0, { timeoutMs: 30000, what: 'every carrier event processed' });
  }

  async function sendAndDeliver(from: string, text: string): Promise<{ id: string; carrierId: string; history: string[] }> {
    const sent = await customer.post('/v2/messages', { from, to: '+13125550177', text });
    expect(sent.status).toBe(202);
    const id = sent.body.data.id as string;
    const delivered = await waitFor(() => customer.get(`/v2/messages/${id}`), (r) => r.body.data.status === 'delivered', { timeoutMs: 30000, what: `${id} delivered` });
    await settled();
    const final = await customer.get(`/v2/messages/${id}`);
    return { id, carrierId: delivered.body.data.carrier_message_id, history: final.body.data.status_history.map((h: { status: string }) => h.status) };
  }

  let running: AppAgainstSandbox | undefined;

  beforeAll(async () => {
    running = await startAppAgainstSandbox({}, { CARRIER_EVENT_RETRY_MAX_DELAY_SECONDS: '1' });
    ({ db, app, sandbox } = running);
    customer = await ApiClient.forNewAccount(app);
    await customer.assignNumber(TELNYX_NUMBER, 'telnyx');
    await customer.assignNumber(TWILIO_NUMBER, 'twilio');
    await customer.assignNumber(VONAGE_NUMBER, 'vonage');
  });
  afterAll(() => running?.stop());
  beforeEach(async () => {
    await settled();
    await fetch(`${sandbox.url}/sandbox/stats/reset`, { method: 'POST' });
  });

  // Telnyx dedupes on data.id, so a copy re-signed under a new id passes ingest and the message's
  // guards absorb it; Twilio dedupes on the signed Sid:Status (its idempotency token is not signed),
  // so ingest already absorbs a copy that only carries a new token; Vonage dedupes on message_uuid +
  // status (a re-signed copy is a new JWT, new jti) and an exact copy replays the same token (its jti).
  it.each([
    ['telnyx', TELNYX_NUMBER, 9],
    ['twilio', TWILIO_NUMBER, 3],
    ['vonage', VONAGE_NUMBER, 3],
  ])('%s: every webhook four times (two re-signed) plus a contradicting failure: delivered once, one event, one usage row', async (carrier, from, stored) => {
    await sandbox.setChaos('duplicate=4,resign,contradict,delay_ms=30');
    const { id, carrierId, history } = await sendAndDeliver(from, `chaos through ${carrier}`);
    expect(history).toEqual(['queued', 'sending', 'sent', 'delivered']);
    expect(await events('message.delivered', id)).toBe(1);
    expect(await events('message.failed', id)).toBe(0);
    expect(await events('message.sent', id)).toBe(1);
    expect(await usage(id)).toBe(1);
    const stats = await sandbox.stats();
    // sent, delivered, delivery_failed: 3 events x 4 copies; copies 2 and 4 under new event ids.
    expect(stats.sends.accepted).toBe(1);
    expect(stats.webhooks).toMatchObject({ events: 3, duplicates: 9, resigned: 6, contradictions: 1, failed: 0 });
    expect(stats.webhooks.answered).toEqual({ accepted: stored, duplicate: 12 - stored });
    // Every carrier event ingest stored (Telnyx: the 9 distinct event ids; Twilio: one per
    // Sid:Status); the message's guards absorbed all but one transition.
    expect(await carrierEventsFor(carrierId)).toBe(stored);
  });

  it('receipts delivered before the send answer returns (early_receipt), three times each: delivered once', async () => {
    await sandbox.setChaos('early_receipt,duplicate=3,resign');
    const { id, carrierId, history } = await sendAndDeliver(TELNYX_NUMBER, 'the receipt outruns the answer');
    expect(history).toEqual(['queued', 'sending', 'sent', 'delivered']);
    expect(await events('message.delivered', id)).toBe(1);
    expect(await usage(id)).toBe(1);
    // The receipts may arrive before the app knows the carrier's id: they name our message (its
    // webhook_url), so the first one that is processed first settles it (receipt_before_answer),
    // or the answer is recorded first; either way once.
    const [sent] = (await db.pool.query(`SELECT detail FROM message_status_history WHERE message_id = $1 AND status = 'sent'`, [id])).rows;
    expect([null, 'receipt_before_answer']).toContain(sent.detail);
    expect(await count(`SELECT count(*) FROM carrier_events WHERE normalized->>'carrierMessageId' = $1 AND processed_at IS NULL`, [carrierId])).toBe(0);
  });

  it('the series delivered in a random order (sent after delivered possible): delivered once', async () => {
    await sandbox.setChaos('reorder,duplicate=3,delay_ms=40');
    const { id, history } = await sendAndDeliver(TWILIO_NUMBER, 'shuffled receipts');
    expect(history).toEqual(['queued', 'sending', 'sent', 'delivered']);
    expect(await events('message.delivered', id)).toBe(1);
    expect(await usage(id)).toBe(1);
  });

  it.each([
    ['telnyx', TELNYX_NUMBER, 3],
    ['twilio', TWILIO_NUMBER, 1],
    ['vonage', VONAGE_NUMBER, 1],
  ])('%s: an inbound SMS delivered five times (two re-signed) is one inbound message, one usage row, one message.received', async (carrier, to, stored) => {
    await sandbox.setChaos('off');
    const res = await fetch(`${sandbox.url}/sandbox/inbound`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sandbox-chaos': 'duplicate=5,resign,delay_ms=20' },
      body: JSON.stringify({ from: '+13125550188', to, text: `hello via ${carrier}`, carrier }),
    });
    expect(res.status).toBe(202);
    const carrierId = ((await res.json()) as { data: { id: string } }).data.id;
    await waitFor(() => count(`SELECT count(*) FROM messages WHERE carrier_message_id = $1`, [carrierId]), (n) => n === 1, { what: 'the inbound message' });
    await settled();
    const [message] = (await db.pool.query(`SELECT id, direction, status, text, account_id FROM messages WHERE carrier_message_id = $1`, [carrierId])).rows;
    expect(message).toMatchObject({ direction: 'inbound', status: 'received', text: `hello via ${carrier}`, account_id: customer.accountId });
    expect(await count(`SELECT count(*) FROM messages WHERE carrier_message_id = $1`, [carrierId])).toBe(1);
    expect(await usage(message.id)).toBe(1);
    expect(await events('message.received', message.id)).toBe(1);
    // Telnyx: copies 1, 3, 5 share an event id (absorbed at ingest); 2 and 4 are re-signed
    // (absorbed by the message's unique key). Twilio: all five are one signed MessageSid:received.
    expect(await carrierEventsFor(carrierId)).toBe(stored);
    expect((await sandbox.stats()).webhooks.answered).toEqual({ accepted: stored, duplicate: 5 - stored });
  });
});
