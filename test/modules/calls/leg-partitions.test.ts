import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { partitionsRead, type StatementReads } from '../../support/partition-plans.js';
import { VoicePipeline } from '../../support/voice-pipeline.js';

const CALLER = '+15557780001';
const NUMBER = '+15550100801';
const PAST_DAYS = 5;

/**
 * call_legs is partitioned by its call's id time (onceline_id_time(call_id), migration 0055),
 * and a leg's own id carries the time it was dialed: every statement that finds a leg names its
 * call's id too, so it reads the one partition of the call's time. Proven on the app's own
 * statements over a whole call (dials, a hand-off to the next target, an answer, the bridge, the
 * hangups), each read as it runs (EXPLAIN ANALYZE, test/support/partition-plans.ts), with days of
 * partitions besides the call's.
 */
describe('call legs: every lookup of a leg reads its call\'s partition only', () => {
  let voice: VoicePipeline;

  beforeAll(async () => {
    voice = await VoicePipeline.start();
    await voice.number(NUMBER, { ring_plan: { targets: [{ to: '+15557780101', timeout_secs: 15 }, { to: '+15557780102' }], fallback: { action: 'hangup' } }, transcribe: false });
    for (let day = 1; day <= PAST_DAYS; day++) {
      await voice.db.pool.query(`SELECT onceline_add_partition('call_legs', date_trunc('day', now()) - make_interval(days => $1), date_trunc('day', now()) - make_interval(days => $1 - 1))`, [day]);
    }
  });
  afterAll(async () => {
    await voice.stop();
  });

  it('a call rung through two targets, answered, bridged and hung up: no statement reads another partition of call_legs', async () => {
    const call = await voice.incoming(CALLER, NUMBER);
    const callId = await voice.callId(call);
    const partitions = Number((await voice.db.pool.query(`SELECT count(*) FROM pg_inherits WHERE inhparent = 'call_legs'::regclass`)).rows[0].count);
    expect(partitions).toBeGreaterThanOrEqual(PAST_DAYS + 2);
    const { statements } = await partitionsRead(['call_legs'], async () => {
      const first = await voice.dial(callId);
      await voice.legEvent(call, first, 'call.initiated', { state: 'bridging' });
      await voice.legEvent(call, first, 'call.hangup', { hangup_cause: 'timeout', hangup_source: 'callee', sip_hangup_cause: '487' });
      const second = await voice.dial(callId, 2);
      await voice.legEvent(call, second, 'call.initiated', { state: 'bridging' });
      await voice.legEvent(call, second, 'call.answered');
      await voice.callUntil(callId, (c) => c.status === 'in_progress', 'the call in progress');
      await voice.legEvent(call, second, 'call.bridged');
      await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'caller', sip_hangup_cause: '200' });
      await voice.legEvent(call, second, 'call.hangup', { hangup_cause: 'normal_clearing', sip_hangup_cause: '200' });
      await voice.settled();
    });
    expect(await voice.call(callId)).toMatchObject({ status: 'completed' });
    const { rows } = await voice.db.pool.query(`SELECT DISTINCT tableoid::regclass::text AS part FROM call_legs WHERE call_id = $1`, [callId]);
    expect(rows).toHaveLength(1);
    const part = rows[0].part as string;
    const leg = (s: StatementReads) => ({ text: s.text, scanned: s.scanned.call_legs });
    // The partitions a lookup by the call's id may not prune: its own, and the neighbour its id's
    // window (onceline_id_window_start/end, 5 minutes either side) reaches into near midnight.
    const { rows: bounds } = await voice.db.pool.query<{ name: string; bound: string; start: Date; end: Date }>(
      `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound, onceline_id_window_start($1) AS start, onceline_id_window_end($1) AS end
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'call_legs'::regclass`,
      [callId],
    );
    const reachable = new Set(bounds.flatMap(({ name, bound, start, end }) => {
      const range = /FROM \('([^']+)'\) TO \('([^']+)'\)/.exec(bound);
      return range && new Date(range[1]) <= end && new Date(range[2]) > start ? [name] : [];
    }));
    expect(reachable.has(part)).toBe(true);
    // Each statement read the call's partition (near midnight, the neighbour too) or none (a join whose outer side found no row).
    expect(statements.map(leg).filter((s) => s.scanned.some((p) => !reachable.has(p)))).toEqual([]);
    // The paths of a call's life were all read: the legs' UPDATEs by id, the set statements' CTEs, the dial's guard.
    const seen = (pattern: RegExp) => statements.filter((s) => pattern.test(s.text) && s.scanned.call_legs.length > 0).length;
    const paths = {
      claimOrKeepControl: seen(/UPDATE call_legs (l )?SET control_id = /),
      ringing: seen(/call_legs_ringing AS/),
      handedOff: seen(/call_legs_handed_off AS/),
      answered: seen(/call_legs_answered AS|UPDATE call_legs SET status = 'answered'/),
      lockedLegs: seen(/call_legs_decided AS|FOR UPDATE OF c FOR NO KEY UPDATE OF l/),
      // The call's end, in a transaction or decided in sets (CallEndsInSets: the caller's hangup ends it, the answered leg's after it is a repeat).
      ended: seen(/UPDATE call_legs SET status = \$4|call_legs_ended_after_call AS/),
      closed: seen(/UPDATE call_legs SET status = CASE WHEN control_id IS NULL|call_legs_of_ended AS/),
      legsOfCall: seen(/FROM call_legs WHERE call_id = (\$1|ANY)/),
      dialWanted: seen(/FROM call_legs l JOIN calls c ON c\.id = l\.call_id WHERE l\.id = w\.leg_id/),
      joinWanted: seen(/FROM calls c JOIN call_legs l ON l\.id = c\.answered_leg/),
    };
    expect(Object.entries(paths).filter(([, n]) => n === 0)).toEqual([]);
  }, 60_000);
});
