import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { telnyxInboundSms } from '../../support/carrier-signing.js';
import type { TestDatabase } from '../../support/database.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { waitFor } from '../../support/wait.js';

const NUMBERS = { telnyx: '+17735550502', twilio: '+14155550502' } as const;
type Carrier = keyof typeof NUMBERS;

/** Each carrier's documented answer to a send to a handset that texted STOP to the carrier itself. */
const OPTED_OUT_ANSWERS: Record<Carrier, { status: number; body: unknown; code: string }> = {
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
    pipeline = await MessagingPipeline.start({ [NUMBERS.telnyx]: 'telnyx', [NUMBERS.twilio]: 'twilio' });
    db = pipeline.db;
  });
  afterAll(() => pipeline.stop());

  const send = (on: Carrier, to: string, text: string) => pipeline.customer.post('/v2/messages', { from: NUMBERS[on], to, text });

  it.each(Object.keys(OPTED_OUT_ANSWERS) as Carrier[])('%s: the send fails recipient_opted_out, the opt-out is recorded once (source carrier), and the next send is refused with 422', async (on) => {
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
});
