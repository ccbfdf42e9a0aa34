import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { vonageFixture, vonageHeaders, vonageToken } from '../../support/carrier-signing.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { waitFor } from '../../support/wait.js';

const OUR_VONAGE_NUMBER = '+447700900000'; // the `to` of the Vonage inbound fixture
const HANDSET = '+447700900002';

/** Vonage numbers through the whole pipeline: sends to a fake Vonage, signed webhooks in. */
describe('messages on a Vonage number', () => {
  let pipeline: MessagingPipeline;
  const db = () => pipeline.db;
  const secret = () => pipeline.app.config.VONAGE_SIGNATURE_SECRET;

  async function deliver(body: string): Promise<number> {
    const res = await fetch(`${pipeline.app.url}/webhooks/vonage/messages`, { method: 'POST', headers: vonageHeaders(await vonageToken(secret(), body)), body });
    return res.status;
  }
  const receipt = (carrierId: string, status: string, extra: Record<string, unknown> = {}) =>
    vonageFixture(status === 'rejected' ? 'status-rejected.json' : 'status-delivered.json', { message_uuid: carrierId, status, timestamp: new Date().toISOString(), ...extra });
  const settled = () => waitFor(() => db().count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL AND error IS NULL`), (c) => c === 0, { what: 'every carrier event processed' });
  const send = async (text: string) => {
    const { status, body } = await pipeline.customer.post('/v2/messages', { from: OUR_VONAGE_NUMBER, to: HANDSET, text });
    expect(status).toBe(202);
    expect(body.data.carrier).toBe('vonage');
    return body.data.id as string;
  };
  const message = (id: string) => pipeline.customer.get(`/v2/messages/${id}`);

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start({ [OUR_VONAGE_NUMBER]: 'vonage' });
  });
  afterAll(() => pipeline?.stop());

  it('sends through the Messages API: basic auth, E.164 without +, client_ref our id; message_uuid is the carrier id', async () => {
    const { id, carrierId } = await pipeline.sendAndWaitSent(OUR_VONAGE_NUMBER, HANDSET, 'Hello via Vonage');
    const [request] = pipeline.carrier.sendsFor(id);
    expect(pipeline.carrier.sendsFor(id)).toHaveLength(1);
    expect(request.path).toBe('/v1/messages');
    expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`${pipeline.app.config.VONAGE_API_KEY}:${pipeline.app.config.VONAGE_API_SECRET}`).toString('base64')}`);
    expect(JSON.parse(request.body)).toEqual({ message_type: 'text', channel: 'sms', from: '447700900000', to: '447700900002', text: 'Hello via Vonage', client_ref: id });
    expect((await message(id)).body.data.carrier_message_id).toBe(carrierId);
    expect(await db().count(`SELECT count(*) FROM usage_records WHERE resource_id = $1 AND kind = 'sms_outbound_segments'`, [id])).toBe(1);
  });

  it('delivered then rejected (and delivered again): stays delivered, one message.delivered, no message.failed', async () => {
    const { id, carrierId } = await pipeline.sendAndWaitSent(OUR_VONAGE_NUMBER, HANDSET, 'first terminal word wins');
    expect(await deliver(receipt(carrierId, 'submitted'))).toBe(200);
    expect(await deliver(receipt(carrierId, 'delivered'))).toBe(200);
    await waitFor(() => message(id), (r) => r.body.data.status === 'delivered', { what: 'delivered' });
    expect(await deliver(receipt(carrierId, 'rejected'))).toBe(200);
    expect(await deliver(receipt(carrierId, 'delivered'))).toBe(200);
    await settled();
    const final = await message(id);
    expect(final.body.data.status).toBe('delivered');
    expect(final.body.data.status_history.map((h: { status: string }) => h.status)).toEqual(['queued', 'sending', 'sent', 'delivered']);
    expect(await pipeline.events('message.delivered', id)).toBe(1);
    expect(await pipeline.events('message.failed', id)).toBe(0);
  });

  it('rejected: failed with Vonage\'s code, one message.failed', async () => {
    const { id, carrierId } = await pipeline.sendAndWaitSent(OUR_VONAGE_NUMBER, HANDSET, 'will be rejected');
    // 1250 Unroutable (the fixture's 1240 is an opt-out: carrier-opt-outs.test.ts)
    const unroutable = { error: { type: 'https://developer.vonage.com/api-errors/messages#1250', title: 1250, detail: 'Unroutable', instance: 'bf0ca0bf927b3b52e3cb03217e1a1ddf' } };
    for (let i = 0; i < 2; i++) expect(await deliver(receipt(carrierId, 'rejected', unroutable))).toBe(200);
    await settled();
    expect((await message(id)).body.data).toMatchObject({ status: 'failed', error_code: '1250' });
    expect(await pipeline.events('message.failed', id)).toBe(1);
  });

  it('an inbound SMS delivered three times under three tokens: one message, one usage row, one message.received', async () => {
    const carrierId = randomUUID();
    const body = vonageFixture('inbound-sms.json', { message_uuid: carrierId });
    for (let i = 0; i < 3; i++) expect(await deliver(body)).toBe(200);
    await waitFor(() => db().count(`SELECT count(*) FROM messages WHERE carrier = 'vonage' AND carrier_message_id = $1`, [carrierId]), (c) => c === 1, { what: 'the inbound message' });
    await settled();
    const [row] = (await db().pool.query(`SELECT id, direction, status, from_number, to_number, text FROM messages WHERE carrier = 'vonage' AND carrier_message_id = $1`, [carrierId])).rows;
    expect(row).toMatchObject({ direction: 'inbound', status: 'received', from_number: '+447700900001', to_number: OUR_VONAGE_NUMBER, text: 'Hello from Vonage!' });
    expect(await db().count(`SELECT count(*) FROM messages WHERE carrier_message_id = $1`, [carrierId])).toBe(1);
    expect(await db().count(`SELECT count(*) FROM carrier_events WHERE carrier = 'vonage' AND normalized->>'carrierMessageId' = $1`, [carrierId])).toBe(1);
    expect(await db().count(`SELECT count(*) FROM usage_records WHERE kind = 'sms_inbound_segments' AND resource_id = $1`, [row.id])).toBe(1);
    expect(await pipeline.events('message.received', row.id)).toBe(1);
  });

  it('a Vonage 4xx is an answer: failed with its code, no charge, no retry', async () => {
    pipeline.carrier.answerNext({ status: 422, body: { type: 'https://developer.vonage.com/api-errors/messages#1150', title: 'Invalid params', detail: 'The value of one or more parameters is invalid.', instance: 'bf0ca0bf927b3b52e3cb03217e1a1ddf' } });
    const id = await send('refused');
    const failed = await waitFor(() => message(id), (r) => r.body.data.status === 'failed', { what: 'the rejection' });
    expect(failed.body.data).toMatchObject({ error_code: '1150', error_detail: 'The value of one or more parameters is invalid.' });
    expect(pipeline.carrier.sendsFor(id)).toHaveLength(1);
    expect(await db().count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(0);
    expect(await pipeline.events('message.failed', id)).toBe(1);
  });

  it('a Vonage 503, then 429, is retried with the same client_ref, then the message is sent once', async () => {
    pipeline.carrier.answerNext({ status: 503 }, { status: 429, body: { type: 'https://developer.vonage.com/api-errors/messages#1000', title: 'Throttled', detail: 'Please wait, then retry your request', instance: 'bf0ca0bf927b3b52e3cb03217e1a1ddf' } });
    const id = await send('retry me');
    await waitFor(() => message(id), (r) => r.body.data.status === 'sent', { what: 'the send after retries', timeoutMs: 30000 });
    expect(pipeline.carrier.sendsFor(id)).toHaveLength(3);
    expect(await db().count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
    expect(await pipeline.events('message.sent', id)).toBe(1);
  });
});
