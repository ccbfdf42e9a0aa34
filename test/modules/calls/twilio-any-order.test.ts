import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { newCallSid, twiml, TwilioVoiceCaller } from '../../support/twilio-voice.js';
import { VoicePipeline } from '../../support/voice-pipeline.js';

const T0 = '+15557820001';
const T1 = '+15557820002';
const RINGING = '+15557820100';
const WITH_VOICEMAIL = '+15557820101';
const CALLER = '+13125550177';

/**
 * Twilio Voice in any order (issue #24, item 7): the incoming request's Direction and the dial
 * action's parent CallStatus are read before acting, and `call.answered` is sent once, when the
 * caller is joined, whichever callback tells us first.
 */
describe('Twilio Voice in any order', () => {
  let voice: VoicePipeline;
  let twilio: TwilioVoiceCaller;
  let base: string;

  beforeAll(async () => {
    voice = await VoicePipeline.start();
    twilio = new TwilioVoiceCaller(voice.app);
    base = voice.app.config.publicBaseUrl;
    const number = (phone_number: string, ring: object) => voice.customer.assignNumber(phone_number, 'twilio', ring);
    await number(RINGING, { ring_plan: { targets: [{ to: T0, timeout_secs: 15 }, { to: T1, timeout_secs: 15 }], fallback: { action: 'hangup' } } });
    await number(WITH_VOICEMAIL, { ring_plan: { targets: [{ to: T0, timeout_secs: 10 }], fallback: { action: 'voicemail' } } });
  });
  afterAll(async () => {
    await voice.stop();
  });

  async function ringing(to = RINGING): Promise<{ sid: string; callId: string }> {
    const sid = newCallSid();
    expect((await twilio.incoming(sid, CALLER, to)).status).toBe(200);
    const { rows } = await voice.db.pool.query<{ id: string }>(`SELECT id FROM calls WHERE carrier = 'twilio' AND carrier_call_id = $1`, [sid]);
    return { sid, callId: rows[0].id };
  }

  it('the voice URL asked about a call our own side placed (Direction outbound-api) greets no one and dials no plan', async () => {
    const sid = newCallSid();
    const reply = await twilio.incoming(sid, RINGING, '+15557820999', 'outbound-api');
    expect(reply.status).toBe(200);
    expect(reply.body).toBe(twiml.empty());
    const { rows } = await voice.db.pool.query(`SELECT id, direction, ring_plan FROM calls WHERE carrier_call_id = $1`, [sid]);
    expect(rows).toEqual([expect.objectContaining({ direction: 'outbound', ring_plan: null })]);
    expect(await voice.db.count(`SELECT count(*) FROM call_legs WHERE call_id = $1`, [rows[0].id])).toBe(0);
  });

  it('a dial result that arrives after the caller left moves no cursor and dials no one: the call ends missed once', async () => {
    const { sid, callId } = await ringing();
    const reply = await twilio.dialResult(sid, callId, 0, { status: 'no-answer', callStatus: 'completed' });
    expect(reply.body).toBe(twiml.hangup());
    await twilio.status(sid, 'completed', 0);
    const call = await voice.call(callId);
    expect(call).toMatchObject({ status: 'missed', billable_minutes: 0, ring_plan: expect.objectContaining({ next: 1 }) });
    expect(call.legs).toHaveLength(1);
    expect(await voice.events('call.missed', callId)).toBe(1);
  });

  it('with the voicemail fallback, a dial result after the caller left answers nothing and bills nothing', async () => {
    const { sid, callId } = await ringing(WITH_VOICEMAIL);
    const reply = await twilio.dialResult(sid, callId, 0, { status: 'no-answer', callStatus: 'canceled' });
    expect(reply.body).toBe(twiml.hangup());
    await twilio.status(sid, 'canceled', 0);
    expect(await voice.call(callId)).toMatchObject({ status: 'missed', answered_at: null, billable_minutes: 0 });
    expect(await voice.events('call.answered', callId)).toBe(0);
    expect(await voice.usageRows(callId)).toBe(0);
  });

  it('the in-progress status callback first: the ringing target wins and call.answered is sent then, once', async () => {
    const { sid, callId } = await ringing();
    await twilio.status(sid, 'in-progress');
    expect(await voice.call(callId)).toMatchObject({ status: 'in_progress', legs: [expect.objectContaining({ target_index: 0, status: 'answered' })] });
    expect(await voice.events('call.answered', callId)).toBe(1);
    expect((await twilio.dialResult(sid, callId, 0, { status: 'completed', duration: 42 })).body).toBe(twiml.hangup());
    await twilio.status(sid, 'completed', 43);
    expect(await voice.call(callId)).toMatchObject({ status: 'completed', duration_seconds: 43, billable_minutes: 1 });
    expect(await voice.events('call.answered', callId)).toBe(1);
    expect(await voice.events('call.completed', callId)).toBe(1);
  });

  it('the final status callback before the dial result: call.answered then call.completed, once each', async () => {
    const { sid, callId } = await ringing();
    await twilio.status(sid, 'completed', 30);
    await twilio.dialResult(sid, callId, 0, { status: 'completed', duration: 30, callStatus: 'completed' });
    expect(await voice.call(callId)).toMatchObject({ status: 'completed', duration_seconds: 30, billable_minutes: 1 });
    const order = await voice.db.pool.query(`SELECT type FROM outbound_events WHERE payload->>'id' = $1 ORDER BY created_at, id`, [callId]);
    expect(order.rows.map((r) => r.type)).toEqual(['call.initiated', 'call.answered', 'call.completed']);
    expect(await voice.usageRows(callId)).toBe(1);
  });
});
