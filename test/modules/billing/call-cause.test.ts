import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { telnyxEvent } from '../../support/carrier-signing.js';
import { VoicePipeline } from '../../support/voice-pipeline.js';

const OURS = '+15550460001';

/** A call's charge names the hangup that ended it: the one whose guarded end won, however its copies arrived. */
describe('the cause of a call\'s charge', () => {
  let voice: VoicePipeline;

  beforeAll(async () => {
    voice = await VoicePipeline.start();
    await voice.number(OURS);
  });
  afterAll(async () => {
    await voice.stop();
  });

  it('after a duplicated, reordered hangup: one usage row, naming the hangup that won, its minutes counted from the envelopes\' occurred_at', async () => {
    const session = randomUUID();
    const leg = `v3:sip-${randomUUID()}`;
    const event = (type: string, extra: object, options: { id?: string; occurredAt: string }) =>
      voice.deliver(telnyxEvent(type, { call_control_id: leg, call_session_id: session, call_leg_id: randomUUID(), client_state: null, from: OURS, to: '+15557790460', direction: 'outgoing', ...extra }, options));
    const t0 = Date.parse('2026-11-03T10:15:00.000Z');
    const at = (seconds: number) => new Date(t0 + seconds * 1000).toISOString();
    expect(await event('call.initiated', { state: 'bridging' }, { occurredAt: at(-5) })).toBe(200);
    const callId = await voice.callId({ session, caller: leg, from: OURS, to: '' });
    expect(await event('call.answered', {}, { occurredAt: at(0) })).toBe(200);
    await voice.settled();

    // The carrier's later copy (its own event id) arrives first and ends the call; then the earlier
    // one, re-signed under another id; then the first again, redelivered as it was.
    const [winner, loser] = [randomUUID(), randomUUID()];
    expect(await event('call.hangup', { hangup_cause: 'normal_clearing' }, { id: winner, occurredAt: at(125) })).toBe(200);
    await voice.settled();
    expect(await event('call.hangup', { hangup_cause: 'normal_clearing' }, { id: loser, occurredAt: at(121) })).toBe(200);
    expect(await event('call.hangup', { hangup_cause: 'normal_clearing' }, { id: winner, occurredAt: at(125) })).toBe(200);
    await voice.settled();

    expect(await voice.usageRows(callId)).toBe(1);
    const cev = async (carrierEventId: string) => (await voice.db.pool.query(`SELECT id FROM carrier_events WHERE carrier_event_id = $1`, [carrierEventId])).rows.map((r) => r.id as string);
    const [winnerCev] = await cev(winner);
    expect(await cev(winner)).toHaveLength(1);
    const timeline = (await voice.customer.get(`/v2/calls/${callId}/timeline`)).body.data;
    const hangups = timeline.filter((e: { event_type: string }) => e.event_type === 'call.hangup');
    expect(hangups.map((e: { carrier_event_id: string; outcome: string }) => [e.carrier_event_id, e.outcome])).toEqual([[winnerCev, 'applied'], [(await cev(loser))[0], 'duplicate']]);

    const list = (await voice.customer.get('/v2/usage/records?include=causes')).body.data.filter((r: { resource_id: string }) => r.resource_id === callId);
    expect(list).toHaveLength(1);
    const record = (await voice.customer.get(`/v2/usage/records/${list[0].id}`)).body.data;
    expect(record).toMatchObject({ kind: 'call_minutes', quantity: 3 });
    expect(record.cause).toEqual({
      resource: { type: 'call', id: callId },
      transition: 'in_progress → completed',
      settled_by: null,
      carrier: 'telnyx',
      carrier_resource_id: session,
      carrier_events: [{ id: winnerCev, carrier_event_id: winner, role: 'hangup', occurred_at: at(125) }],
      price_rule: {
        unit: 'minute', unit_price_micros: record.unit_price_micros, quantity: 3, answered_at: at(0), ended_at: at(125), duration_seconds: 125,
        duration_source: 'answered_at_to_ended_at', counted: 'ceil(duration_seconds / 60), at least 1',
      },
      draw_downs: [],
      legacy: false,
    });
  });
});
