import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { CallControlCommandsHandler } from '../../../src/modules/calls/call-control-commands.handler.js';
import { CallControlCommands } from '../../../src/modules/calls/call-control-commands.js';
import { CallTransitions } from '../../../src/modules/calls/call-transitions.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { VoicePipeline, type TestCall } from '../../support/voice-pipeline.js';
import { waitFor } from '../../support/wait.js';
import { partitionHolding } from '../../support/partitions.js';

const CALLER = '+15557790501';
const A = '+15557790601';
const B = '+15557790602';
const RING = '+15550300001';
const OUTBOUND_FROM = '+15550300002';
const noAnswer = { hangup_cause: 'timeout', sip_hangup_cause: '487' };
const at = (base: number, seconds: number) => new Date(base + seconds * 1000).toISOString();

/**
 * Telnyx Call Control as a carrier really behaves (issue #24): events of one leg out of order, a
 * leg that answers and drops, a second physical leg of one try, command answers lost or late.
 * The test plays Telnyx; each case names the order it delivers.
 */
describe('voice in any carrier order (Telnyx Call Control)', () => {
  let voice: VoicePipeline;

  beforeAll(async () => {
    voice = await VoicePipeline.start({ DIAL_JOIN_TIMEOUT_SECONDS: '1' });
    await voice.number(RING, { ring_plan: { targets: [{ to: A }, { to: B }], fallback: { action: 'hangup' } } });
    await voice.number(OUTBOUND_FROM);
  });
  afterAll(async () => {
    await voice.stop();
  });

  async function ringing(): Promise<{ call: TestCall; callId: string }> {
    const call = await voice.incoming(CALLER, RING);
    return { call, callId: await voice.callId(call) };
  }

  const timeline = async (callId: string) => ((await voice.customer.get(`/v2/calls/${callId}/timeline`)).body.data as { event_type: string; outcome: string }[]).map((e) => `${e.event_type}:${e.outcome}`);

  it('answer-then-drop, its hangup delivered before its answer: the dead leg never wins; the next target does', async () => {
    const { call, callId } = await ringing();
    const leg0 = await voice.dial(callId);
    const t0 = Date.now();
    // Leg 0 answered at t0 and dropped at t0+1 s; Telnyx delivers the hangup first.
    await voice.legEvent(call, leg0, 'call.hangup', { hangup_cause: 'normal_clearing', sip_hangup_cause: '200' }, { occurredAt: at(t0, 1) });
    const leg1 = await voice.dial(callId, 2);
    await voice.legEvent(call, leg0, 'call.answered', {}, { occurredAt: at(t0, 0) });
    await voice.settled();
    expect(voice.telnyx.of('answer', (c) => c.controlId === call.caller)).toHaveLength(0);
    expect(voice.telnyx.of('bridge')).toHaveLength(0);
    expect((await voice.call(callId)).status).toBe('ringing');
    expect(await voice.events('call.answered', callId)).toBe(0);
    // the live target answers and wins
    await voice.legEvent(call, leg1, 'call.answered', {}, { occurredAt: at(t0, 5) });
    const bridge = await voice.telnyx.next((c) => c.action === 'bridge' && c.controlId === call.caller);
    expect(bridge.body.call_control_id).toBe(leg1.controlId);
    await voice.legEvent(call, leg1, 'call.bridged', {}, { occurredAt: at(t0, 6) });
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' }, { occurredAt: at(t0, 65) });
    await voice.settled();
    expect(await voice.call(callId)).toMatchObject({ status: 'completed', duration_seconds: 60, billable_minutes: 1 });
    expect(voice.telnyx.of('hangup', (c) => c.controlId === leg1.controlId).length).toBeGreaterThanOrEqual(1);
    expect(await voice.events('call.answered', callId)).toBe(1);
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(await timeline(callId)).toContain('call.answered:stale');
  });

  it('a leg written off by the join timeout never announces call.answered; the next winner announces it once', async () => {
    const { call, callId } = await ringing();
    const leg0 = await voice.dial(callId);
    await voice.legEvent(call, leg0, 'call.answered');
    const leg1 = await voice.dial(callId, 2);
    // leg 0's bridge report arrives only after the join timeout wrote it off: it joins nothing
    await voice.legEvent(call, leg0, 'call.bridged');
    await voice.legEvent(call, leg1, 'call.answered');
    await voice.legEvent(call, leg1, 'call.bridged');
    await voice.callerEvent(call, 'call.bridged');
    await voice.settled();
    expect((await voice.call(callId)).status).toBe('in_progress');
    expect(await voice.events('call.answered', callId)).toBe(1);
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' });
    await voice.settled();
    expect(await voice.events('call.answered', callId)).toBe(1);
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(await voice.events('call.missed', callId)).toBe(0);
  });

  it('a call answered whose join report comes after its end: call.answered once, then call.completed', async () => {
    const { call, callId } = await ringing();
    const leg0 = await voice.dial(callId);
    const t0 = Date.now();
    await voice.legEvent(call, leg0, 'call.answered', {}, { occurredAt: at(t0, 0) });
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' }, { occurredAt: at(t0, 10) });
    await voice.legEvent(call, leg0, 'call.bridged', {}, { occurredAt: at(t0, 1) });
    await voice.settled();
    expect(await voice.call(callId)).toMatchObject({ status: 'completed', billable_minutes: 1 });
    expect(await voice.events('call.answered', callId)).toBe(1);
    expect(await voice.events('call.completed', callId)).toBe(1);
    const order = await voice.db.pool.query(`SELECT type FROM outbound_events WHERE payload->>'id' = $1 ORDER BY created_at, id`, [callId]);
    expect(order.rows.map((r) => r.type)).toEqual(['call.initiated', 'call.answered', 'call.completed']);
  });

  it('a second physical leg of one try (a stray call_control_id): its answer is hung up and its hangup moves nothing', async () => {
    const { call, callId } = await ringing();
    const leg0 = await voice.dial(callId);
    await waitFor(() => voice.db.count(`SELECT count(*) FROM call_legs WHERE call_id = $1 AND control_id = $2`, [callId, leg0.controlId]), (n) => n === 1, { what: 'the dial answer named the leg' });
    const stray = { ...leg0, controlId: `v3:stray-${randomUUID()}` };
    await voice.legEvent(call, stray, 'call.answered');
    await voice.telnyx.next((c) => c.action === 'hangup' && c.controlId === stray.controlId);
    await voice.legEvent(call, stray, 'call.hangup', noAnswer);
    await voice.settled();
    expect(voice.telnyx.dials(callId)).toHaveLength(1);
    expect(await voice.call(callId)).toMatchObject({ status: 'ringing', legs: [expect.objectContaining({ status: 'dialing' })] });
    expect(voice.telnyx.of('answer', (c) => c.controlId === call.caller)).toHaveLength(0);
    // the real leg still works
    await voice.legEvent(call, leg0, 'call.hangup', noAnswer);
    expect((await voice.dial(callId, 2)).clientState).toMatchObject({ target: 1, attempt: 1 });
    expect((await timeline(callId)).filter((e) => e.endsWith(':stale'))).toHaveLength(2);
  });

  it('the caller leaves while a dial is in flight: the leg it creates is hung up, nothing else is dialed', async () => {
    voice.telnyx.holdNext('dial');
    const { call, callId } = await ringing();
    const leg0 = await voice.dial(callId);
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'originator_cancel' });
    await voice.callUntil(callId, (c) => c.status === 'missed', 'the call missed');
    voice.telnyx.releaseHeld();
    await voice.telnyx.next((c) => c.action === 'hangup' && c.controlId === leg0.controlId);
    await voice.settled();
    expect(voice.telnyx.dials(callId)).toHaveLength(1);
    expect(await voice.call(callId)).toMatchObject({ status: 'missed', legs: [expect.objectContaining({ status: 'ended', hangup_cause: 'call_ended' })] });
  });

  it('a dial queued before its call ended is not sent; a hangup is', async () => {
    const { call, callId } = await ringing();
    await voice.dial(callId);
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'originator_cancel' });
    await voice.settled();
    const transitions = voice.app.app.get(CallTransitions);
    const commands = voice.app.app.get(CallControlCommands);
    const { ended, leg } = await voice.app.app.get(UnitOfWork).run(async (tx) => ({
      ended: (await transitions.lockById(tx, callId))!,
      leg: (await transitions.addLeg(tx, callId, { target: 1, attempt: 1, to: B }))!,
    }));
    const hangupsBefore = voice.telnyx.of('hangup').length;
    await voice.app.app.get(CallControlCommandsHandler).handle({ callId, commands: [commands.dial(ended, leg, 20), commands.hangupCaller(call.caller, `${callId}-late`)] });
    expect(voice.telnyx.dials(callId)).toHaveLength(1);
    expect(voice.telnyx.of('hangup')).toHaveLength(hangupsBefore + 1);
  });

  it('nothing is resent once the carrier\'s command_id window is closing: the dial is written off and the plan moves on', async () => {
    voice.telnyx.answerNext('dial', { status: 503 });
    voice.telnyx.holdNext('dial');
    const { callId } = await ringing();
    const leg0 = await voice.dial(callId);
    // the first send went out 70 s ago as far as our record says (the process was stopped, say);
    // in the first 70 s of a day that is yesterday, which a database made today has no partition for
    await partitionHolding(voice.db.pool, 'call_command_sends', new Date(Date.now() - 75_000));
    await voice.db.pool.query(`UPDATE call_command_sends SET first_sent_at = now() - interval '70 seconds' WHERE command_id = $1`, [leg0.body.command_id]);
    voice.telnyx.releaseHeld();
    const next = await voice.dial(callId, 2);
    expect(next.clientState).toMatchObject({ target: 1 });
    expect(voice.telnyx.dials(callId).filter((d) => d.body.command_id === leg0.body.command_id)).toHaveLength(1);
  });

  it('a 429 with Retry-After is waited out and sent again under the same command id', async () => {
    voice.telnyx.answerNext('dial', { status: 429, headers: { 'retry-after': '1' } });
    const { callId } = await ringing();
    const again = await voice.dial(callId, 2);
    expect(again.body.command_id).toBe(voice.telnyx.dials(callId)[0].body.command_id);
    await voice.settled();
    expect(voice.telnyx.dials(callId)).toHaveLength(2);
    expect((await voice.call(callId)).legs).toHaveLength(1);
  });

  it('an outbound call whose dial the carrier refuses ends failed with call.failed, not missed', async () => {
    voice.telnyx.answerNext('dial', { status: 422, body: { errors: [{ code: '10015', title: 'Invalid destination', detail: 'to is not dialable' }] } });
    const placed = await voice.customer.post('/v2/calls', { from: OUTBOUND_FROM, to: '+15557790699' });
    expect(placed.status).toBe(202);
    const callId = placed.body.data.id;
    const ended = await voice.callUntil(callId, (c) => c.ended_at !== null, 'the call ended');
    await voice.settled();
    expect(ended).toMatchObject({ status: 'failed', billable_minutes: 0 });
    expect(await voice.events('call.failed', callId)).toBe(1);
    expect(await voice.events('call.missed', callId)).toBe(0);
    expect(await voice.usageRows(callId)).toBe(0);
  });
});
