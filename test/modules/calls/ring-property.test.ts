import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import type { ReceivedCommand } from '../../support/fake-call-control.js';
import { VoicePipeline, type TestCall } from '../../support/voice-pipeline.js';

const CALLER = '+15557790901';
const RING = '+15550400001';
const TARGETS = ['+15557791001', '+15557791002', '+15557791003'];

/** What a dialed target does, as the carrier reports it. */
const FATES = ['no_answer', 'decline', 'sip_503', 'answer_then_drop', 'answer'] as const;
type Fate = (typeof FATES)[number];

/** The events the carrier sends for a leg with `fate`, in the order they happened. */
function eventsOf(fate: Fate): [string, Record<string, unknown>][] {
  const initiated: [string, Record<string, unknown>] = ['call.initiated', { state: 'bridging' }];
  switch (fate) {
    case 'no_answer': return [initiated, ['call.hangup', { hangup_cause: 'timeout', sip_hangup_cause: '487' }]];
    case 'decline': return [initiated, ['call.hangup', { hangup_cause: 'call_rejected', sip_hangup_cause: '603' }]];
    case 'sip_503': return [initiated, ['call.hangup', { hangup_cause: 'unspecified', sip_hangup_cause: '503' }]];
    case 'answer_then_drop': return [initiated, ['call.answered', {}], ['call.hangup', { hangup_cause: 'normal_clearing', sip_hangup_cause: '200' }]];
    case 'answer': return [initiated, ['call.answered', {}], ['call.bridged', {}]];
  }
}

/**
 * The ring policy end to end, as a property: whatever each target does, and in whatever order
 * and repetition the carrier delivers its events (each may come twice, late, or at the same
 * moment as others), no dead leg wins, no target try is dialed twice, a call is announced
 * answered at most once and ended exactly once, and every invariant `verify` checks holds.
 */
describe('ring policy under any delivery order (property, through the real handlers)', () => {
  let voice: VoicePipeline;

  beforeAll(async () => {
    voice = await VoicePipeline.start({ DIAL_JOIN_TIMEOUT_SECONDS: '60' });
    await voice.number(RING, { ring_plan: { targets: TARGETS.map((to) => ({ to })), fallback: { action: 'hangup' } } });
  });
  afterAll(async () => {
    await voice.stop();
  });

  it('no dead leg wins, no try is dialed twice, one call.answered at most and one end per call', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...FATES), { minLength: 6, maxLength: 6 }),
        fc.array(fc.nat(), { minLength: 40, maxLength: 40 }),
        fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
        async (fates, picks, twice) => {
          const call = await voice.incoming(CALLER, RING);
          const callId = await voice.callId(call);
          let pick = 0;
          const next = () => picks[pick++ % picks.length];
          const pool: (() => Promise<number>)[] = [];
          const seen = new Set<string>();
          for (let round = 0; round < 30; round++) {
            // Every dial that reached the carrier gets its leg's events, some of them twice.
            for (const dial of voice.telnyx.dials(callId)) {
              const key = dial.body.command_id as string;
              if (seen.has(key)) continue;
              seen.add(key);
              const fate = fates[(dial.clientState!.target * 2 + dial.clientState!.attempt - 1) % fates.length];
              // The carrier stamps each event when it happens (in eventsOf order); only delivery is reordered.
              const happenedAt = Date.now();
              for (const [index, [type, extra]] of eventsOf(fate).entries()) {
                const occurredAt = new Date(happenedAt + index * 10).toISOString();
                const deliver = () => voice.legEvent(call, dial as ReceivedCommand, type, extra, { occurredAt });
                pool.push(deliver);
                if (twice[pool.length % twice.length]) pool.push(deliver);
              }
            }
            if (pool.length === 0) {
              await voice.settled();
              if (voice.telnyx.dials(callId).every((d) => seen.has(d.body.command_id))) break;
              continue;
            }
            // Deliver one to three of them at once, picked in any order.
            const batch = Array.from({ length: Math.min(pool.length, 1 + (next() % 3)) }, () => pool.splice(next() % pool.length, 1)[0]);
            for (const status of await Promise.all(batch.map((deliver) => deliver()))) expect(status).toBe(200);
          }
          await voice.callerEvent(call as TestCall, 'call.hangup', { hangup_cause: 'normal_clearing' });
          await voice.settled();

          const ended = await voice.call(callId);
          expect(ended.ended_at).not.toBeNull();
          const answered = await voice.events('call.answered', callId);
          const ends = await voice.db.count(`SELECT count(*) FROM outbound_events WHERE type IN ('call.completed', 'call.missed', 'call.failed') AND payload->>'id' = $1`, [callId]);
          expect(answered).toBeLessThanOrEqual(1);
          expect(ends).toBe(1);
          if (answered === 1) expect(ended.status).toBe('completed');
          // No try dialed twice: one command id per (target, attempt), and never more than the plan allows.
          const tries = new Map<string, Set<string>>();
          for (const d of voice.telnyx.dials(callId)) {
            const key = `${d.clientState!.target}/${d.clientState!.attempt}`;
            tries.set(key, (tries.get(key) ?? new Set()).add(d.body.command_id));
          }
          for (const ids of tries.values()) expect(ids.size).toBe(1);
          // No dead leg wins: the winner's answer was handled before any report of its end.
          const winner = (await voice.db.pool.query(`SELECT answered_leg FROM calls WHERE id = $1`, [callId])).rows[0].answered_leg;
          if (winner) {
            const { rows } = await voice.db.pool.query(
              `SELECT event_type, outcome FROM call_timeline WHERE call_id = $1 AND leg = $2 AND event_type IN ('call.answered', 'call.hangup') ORDER BY id`,
              [callId, winner],
            );
            expect(rows[0]).toEqual({ event_type: 'call.answered', outcome: 'applied' });
          }
          const report = await voice.app.app.get(VerifyService).run({ limit: 5 });
          expect(report.invariants.filter((i) => !i.ok)).toEqual([]);
        },
      ),
      { numRuns: 12 },
    );
  }, 240_000);
});
