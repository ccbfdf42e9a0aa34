import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';
import { VoicePipeline, type TestCall } from '../../support/voice-pipeline.js';

const CALLER = '+15557780001';
const A = '+15557780101';
const B = '+15557780102';
const FORWARD = '+15557780199';
const noAnswer = { hangup_cause: 'timeout', sip_hangup_cause: '487' };

describe('ring plan rules: retry table, declined targets, fallbacks, the join timeout', () => {
  let voice: VoicePipeline;

  beforeAll(async () => {
    // 6 s, not 1: the racing test below holds the winning answer's statement at its end, after
    // it wrote the join timeout (counted from the win, inside the statement), for as long as the
    // late hangup takes to arrive; in a full suite on two loaded cores that passed 3 s once, and
    // the join timeout then wrote the winner off before its bridge was sent.
    voice = await VoicePipeline.start({ DIAL_JOIN_TIMEOUT_SECONDS: '6' });
    await voice.number('+15550200001', { ring_plan: { targets: [{ to: A }, { to: B }], fallback: { action: 'hangup' } } });
    await voice.number('+15550200002', { ring_plan: { targets: [{ to: A }, { to: B }, { to: A }], fallback: { action: 'forward', to: A } } });
    await voice.number('+15550200003', { ring_plan: { targets: [{ to: A }], fallback: { action: 'forward', to: FORWARD } } });
    await voice.number('+15550200004', { ring_plan: { targets: [{ to: A }], fallback: { action: 'voicemail' } } });
  });
  afterAll(async () => {
    await voice.stop();
  });

  async function ringing(to: string): Promise<{ call: TestCall; callId: string }> {
    const call = await voice.incoming(CALLER, to);
    return { call, callId: await voice.callId(call) };
  }

  it('a SIP 503 dials the same target once more under a new command id, then the plan moves on', async () => {
    const { call, callId } = await ringing('+15550200001');
    const first = await voice.dial(callId);
    await voice.legEvent(call, first, 'call.hangup', { hangup_cause: 'unspecified', sip_hangup_cause: '503' });
    const redial = await voice.dial(callId, 2);
    expect(redial.clientState).toEqual({ call_id: callId, target: 0, attempt: 2 });
    expect(redial.body.to).toBe(A);
    expect(redial.body.command_id).not.toBe(first.body.command_id);
    await voice.legEvent(call, redial, 'call.hangup', { hangup_cause: 'unspecified', sip_hangup_cause: '503' });
    const next = await voice.dial(callId, 3);
    expect(next.clientState).toMatchObject({ target: 1, attempt: 1 });
    // the first try's 503 replayed late redials nothing
    await voice.legEvent(call, first, 'call.hangup', { hangup_cause: 'unspecified', sip_hangup_cause: '503' });
    await voice.settled();
    expect(voice.telnyx.dials(callId)).toHaveLength(3);
  });

  it('a 4xx to the dial is an answer: that target failed, the plan moves on; a 5xx repeats the same command', async () => {
    voice.telnyx.answerNext('dial', { status: 422, body: { errors: [{ code: '10015', title: 'Invalid destination', detail: 'to is not dialable' }] } });
    const { call, callId } = await ringing('+15550200001');
    const second = await voice.dial(callId, 2);
    expect(second.clientState).toMatchObject({ target: 1, attempt: 1 });
    const first = voice.telnyx.dials(callId)[0];
    expect((await voice.call(callId)).legs[0]).toMatchObject({ target_index: 0, status: 'failed' });
    expect(first.body.command_id).toBe(`${(await voice.call(callId)).legs[0].id}-dial`);
    await voice.legEvent(call, second, 'call.hangup', noAnswer);
    // target 1 ran out too: the fallback hangs the caller up
    await voice.telnyx.next((c) => c.action === 'hangup' && c.controlId === call.caller);
    await voice.settled();
    expect(voice.telnyx.dials(callId)).toHaveLength(2);
  });

  it('a dial the carrier answered 503 is sent once more under the same command id', async () => {
    voice.telnyx.answerNext('dial', { status: 503 });
    const { callId } = await ringing('+15550200001');
    await voice.dial(callId, 2);
    await voice.settled();
    const dials = voice.telnyx.dials(callId);
    expect(dials).toHaveLength(2);
    expect(new Set(dials.map((d) => d.body.command_id)).size).toBe(1);
    expect(dials.map((d) => d.clientState)).toEqual([{ call_id: callId, target: 0, attempt: 1 }, { call_id: callId, target: 0, attempt: 1 }]);
    expect(await voice.db.count(`SELECT count(*) FROM call_legs WHERE call_id = $1`, [callId])).toBe(1);
  });

  it('a dial unanswered twice (503, 504) is not sent a third time: its leg is written off and the plan moves on', async () => {
    voice.telnyx.answerNext('dial', { status: 503 }, { status: 504 });
    const { callId } = await ringing('+15550200001');
    const next = await voice.dial(callId, 3);
    expect(next.clientState).toMatchObject({ target: 1, attempt: 1 });
    await voice.settled();
    const dials = voice.telnyx.dials(callId);
    expect(dials.filter((d) => d.clientState?.target === 0)).toHaveLength(2);
    expect(await voice.call(callId)).toMatchObject({ status: 'ringing', legs: [expect.objectContaining({ target_index: 0, status: 'failed' }), expect.objectContaining({ target_index: 1 })] });
  });

  it('a dial whose answers are lost but whose leg the carrier reported rings on: nothing else is dialed until it ends', async () => {
    voice.telnyx.answerNext('dial', { status: 504 }, { status: 504 });
    voice.telnyx.holdNext('dial');
    const { call, callId } = await ringing('+15550200001');
    // The carrier created the leg (its call.initiated arrives) while our dial is still waiting for an answer.
    const first = await voice.dial(callId);
    await voice.legEvent(call, first, 'call.initiated', { state: 'bridging' });
    await waitFor(() => voice.db.count(`SELECT count(*) FROM call_legs WHERE call_id = $1 AND control_id IS NOT NULL`, [callId]), (n) => n === 1, { what: 'the leg named by its event' });
    voice.telnyx.releaseHeld();
    await voice.dial(callId, 2);
    await voice.settled();
    expect(voice.telnyx.dials(callId)).toHaveLength(2);
    expect((await voice.call(callId)).legs).toMatchObject([{ target_index: 0, status: 'ringing' }]);
    // its own hangup moves the plan on, once
    await voice.legEvent(call, first, 'call.hangup', noAnswer);
    expect((await voice.dial(callId, 3)).clientState).toMatchObject({ target: 1, attempt: 1 });
  });

  it('a target that declined is never dialed again on that call, not even as the forward target', async () => {
    const { call, callId } = await ringing('+15550200002');
    const first = await voice.dial(callId);
    await voice.legEvent(call, first, 'call.hangup', { hangup_cause: 'call_rejected', sip_hangup_cause: '603' });
    const second = await voice.dial(callId, 2);
    expect(second.body.to).toBe(B);
    await voice.legEvent(call, second, 'call.hangup', noAnswer);
    // target 2 is A again and the forward target is A: both skipped, the caller is hung up
    await voice.telnyx.next((c) => c.action === 'hangup' && c.controlId === call.caller);
    await voice.settled();
    expect(voice.telnyx.dials(callId).map((d) => d.body.to)).toEqual([A, B]);
    expect((await voice.call(callId)).ring_plan.next).toBe(2);
  });

  it('forward dials its number as one last target', async () => {
    const { call, callId } = await ringing('+15550200003');
    const first = await voice.dial(callId);
    await voice.legEvent(call, first, 'call.hangup', noAnswer);
    const forward = await voice.dial(callId, 2);
    expect(forward.body.to).toBe(FORWARD);
    expect(forward.clientState).toMatchObject({ target: 1, attempt: 1 });
    await voice.legEvent(call, forward, 'call.answered');
    await voice.telnyx.next((c) => c.action === 'bridge' && c.body.call_control_id === forward.controlId);
    await voice.callUntil(callId, (c) => c.status === 'in_progress', 'the forwarded call answered');
  });

  it('voicemail answers the caller, records once and announces call.voicemail once; the call is billed', async () => {
    const { call, callId } = await ringing('+15550200004');
    const first = await voice.dial(callId);
    await voice.legEvent(call, first, 'call.hangup', noAnswer);
    await voice.telnyx.next((c) => c.action === 'record_start' && c.controlId === call.caller);
    expect(voice.telnyx.of('answer', (c) => c.controlId === call.caller)).toHaveLength(1);
    const t0 = Date.now();
    await voice.callerEvent(call, 'call.answered', {}, { occurredAt: new Date(t0).toISOString() });
    const saved = { recording_urls: { mp3: 'http://127.0.0.1/recordings/1.mp3', wav: 'http://127.0.0.1/recordings/1.wav' }, recording_id: 'rec-1' };
    await voice.callerEvent(call, 'call.recording.saved', saved);
    await Promise.all([voice.callerEvent(call, 'call.recording.saved', saved), voice.callerEvent(call, 'call.recording.saved', saved)]);
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' }, { occurredAt: new Date(t0 + 20_000).toISOString() });
    await voice.settled();
    expect(await voice.call(callId)).toMatchObject({ status: 'completed', voicemail_url: 'http://127.0.0.1/recordings/1.mp3', duration_seconds: 20, billable_minutes: 1 });
    expect(await voice.events('call.voicemail', callId)).toBe(1);
    expect(await voice.usageRows(callId)).toBe(1);
  });

  it('a leg that answered but is never bridged is written off after DIAL_JOIN_TIMEOUT_SECONDS and the plan moves on', async () => {
    const { call, callId } = await ringing('+15550200001');
    const first = await voice.dial(callId);
    await voice.legEvent(call, first, 'call.answered');
    await voice.callUntil(callId, (c) => c.status === 'in_progress', 'leg 0 answered');
    const next = await voice.dial(callId, 2);
    expect(next.clientState).toMatchObject({ target: 1, attempt: 1 });
    // the hangup of leg 0 and the next dial are two command jobs: either may reach the carrier first
    const hangups = () => voice.telnyx.distinct('hangup', (c) => c.controlId === first.controlId);
    await waitFor(async () => hangups(), (h) => h.length >= 1, { what: 'the unjoined leg hung up', timeoutMs: 30_000 });
    expect(hangups()).toHaveLength(1);
    const call2 = await voice.call(callId);
    expect(call2.status).toBe('ringing');
    expect(call2.legs[0]).toMatchObject({ status: 'ended', hangup_cause: 'join_timeout' });
    // leg 0's hangup (from our command) moves nothing; leg 1 answers, is bridged, and stays
    await voice.legEvent(call, first, 'call.hangup', { hangup_cause: 'normal_clearing' });
    await voice.legEvent(call, next, 'call.answered');
    await voice.legEvent(call, next, 'call.bridged');
    await voice.settled();
    expect(voice.telnyx.dials(callId)).toHaveLength(2);
    expect((await voice.call(callId)).status).toBe('in_progress');
  });

  it('answer on leg 1 racing a late copy of leg 0\'s timeout: leg 1 wins, nothing else is dialed', async () => {
    const { call, callId } = await ringing('+15550200001');
    const first = await voice.dial(callId);
    await voice.legEvent(call, first, 'call.hangup', noAnswer);
    const second = await voice.dial(callId, 2);
    await voice.settled();
    // hold leg 1's answer after it moved the call, before its commit
    const pause = await pausePoint(voice.db.url, { table: 'calls', on: 'UPDATE', when: `NEW.status = 'in_progress' AND NEW.id = '${callId}'` });
    await pause.hold();
    try {
      await voice.legEvent(call, second, 'call.answered');
      await pause.waitUntilPaused();
      await voice.legEvent(call, first, 'call.hangup', noAnswer);
      // the late hangup waits for the call row; let the answer commit
      await waitFor(() => voice.db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL`), (n) => n >= 2, { what: 'both events in flight' });
      await pause.release();
    } finally {
      await pause.remove();
    }
    // The carrier reports the bridge it was asked for: the winner is joined, and the join timeout
    // has nothing to write off however long the checks below take on a loaded machine.
    await voice.telnyx.next((c) => c.action === 'bridge' && c.body.call_control_id === second.controlId);
    await voice.legEvent(call, second, 'call.bridged');
    await voice.settled();
    expect(voice.telnyx.dials(callId)).toHaveLength(2);
    expect(voice.telnyx.of('bridge', (c) => c.body.call_control_id === second.controlId)).toHaveLength(1);
    const answered = await voice.call(callId);
    expect(answered.status).toBe('in_progress');
    expect(answered.ring_plan.next).toBe(2);
  });
});
