import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { telnyxEvent } from '../../support/carrier-signing.js';
import { waitFor } from '../../support/wait.js';
import { VoicePipeline } from '../../support/voice-pipeline.js';

const OURS = '+15550300001';
const PLAIN = '+15550300002';
const TRANSCRIBED = '+15550300003';

describe('calls: direction and ownership, outbound calls, transcripts, voice settings', () => {
  let voice: VoicePipeline;
  let oursId: string;

  beforeAll(async () => {
    voice = await VoicePipeline.start();
    oursId = await voice.number(OURS, { ring_plan: { targets: [{ to: '+15557790101' }] } });
    await voice.number(PLAIN);
    await voice.number(TRANSCRIBED, { ring_plan: { targets: [{ to: '+15557790102' }] }, transcribe: true });
  });
  afterAll(async () => {
    await voice.stop();
  });

  it('a call to a number nobody owns is hung up and leaves no row', async () => {
    const call = await voice.incoming('+15557790001', '+15559999999');
    await voice.settled();
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === call.caller)).toHaveLength(1);
    expect(await voice.db.count(`SELECT count(*) FROM calls WHERE carrier_call_id = $1`, [call.session])).toBe(0);
    // its hangup finds nothing to do, and is not retried
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' });
    await voice.settled();
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE error IS NOT NULL OR attempts > 1`)).toBe(0);
  });

  it('a call to a number without voice settings is a missed call row, and the caller is hung up', async () => {
    const call = await voice.incoming('+15557790001', PLAIN);
    const callId = await voice.callId(call);
    await voice.settled();
    expect(await voice.call(callId)).toMatchObject({ status: 'missed', direction: 'inbound', carrier_call_id: call.session, hangup_cause: 'no_voice_settings', legs: [] });
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === call.caller)).toHaveLength(1);
    expect(await voice.events('call.missed', callId)).toBe(1);
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' });
    await voice.settled();
    expect(await voice.events('call.missed', callId)).toBe(1);
  });

  it('the customer\'s own endpoint calling out (outgoing, no state of ours) is an outbound call with no ring plan', async () => {
    const session = randomUUID();
    const leg = `v3:sip-${randomUUID()}`;
    const event = (type: string, extra = {}, occurredAt = new Date().toISOString()) =>
      voice.deliver(telnyxEvent(type, { call_control_id: leg, call_session_id: session, call_leg_id: randomUUID(), client_state: null, from: OURS, to: '+15557790555', direction: 'outgoing', ...extra }, { occurredAt }));
    const t0 = Date.now();
    await event('call.initiated', { state: 'bridging' });
    const callId = await voice.callId({ session, caller: leg, from: OURS, to: '' });
    await event('call.answered', {}, new Date(t0).toISOString());
    await event('call.hangup', { hangup_cause: 'normal_clearing' }, new Date(t0 + 125_000).toISOString());
    await voice.settled();
    expect(await voice.call(callId)).toMatchObject({ direction: 'outbound', status: 'completed', ring_plan: null, duration_seconds: 125, billable_minutes: 3, legs: [] });
    expect(voice.telnyx.dials(callId)).toHaveLength(0);
    expect(await voice.usageRows(callId)).toBe(1);
  });

  it('client_state that is not ours, or not base64 at all, is treated as not ours: never a 5xx, nothing changes', async () => {
    const call = await voice.incoming('+15557790001', OURS);
    const callId = await voice.callId(call);
    await voice.dial(callId);
    await voice.settled();
    const foreign = Buffer.from(JSON.stringify({ call_id: 'call_00000000000000000000000000', target: 0, attempt: 1 })).toString('base64');
    for (const clientState of ['%%% not base64 %%%', Buffer.from('{"x":1}').toString('base64'), foreign, Buffer.from('not json').toString('base64')]) {
      const status = await voice.deliver(telnyxEvent('call.hangup', { call_control_id: `v3:other-${randomUUID()}`, call_session_id: call.session, client_state: clientState, hangup_cause: 'timeout', to: OURS }));
      expect(status).toBe(200);
    }
    await voice.settled();
    // One dial as Telnyx counts them: its command_id. On a loaded machine the first send's answer
    // can outlast the command timeout, and the dial is sent again under the same command_id,
    // which Telnyx does once (the fake answers it with the same leg).
    expect(voice.telnyx.distinct('dial', (c) => c.clientState?.call_id === callId)).toHaveLength(1);
    expect((await voice.call(callId)).status).toBe('ringing');
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE error IS NOT NULL`)).toBe(0);
  });

  it('POST /v2/calls places an outbound call once per Idempotency-Key; answered, hung up, billed', async () => {
    const key = `call-${randomUUID()}`;
    const first = await voice.customer.post('/v2/calls', { from: OURS, to: '+15557790777' }, { 'idempotency-key': key });
    expect(first.status).toBe(202);
    expect(first.body.data).toMatchObject({ record_type: 'call', direction: 'outbound', status: 'ringing', from: OURS, to: '+15557790777', carrier_call_id: null });
    const again = await voice.customer.post('/v2/calls', { from: OURS, to: '+15557790777' }, { 'idempotency-key': key });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    const callId = first.body.data.id;
    const dial = await voice.dial(callId);
    expect(dial.body.link_to).toBeUndefined();
    const session = { session: randomUUID() };
    const t0 = Date.now();
    await voice.legEvent(session, dial, 'call.initiated');
    await voice.legEvent(session, dial, 'call.answered', {}, { occurredAt: new Date(t0).toISOString() });
    await voice.legEvent(session, dial, 'call.hangup', { hangup_cause: 'normal_clearing' }, { occurredAt: new Date(t0 + 5_000).toISOString() });
    await voice.settled();
    expect(await voice.call(callId)).toMatchObject({ status: 'completed', carrier_call_id: session.session, duration_seconds: 5, billable_minutes: 1 });
    expect(voice.telnyx.dials(callId)).toHaveLength(1);
    expect(await voice.events('call.initiated', callId)).toBe(1);
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect((await voice.customer.get(`/v2/calls?direction=outbound&status=completed`)).body.data.map((c: { id: string }) => c.id)).toContain(callId);
  });

  it('POST /v2/calls refuses a number that is not yours (422) and bad input', async () => {
    expect((await voice.customer.post('/v2/calls', { from: '+15551112222', to: '+15557790777' })).status).toBe(422);
    const bad = await voice.customer.post('/v2/calls', { from: OURS, to: '12345' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].source.pointer).toBe('/to');
    expect((await voice.customer.get('/v2/calls/call_doesnotexist')).status).toBe(404);
    expect((await voice.customer.get('/v2/calls/call_doesnotexist/timeline')).status).toBe(404);
    expect((await voice.customer.get('/v2/calls?status=nope')).status).toBe(422);
  });

  it('a transcribed call starts transcription on the bridge, keeps each fragment once and sends call.transcribed once', async () => {
    const call = await voice.incoming('+15557790001', TRANSCRIBED);
    const callId = await voice.callId(call);
    const dial = await voice.dial(callId);
    await voice.legEvent(call, dial, 'call.answered');
    await voice.telnyx.next((c) => c.action === 'transcription_start' && c.controlId === call.caller);
    const t0 = Date.now();
    const fragment = (text: string, s: number) =>
      voice.callerEvent(call, 'call.transcription', { transcription_data: { transcript: text, is_final: true, confidence: 0.9 } }, { occurredAt: new Date(t0 + s * 1000).toISOString() });
    await fragment('world', 2);
    await fragment('hello', 1);
    await fragment('hello', 1);
    await voice.callerEvent(call, 'call.transcription', { transcription_data: { transcript: 'hel', is_final: false } });
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' });
    const done = await voice.callUntil(callId, (c) => c.transcript !== null, 'the transcript');
    expect(done.transcript).toBe('hello world');
    await voice.settled();
    expect(await voice.events('call.transcribed', callId)).toBe(1);
  });

  describe('voice settings', () => {
    const patch = (body: unknown, id = oursId) => voice.customer.request('PATCH', `/v2/phone_numbers/${id}`, body);
    const pointerOf = async (body: unknown) => {
      const res = await patch(body);
      expect(res.status).toBe(422);
      return res.body.errors.map((e: { source: { pointer: string } }) => e.source.pointer);
    };

    it('stores the plan with its defaults and shows it on the number', async () => {
      const res = await patch({ voice: { ring_plan: { targets: [{ to: '+15557790101' }, { to: '+15557790102', timeout_secs: 45 }] } } });
      expect(res.status).toBe(200);
      expect(res.body.data.voice).toEqual({ ring_plan: { targets: [{ to: '+15557790101', timeout_secs: 20 }, { to: '+15557790102', timeout_secs: 45 }], fallback: { action: 'hangup' } }, transcribe: false });
      expect((await voice.customer.get(`/v2/phone_numbers/${oursId}`)).body.data.voice.ring_plan.targets).toHaveLength(2);
    });

    it('refuses bad plans with 422 naming the field, and changes nothing', async () => {
      const before = (await voice.customer.get(`/v2/phone_numbers/${oursId}`)).body.data.voice;
      expect(await pointerOf({ voice: { ring_plan: { targets: [] } } })).toEqual(['/voice/ring_plan/targets']);
      expect(await pointerOf({ voice: { ring_plan: { targets: Array.from({ length: 11 }, () => ({ to: '+15557790101' })) } } })).toEqual(['/voice/ring_plan/targets']);
      expect(await pointerOf({ voice: { ring_plan: { targets: [{ to: '5557790101' }] } } })).toEqual(['/voice/ring_plan/targets/0/to']);
      expect(await pointerOf({ voice: { ring_plan: { targets: [{ to: '+15557790101', timeout_secs: 4 }] } } })).toEqual(['/voice/ring_plan/targets/0/timeout_secs']);
      expect(await pointerOf({ voice: { ring_plan: { targets: [{ to: '+15557790101', timeout_secs: 121 }] } } })).toEqual(['/voice/ring_plan/targets/0/timeout_secs']);
      expect(await pointerOf({ voice: { ring_plan: { targets: [{ to: '+15557790101' }], fallback: { action: 'forward' } } } })).toEqual(['/voice/ring_plan/fallback/to']);
      expect(await pointerOf({ voice: { ring_plan: { targets: [{ to: '+15557790101' }], fallback: { action: 'ring_forever' } } } })).toEqual(['/voice/ring_plan/fallback/action']);
      expect(await pointerOf({ voice: { ring_plan: 'all' } })).toContain('/voice/ring_plan');
      expect(await pointerOf({ voice: 7 })).toContain('/voice');
      expect((await voice.customer.get(`/v2/phone_numbers/${oursId}`)).body.data.voice).toEqual(before);
    });

    it('null switches calls off; another account\'s number is 404', async () => {
      const plainId = (await voice.customer.get('/v2/phone_numbers')).body.data.find((n: { phone_number: string }) => n.phone_number === PLAIN).id;
      expect((await patch({ voice: null }, plainId)).body.data.voice).toBeNull();
      expect((await patch({ voice: null }, 'num_doesnotexist')).status).toBe(404);
    });
  });

  it('a Twilio voice callback is answered with TwiML in the request, never left waiting (test/modules/calls/twilio-voice.test.ts has the flow)', async () => {
    const { twilioSignature } = await import('../../../src/carriers/twilio/twilio-signature.js');
    const fields = { CallSid: `CA${randomUUID().replace(/-/g, '')}`, CallStatus: 'ringing', From: '+15557790001', To: OURS, Direction: 'inbound', AccountSid: 'AC00000000000000000000000000000000' };
    const url = `${voice.app.config.publicBaseUrl}/webhooks/twilio/voice`;
    const res = await fetch(`${voice.app.url}/webhooks/twilio/voice`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(voice.app.config.twilioWebhookAuthToken!, url, fields) },
      body: new URLSearchParams(fields).toString(),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/xml/);
    expect(await res.text()).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?><Response><Dial /);
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE carrier = 'twilio' AND carrier_event_id = $1 AND processed_at IS NOT NULL`, [`${fields.CallSid}:incoming:ringing`])).toBe(1);
  });
});
