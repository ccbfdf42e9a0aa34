import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../../support/wait.js';
import { VoicePipeline, type TestCall } from '../../support/voice-pipeline.js';

const CALLER = '+15557770001';
const A = '+15557770101';
const B = '+15557770102';
const C = '+15557770103';
const at = (base: number, seconds: number) => new Date(base + seconds * 1000).toISOString();

describe('sequential ring on Telnyx Call Control', () => {
  let voice: VoicePipeline;
  const plan = { ring_plan: { targets: [{ to: A, timeout_secs: 15 }, { to: B }, { to: C }], fallback: { action: 'hangup' } }, transcribe: false };

  beforeAll(async () => {
    voice = await VoicePipeline.start();
    await voice.number('+15550100001', plan);
  });
  afterAll(async () => {
    await voice.stop();
  });

  async function ringing(): Promise<{ call: TestCall; callId: string }> {
    const call = await voice.incoming(CALLER, '+15550100001');
    const callId = await voice.callId(call);
    return { call, callId };
  }

  it('answers, bridges and bills an answered call once, whatever the carrier repeats', async () => {
    const { call, callId } = await ringing();
    const dial = await voice.dial(callId);
    expect(dial.body).toMatchObject({ to: A, from: CALLER, link_to: call.caller, timeout_secs: 15, connection_id: expect.any(String) });
    expect(dial.clientState).toEqual({ call_id: callId, target: 0, attempt: 1 });
    const t0 = Date.now();
    expect(await voice.legEvent(call, dial, 'call.initiated', { state: 'bridging' })).toBe(200);
    expect(await voice.legEvent(call, dial, 'call.answered', {}, { occurredAt: at(t0, 0) })).toBe(200);
    const bridge = await voice.telnyx.next((c) => c.action === 'bridge' && c.controlId === call.caller);
    expect(bridge.body.call_control_id).toBe(dial.controlId);
    expect(voice.telnyx.of('answer', (c) => c.controlId === call.caller)).toHaveLength(1);
    await voice.callUntil(callId, (c) => c.status === 'in_progress', 'the call in progress');
    await voice.legEvent(call, dial, 'call.bridged');
    await voice.callerEvent(call, 'call.bridged');
    // the same answer again, re-signed under a new event id: nothing new
    await voice.legEvent(call, dial, 'call.answered', {}, { occurredAt: at(t0, 0) });
    // caller hangs up 61 s later, twice (a retry), and the bridged leg's own hangup follows
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'caller', sip_hangup_cause: '200' }, { occurredAt: at(t0, 61) });
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'caller', sip_hangup_cause: '200' }, { occurredAt: at(t0, 61) });
    await voice.legEvent(call, dial, 'call.hangup', { hangup_cause: 'normal_clearing', sip_hangup_cause: '200' }, { occurredAt: at(t0, 62) });
    await voice.settled();
    const ended = await voice.call(callId);
    expect(ended).toMatchObject({ status: 'completed', duration_seconds: 61, billable_minutes: 2, hangup_cause: 'normal_clearing' });
    expect(await voice.usageRows(callId)).toBe(1);
    expect(await voice.db.count(`SELECT quantity FROM usage_records WHERE resource_id = $1`, [callId])).toBe(2);
    expect(await voice.events('call.initiated', callId)).toBe(1);
    expect(await voice.events('call.answered', callId)).toBe(1);
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(voice.telnyx.distinct('bridge', (c) => c.controlId === call.caller)).toHaveLength(1);
    // the leg was still up when the caller left: hung up once
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === dial.controlId)).toHaveLength(1);
    expect(voice.telnyx.dials(callId)).toHaveLength(1);
    const timeline = (await voice.customer.get(`/v2/calls/${callId}/timeline`)).body.data;
    expect(timeline.map((e: any) => `${e.event_type}:${e.outcome}`)).toEqual([
      'call.initiated:applied', 'call.initiated:ignored', 'call.answered:applied', 'call.bridged:applied', 'call.bridged:duplicate',
      'call.answered:duplicate', 'call.hangup:applied', 'call.hangup:duplicate', 'call.hangup:duplicate',
    ]);
  });

  it('the same leg hangup twice, then three times at once under new event ids, dials the next target exactly once', async () => {
    const { call, callId } = await ringing();
    const first = await voice.dial(callId);
    const timeout = { hangup_cause: 'timeout', hangup_source: 'callee', sip_hangup_cause: '487' };
    expect(await voice.legEvent(call, first, 'call.hangup', timeout)).toBe(200);
    expect(await voice.legEvent(call, first, 'call.hangup', timeout)).toBe(200);
    await Promise.all([1, 2, 3].map(() => voice.legEvent(call, first, 'call.hangup', timeout)));
    await voice.settled();
    const dials = voice.telnyx.dials(callId);
    expect(dials.map((d) => d.clientState)).toEqual([{ call_id: callId, target: 0, attempt: 1 }, { call_id: callId, target: 1, attempt: 1 }]);
    expect(dials[1].body.to).toBe(B);
    expect((await voice.call(callId)).ring_plan.next).toBe(2);
    // a late copy of leg 0's hangup while leg 1 rings moves nothing
    await voice.legEvent(call, first, 'call.hangup', timeout);
    await voice.settled();
    expect(voice.telnyx.dials(callId)).toHaveLength(2);
    expect(await voice.db.count(`SELECT count(*) FROM call_legs WHERE call_id = $1`, [callId])).toBe(2);
  });

  it('every target unanswered: the fallback runs once and call.missed is sent once, even with the last hangup replayed concurrently', async () => {
    const { call, callId } = await ringing();
    const noAnswer = { hangup_cause: 'timeout', sip_hangup_cause: '487' };
    for (let n = 1; n <= 3; n++) {
      const dial = await voice.dial(callId, n);
      if (n < 3) await voice.legEvent(call, dial, 'call.hangup', noAnswer);
      else await Promise.all([1, 2, 3, 4].map(() => voice.legEvent(call, dial, 'call.hangup', noAnswer)));
    }
    const hangup = await voice.telnyx.next((c) => c.action === 'hangup' && c.controlId === call.caller);
    expect(hangup.body.command_id).toBe(`${callId}-hangup-caller`);
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'unknown' });
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'unknown' });
    await voice.settled();
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === call.caller)).toHaveLength(1);
    expect(await voice.call(callId)).toMatchObject({ status: 'missed', billable_minutes: 0, duration_seconds: 0 });
    expect(await voice.events('call.missed', callId)).toBe(1);
    expect(await voice.usageRows(callId)).toBe(0);
    expect(voice.telnyx.dials(callId)).toHaveLength(3);
  });

  it('the caller hanging up while a leg rings ends the call missed and hangs that leg up once', async () => {
    const { call, callId } = await ringing();
    const dial = await voice.dial(callId);
    await voice.legEvent(call, dial, 'call.initiated', { state: 'bridging' });
    await voice.settled();
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'originator_cancel', hangup_source: 'caller' });
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'originator_cancel', hangup_source: 'caller' });
    await voice.settled();
    expect(await voice.call(callId)).toMatchObject({ status: 'missed', billable_minutes: 0 });
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === dial.controlId)).toHaveLength(1);
    // the leg's own hangup (from our command) and a late answer change nothing and dial no one
    await voice.legEvent(call, dial, 'call.answered');
    await voice.legEvent(call, dial, 'call.hangup', { hangup_cause: 'normal_clearing' });
    await voice.settled();
    expect(voice.telnyx.dials(callId)).toHaveLength(1);
    expect(voice.telnyx.of('answer', (c) => c.controlId === call.caller)).toHaveLength(0);
    expect(await voice.events('call.missed', callId)).toBe(1);
    expect(await voice.events('call.answered', callId)).toBe(0);
  });

  it('callee then caller hangup: one call.completed, one usage row', async () => {
    const { call, callId } = await ringing();
    const dial = await voice.dial(callId);
    const t0 = Date.now();
    await voice.legEvent(call, dial, 'call.answered', {}, { occurredAt: at(t0, 0) });
    await voice.legEvent(call, dial, 'call.bridged');
    await voice.legEvent(call, dial, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'callee' }, { occurredAt: at(t0, 30) });
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' }, { occurredAt: at(t0, 31) });
    await voice.settled();
    expect(await voice.call(callId)).toMatchObject({ status: 'completed', duration_seconds: 30, billable_minutes: 1 });
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(await voice.usageRows(callId)).toBe(1);
    // the callee ended it: the caller is hung up (once), no leg left to hang up
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === call.caller)).toHaveLength(1);
  });

  it('an answer before its call.initiated, and a ringing report after the answer, are handled in any order', async () => {
    const { call, callId } = await ringing();
    const dial = await voice.dial(callId);
    await voice.legEvent(call, dial, 'call.answered');
    await voice.legEvent(call, dial, 'call.initiated', { state: 'bridging' });
    await voice.settled();
    const answered = await voice.call(callId);
    expect(answered.status).toBe('in_progress');
    expect(answered.legs[0]).toMatchObject({ status: 'answered', target_index: 0 });
    // call.answered is the join: sent when the carrier reports the bridge, once
    expect(await voice.events('call.answered', callId)).toBe(0);
    await voice.legEvent(call, dial, 'call.bridged');
    await voice.callerEvent(call, 'call.bridged');
    await voice.settled();
    expect(await voice.events('call.answered', callId)).toBe(1);
  });

  it('the caller hanging up twice at once: one call.completed, one usage row', async () => {
    const { call, callId } = await ringing();
    const dial = await voice.dial(callId);
    await voice.legEvent(call, dial, 'call.answered');
    await voice.settled();
    await Promise.all([1, 2, 3].map(() => voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' })));
    await voice.settled();
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(await voice.usageRows(callId)).toBe(1);
    await waitFor(() => voice.call(callId), (c) => c.billable_minutes === 1, { what: 'one minute billed' });
  });
});
