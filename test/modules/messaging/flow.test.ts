import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { DispatchMessageHandler } from '../../../src/modules/messaging/dispatch-message.handler.js';
import { SendOutcomes } from '../../../src/modules/messaging/send-outcomes.js';
import type { ApiClient } from '../../support/api-client.js';
import type { TestApp } from '../../support/app.js';
import { carrierFixture, formBody, parseForm, telnyxEvent, telnyxFixture, telnyxReceipt, twilioHeaders } from '../../support/carrier-signing.js';
import type { TestDatabase } from '../../support/database.js';
import type { FakeCarrier } from '../../support/fake-carrier.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { waitFor } from '../../support/wait.js';

const OUR_NUMBER = '+17735550002'; // the `to` of the Telnyx inbound fixture
const OUR_TWILIO_NUMBER = '+14155550100'; // the `to` of the Twilio inbound fixture

describe('messages through the whole pipeline: signed carrier webhooks in, customer events out', () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;
  let app: TestApp;
  let carrier: FakeCarrier;
  let customer: ApiClient;

  const deliverTelnyx = (body: string) => pipeline.deliverTelnyx(body);

  async function deliverTwilio(path: string, fields: Record<string, string>): Promise<number> {
    const url = `${app.config.publicBaseUrl}${path}`;
    const res = await fetch(`${app.url}${path}`, { method: 'POST', headers: twilioHeaders(app.config.TWILIO_AUTH_TOKEN, url, fields), body: formBody(fields) });
    return res.status;
  }

  const events = (type: string, messageId?: string) => pipeline.events(type, messageId);
  const sendAndWaitSent = (text: string) => pipeline.sendAndWaitSent(OUR_NUMBER, '+13125550009', text);

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start({ [OUR_NUMBER]: 'telnyx', [OUR_TWILIO_NUMBER]: 'twilio' });
    ({ db, app, carrier, customer } = pipeline);
  });
  afterAll(() => pipeline.stop());

  it('the same inbound SMS replayed, and re-signed under a new event id: one message, one usage row, one message.received', async () => {
    const eventId = randomUUID();
    for (const attempt of [1, 2, 3]) expect(await deliverTelnyx(telnyxFixture('message.received.json', { id: eventId, attempt }))).toBe(200);
    expect(await deliverTelnyx(telnyxFixture('message.received.json', { id: randomUUID(), attempt: 1 }))).toBe(200);
    await waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NOT NULL`), (c) => c === 2, { what: 'both carrier events processed' });
    expect(await db.count(`SELECT count(*) FROM messages WHERE direction = 'inbound' AND carrier = 'telnyx'`)).toBe(1);
    const [message] = (await db.pool.query(`SELECT id, text, segments, account_id FROM messages WHERE direction = 'inbound' AND carrier = 'telnyx'`)).rows;
    expect(message).toMatchObject({ text: 'Hello from Telnyx!', segments: 1, account_id: customer.accountId });
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE kind = 'sms_inbound_segments' AND resource_id = $1`, [message.id])).toBe(1);
    expect(await events('message.received', message.id)).toBe(1);
    const api = await customer.get(`/v2/messages/${message.id}`);
    expect(api.body.data).toMatchObject({ direction: 'inbound', status: 'received', from: '+13125550001', to: OUR_NUMBER });
  });

  it('a Twilio inbound SMS delivered twice: one message', async () => {
    const fields = parseForm(carrierFixture('twilio/inbound-sms.form'));
    expect(await deliverTwilio('/webhooks/twilio/messaging', fields)).toBe(200);
    expect(await deliverTwilio('/webhooks/twilio/messaging', fields)).toBe(200);
    await waitFor(() => db.count(`SELECT count(*) FROM messages WHERE carrier = 'twilio' AND direction = 'inbound'`), (c) => c === 1, { what: 'the Twilio inbound message' });
    await waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE carrier = 'twilio' AND processed_at IS NULL`), (c) => c === 0, { what: 'Twilio events processed' });
    expect(await db.count(`SELECT count(*) FROM messages WHERE carrier = 'twilio' AND direction = 'inbound'`)).toBe(1);
  });

  it('an inbound SMS to a number nobody owns is processed and creates nothing', async () => {
    const body = telnyxEvent('message.received', { ...JSON.parse(carrierFixture('telnyx/message.received.json')).data.payload, id: randomUUID(), to: [{ phone_number: '+19995550000' }] });
    const before = await db.count(`SELECT count(*) FROM messages`);
    expect(await deliverTelnyx(body)).toBe(200);
    const id = JSON.parse(body).data.id;
    await waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [id]), (c) => c === 1, { what: 'the unowned inbound event processed' });
    expect((await db.pool.query(`SELECT note FROM carrier_events WHERE carrier_event_id = $1`, [id])).rows[0].note).toBe('no account owns +19995550000');
    expect(await db.count(`SELECT count(*) FROM messages`)).toBe(before);
  });

  it('delivered then failed: stays delivered, one message.delivered, no message.failed', async () => {
    const { id, carrierId } = await sendAndWaitSent('first terminal word wins');
    expect(await deliverTelnyx(telnyxReceipt(carrierId, 'delivered'))).toBe(200);
    await waitFor(() => customer.get(`/v2/messages/${id}`), (r) => r.body.data.status === 'delivered', { what: 'delivered' });
    expect(await deliverTelnyx(telnyxReceipt(carrierId, 'delivery_failed'))).toBe(200);
    expect(await deliverTelnyx(telnyxReceipt(carrierId, 'delivered'))).toBe(200);
    await waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL AND error IS NULL`), (c) => c === 0, { what: 'all receipts processed' });
    const final = await customer.get(`/v2/messages/${id}`);
    expect(final.body.data.status).toBe('delivered');
    expect(final.body.data.status_history.map((h: { status: string }) => h.status)).toEqual(['queued', 'sending', 'sent', 'delivered']);
    expect(await events('message.delivered', id)).toBe(1);
    expect(await events('message.failed', id)).toBe(0);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
  });

  it('a failure marker delivered three times (re-signed each time): one message.failed', async () => {
    const { id, carrierId } = await sendAndWaitSent('will fail');
    for (let i = 0; i < 3; i++) expect(await deliverTelnyx(telnyxReceipt(carrierId, 'delivery_failed'))).toBe(200);
    await waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL AND error IS NULL`), (c) => c === 0, { what: 'all failure markers processed' });
    const final = await customer.get(`/v2/messages/${id}`);
    expect(final.body.data).toMatchObject({ status: 'failed', error_code: '40008' });
    expect(await events('message.failed', id)).toBe(1);
  });

  it('a receipt that arrives before the dispatch UPDATE committed is applied after retry', async () => {
    const carrierId = randomUUID();
    carrier.answerNext({ status: 200, body: { data: { id: carrierId } }, delayMs: 1500 });
    const { body } = await customer.post('/v2/messages', { from: OUR_NUMBER, to: '+13125550010', text: 'receipt outruns us' });
    expect(await deliverTelnyx(telnyxReceipt(carrierId, 'delivered'))).toBe(200);
    const final = await waitFor(() => customer.get(`/v2/messages/${body.data.id}`), (r) => r.body.data.status === 'delivered', { what: 'the early receipt to apply', timeoutMs: 30000 });
    expect(final.body.data.status_history.map((h: { status: string }) => h.status)).toEqual(['queued', 'sending', 'sent', 'delivered']);
    const [row] = (await db.pool.query(`SELECT attempts, error FROM carrier_events WHERE normalized->>'carrierMessageId' = $1`, [carrierId])).rows;
    expect(row.error).toBeNull();
    expect(row.attempts).toBeGreaterThan(1);
    expect(await events('message.delivered', body.data.id)).toBe(1);
  });

  it('the dispatch job run again after a crash that followed the carrier\'s answer: resolved by the lookup, never sent again; one sent transition, one usage row', async () => {
    const dispatcher = app.app.get(DispatchMessageHandler);
    const outcomes = app.app.get(SendOutcomes);
    // Created straight in the database with no job, so only this test runs its dispatch.
    const { MessagesService } = await import('../../../src/modules/messaging/messages.service.js');
    const sent = await app.app.get(MessagesService).send(customer.accountId, { from: OUR_NUMBER, to: '+13125550011', text: 'crash', send_at: new Date(Date.now() + 86400_000).toISOString() });
    const id = (sent.body as { data: { id: string } }).data.id;
    const crash = jest.spyOn(outcomes, 'markSent').mockImplementationOnce(async () => {
      throw new Error('worker killed after the carrier answered');
    });
    await expect(dispatcher.handle({ messageId: id }, { jobId: 'manual', attempt: 1 })).rejects.toThrow('worker killed');
    crash.mockRestore();
    // The lease was not given back (the send may have reached the carrier): its end comes (moved forward, not waited for).
    expect((await db.pool.query(`UPDATE messages SET claimed_until = now() - interval '1 second' WHERE id = $1 AND claimed_until IS NOT NULL`, [id])).rowCount).toBe(1);
    await Promise.all([dispatcher.handle({ messageId: id }, { jobId: 'manual', attempt: 2 }), dispatcher.handle({ messageId: id }, { jobId: 'manual', attempt: 2 })]);
    expect(carrier.sendsFor(id)).toHaveLength(1);
    expect(carrier.handsetFor(id)).toHaveLength(1);
    expect(carrier.sendsFor(id)[0].headers).not.toHaveProperty('idempotency-key');
    const history = (await db.pool.query(`SELECT status, detail FROM message_status_history WHERE message_id = $1 ORDER BY id`, [id])).rows;
    expect(history).toEqual([
      { status: 'scheduled', detail: null },
      { status: 'sending', detail: null },
      { status: 'sending', detail: expect.stringMatching(/^outcome_unknown: /) },
      { status: 'sent', detail: 'found_by_lookup' },
    ]);
    expect((await db.pool.query(`SELECT carrier_message_id FROM messages WHERE id = $1`, [id])).rows[0].carrier_message_id).toBe(carrier.handsetFor(id)[0].carrierId);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
    expect(await events('message.sent', id)).toBe(1);
  });
});
