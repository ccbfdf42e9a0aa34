import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { telnyxInboundSms, telnyxReceipt } from '../../support/carrier-signing.js';
import type { TestDatabase } from '../../support/database.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { waitFor } from '../../support/wait.js';

const NUMBERS = { telnyx: '+17735550502', twilio: '+14155550502', vonage: '+447700900502' } as const;
type Carrier = keyof typeof NUMBERS;
/** What each carrier's failed status webhook carries when the handset texted STOP to the carrier (FakeCarrier.sendReceipt 'opted_out'). */
const OPTED_OUT_RECEIPT_CODES: Record<Carrier, string> = { telnyx: '40300', twilio: '21610', vonage: '1240' };

/** Each carrier's documented answer to a send to a handset that texted STOP to the carrier itself. */
const OPTED_OUT_ANSWERS: Record<Exclude<Carrier, 'vonage'>, { status: number; body: unknown; code: string }> = {
  // https://www.twilio.com/docs/api/errors/21610
  twilio: { status: 400, code: '21610', body: { code: 21610, message: 'Attempt to send to unsubscribed recipient', more_info: 'https://www.twilio.com/docs/errors/21610', status: 400 } },
  // https://developers.telnyx.com/api/errors/40300 (HTTP 409)
  telnyx: { status: 409, code: '40300', body: { errors: [{ code: '40300', title: 'Blocked due to STOP message', detail: "Messages cannot be sent from '+17735550502' to the destination due to an existing block rule." }] } },
};

/**
 * A carrier's "recipient opted out" answer (issue #42) records the opt-out (source carrier) with
 * the message's failure: one message.opted_out, later sends answer 422 recipient_opted_out before
 * anything is sent, and the handset's START clears it as for a keyword.
 */
describe("a carrier's recipient-opted-out answer", () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;
  let n = 0;
  const newHandset = () => `+1312557${String(1000 + n++).padStart(4, '0')}`;

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start({ [NUMBERS.telnyx]: 'telnyx', [NUMBERS.twilio]: 'twilio', [NUMBERS.vonage]: 'vonage' });
    db = pipeline.db;
  });
  afterAll(() => pipeline.stop());

  const send = (on: Carrier, to: string, text: string) => pipeline.customer.post('/v2/messages', { from: NUMBERS[on], to, text });

  it.each(Object.keys(OPTED_OUT_ANSWERS) as (keyof typeof OPTED_OUT_ANSWERS)[])('%s: the send fails recipient_opted_out, the opt-out is recorded once (source carrier), and the next send is refused with 422', async (on) => {
    const handset = newHandset();
    const answer = OPTED_OUT_ANSWERS[on];
    pipeline.carrier.answerNext({ status: answer.status, body: answer.body });
    const first = await send(on, handset, 'to a handset opted out at the carrier');
    expect(first.status).toBe(202);
    const id = first.body.data.id as string;
    const failed = await waitFor(() => pipeline.customer.get(`/v2/messages/${id}`), (r) => r.body.data.status === 'failed', { what: `${id} failed` });
    expect(failed.body.data).toMatchObject({ error_code: 'recipient_opted_out', error_detail: expect.stringContaining(answer.code) });
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(0);
    expect(await pipeline.events('message.failed', id)).toBe(1);

    const [optOut] = (await db.pool.query(`SELECT our_number, opted_out, source, changed_by FROM message_opt_outs WHERE handset = $1`, [handset])).rows;
    expect(optOut).toEqual({ our_number: NUMBERS[on], opted_out: true, source: 'carrier', changed_by: id });
    const [event] = (await db.pool.query(`SELECT payload FROM outbound_events WHERE type = 'message.opted_out' AND payload->>'handset' = $1`, [handset])).rows;
    expect(event.payload).toMatchObject({ id, record_type: 'opt_out', number: NUMBERS[on], scope: 'number', opted_out: true, source: 'carrier' });
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'message.opted_out' AND payload->>'handset' = $1`, [handset])).toBe(1);

    const sendsBefore = pipeline.carrier.sendsFor(id).length;
    const refused = await send(on, handset, 'after the carrier said opted out');
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0]).toMatchObject({ code: 'recipient_opted_out', source: { pointer: '/to' } });
    expect(pipeline.carrier.sendsFor(id)).toHaveLength(sendsBefore);
  });

  it("the handset's START clears a carrier-reported opt-out as it clears a keyword's", async () => {
    const handset = newHandset();
    pipeline.carrier.answerNext({ status: OPTED_OUT_ANSWERS.telnyx.status, body: OPTED_OUT_ANSWERS.telnyx.body });
    const id = (await send('telnyx', handset, 'blocked')).body.data.id as string;
    await waitFor(() => db.count(`SELECT count(*) FROM message_opt_outs WHERE handset = $1 AND opted_out`, [handset]), (c) => c === 1, { what: `${id}'s opt-out recorded` });
    const { body } = telnyxInboundSms(NUMBERS.telnyx, 'START', { from: handset });
    expect(await pipeline.deliverTelnyx(body)).toBe(200);
    await waitFor(() => db.count(`SELECT count(*) FROM message_opt_outs WHERE handset = $1 AND NOT opted_out AND source = 'keyword'`, [handset]), (c) => c === 1, { what: 'the START applied' });
    expect((await send('telnyx', handset, 'welcome back')).status).toBe(202);
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'message.opted_in' AND payload->>'handset' = $1`, [handset])).toBe(1);
  });

  const optOutSeq = (on: Carrier) => db.pool.query(`SELECT opt_out_seq FROM phone_numbers WHERE phone_number = $1`, [NUMBERS[on]]).then((r) => Number(r.rows[0].opt_out_seq));
  const optedOutEvents = (handset: string) => db.count(`SELECT count(*) FROM outbound_events WHERE type = 'message.opted_out' AND payload->>'handset' = $1`, [handset]);
  const receiptsProcessed = () =>
    waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL AND error IS NULL`), (c) => c === 0, { what: 'every receipt processed' });

  it.each(Object.keys(NUMBERS) as Carrier[])(
    "%s: a failed status webhook saying the handset opted out at the carrier fails the message recipient_opted_out and records the opt-out in the receipt's statement (source carrier, opt_out_seq bumped, one message.opted_out)",
    async (on) => {
      const handset = newHandset();
      const { id } = await pipeline.sendAndWaitSent(NUMBERS[on], handset, 'taken, then failed by the carrier: opted out');
      const seqBefore = await optOutSeq(on);
      expect(await pipeline.carrier.sendReceipt(id, 'opted_out')).toEqual([200]);
      const failed = await waitFor(() => pipeline.customer.get(`/v2/messages/${id}`), (r) => r.body.data.status === 'failed', { what: `${id} failed by its receipt` });
      expect(failed.body.data).toMatchObject({ error_code: 'recipient_opted_out', error_detail: expect.stringContaining(OPTED_OUT_RECEIPT_CODES[on]) });
      // the carrier took it: billed once when sent, not again
      expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
      expect(await pipeline.events('message.failed', id)).toBe(1);

      const [optOut] = (await db.pool.query(`SELECT our_number, opted_out, source, changed_by FROM message_opt_outs WHERE handset = $1`, [handset])).rows;
      expect(optOut).toEqual({ our_number: NUMBERS[on], opted_out: true, source: 'carrier', changed_by: id });
      expect(await optOutSeq(on)).toBe(seqBefore + 1);
      expect(await optedOutEvents(handset)).toBe(1);
      const [event] = (await db.pool.query(`SELECT payload FROM outbound_events WHERE type = 'message.opted_out' AND payload->>'handset' = $1`, [handset])).rows;
      expect(event.payload).toMatchObject({ id, record_type: 'opt_out', number: NUMBERS[on], scope: 'number', opted_out: true, source: 'carrier' });

      const refused = await send(on, handset, 'after the carrier reported the opt-out');
      expect(refused.status).toBe(422);
      expect(refused.body.errors[0]).toMatchObject({ code: 'recipient_opted_out' });
    },
  );

  it('a duplicate opted-out receipt (re-signed, new event ids), and a second message failed for the same handset, record nothing twice: one consent change, one message.opted_out, one bump', async () => {
    const handset = newHandset();
    const first = await pipeline.sendAndWaitSent(NUMBERS.telnyx, handset, 'first, before the STOP at Telnyx');
    const second = await pipeline.sendAndWaitSent(NUMBERS.telnyx, handset, 'second, before the STOP at Telnyx');
    const seqBefore = await optOutSeq('telnyx');
    for (let i = 0; i < 3; i++) expect(await pipeline.deliverTelnyx(telnyxReceipt(first.carrierId, 'delivery_failed', { optedOut: true }))).toBe(200);
    await receiptsProcessed();
    expect(await pipeline.deliverTelnyx(telnyxReceipt(second.carrierId, 'delivery_failed', { optedOut: true }))).toBe(200);
    // and the same delivery repeated (its event id too): deduplicated at ingest
    const again = telnyxReceipt(first.carrierId, 'delivery_failed', { optedOut: true });
    expect(await pipeline.deliverTelnyx(again)).toBe(200);
    expect(await pipeline.deliverTelnyx(again)).toBe(200);
    await receiptsProcessed();

    for (const { id } of [first, second]) {
      expect((await pipeline.customer.get(`/v2/messages/${id}`)).body.data).toMatchObject({ status: 'failed', error_code: 'recipient_opted_out' });
      expect(await pipeline.events('message.failed', id)).toBe(1);
    }
    expect(await db.count(`SELECT count(*) FROM message_opt_outs WHERE handset = $1`, [handset])).toBe(1);
    expect((await db.pool.query(`SELECT changed_by, source FROM message_opt_outs WHERE handset = $1`, [handset])).rows[0]).toEqual({ changed_by: first.id, source: 'carrier' });
    expect(await optedOutEvents(handset)).toBe(1);
    expect(await optOutSeq('telnyx')).toBe(seqBefore + 1);
  });

  it("an opted-out receipt whose move changes nothing (the message was already delivered: the first terminal word wins) records no opt-out", async () => {
    const handset = newHandset();
    const { id, carrierId } = await pipeline.sendAndWaitSent(NUMBERS.telnyx, handset, 'delivered first');
    expect(await pipeline.deliverTelnyx(telnyxReceipt(carrierId, 'delivered'))).toBe(200);
    await waitFor(() => pipeline.customer.get(`/v2/messages/${id}`), (r) => r.body.data.status === 'delivered', { what: 'delivered' });
    const seqBefore = await optOutSeq('telnyx');
    expect(await pipeline.deliverTelnyx(telnyxReceipt(carrierId, 'delivery_failed', { optedOut: true }))).toBe(200);
    await receiptsProcessed();
    expect((await pipeline.customer.get(`/v2/messages/${id}`)).body.data.status).toBe('delivered');
    expect(await db.count(`SELECT count(*) FROM message_opt_outs WHERE handset = $1`, [handset])).toBe(0);
    expect(await optedOutEvents(handset)).toBe(0);
    expect(await optOutSeq('telnyx')).toBe(seqBefore);
    expect((await send('telnyx', handset, 'still subscribed')).status).toBe(202);
  });
});
