import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { IdPrefix, newId } from '../../platform/ids.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import type { CteStatement } from '../../platform/database/cte-statement.js';
import { createdAtOfId, createdAtOfIds } from '../../platform/retention/id-partition-key.js';
import type { CarrierName } from '../../carriers/carrier-name.js';
import type { RingPlanState } from '../sequential-ring/ring-plan.js';
import { CALL_COLUMNS, LEG_COLUMNS, LEG_ORDER, LEG_VIEW_JSON, type CallDirection, type CallRow, type CallStatus, type LegRow } from './call-view.js';

/**
 * The SET list of the hangup guard's UPDATE of call `c` (CallTransitions.end, and the set
 * statement's, CallEndsInSets), each value SQL: `at` (timestamptz) the hangup's carrier time,
 * `cause` its cause, `reportedSeconds` (int, NULL: none) the carrier's own duration, `failed`
 * (boolean) a refused dial of a call we placed. SET reads the row before the change.
 */
export function endSetSql(c: string, { at, cause, reportedSeconds, failed }: { at: string; cause: string; reportedSeconds: string; failed: string }): string {
  const answered = `(${c}.answered_at IS NOT NULL OR coalesce(${reportedSeconds}, 0) > 0)`;
  // Whole seconds from the answer to the hangup, both carrier times.
  const seconds = `coalesce(${reportedSeconds}, CASE WHEN ${c}.answered_at IS NULL THEN 0 ELSE greatest(0, round(extract(epoch FROM ${at} - ${c}.answered_at)))::int END)`;
  // failed: a call our side placed whose dial the carrier refused ends failed, not missed.
  return `status = CASE WHEN ${c}.status = 'in_progress' OR (${c}.status = 'ringing' AND ${answered}) THEN 'completed' WHEN ${c}.status = 'ringing' AND ${failed} THEN 'failed' WHEN ${c}.status = 'ringing' THEN 'missed' ELSE ${c}.status END,
              ended_at = ${at}, hangup_cause = ${cause}, updated_at = now(),
              answered_at = coalesce(${c}.answered_at, CASE WHEN ${reportedSeconds} > 0 THEN ${at} - make_interval(secs => ${reportedSeconds}) END),
              duration_seconds = CASE WHEN ${answered} THEN ${seconds} ELSE 0 END,
              billable_minutes = CASE WHEN ${answered} THEN greatest(1, ceil(${seconds} / 60.0))::int ELSE 0 END`;
}

export interface NewCall {
  accountId: string;
  direction: CallDirection;
  from: string;
  to: string;
  carrier: CarrierName;
  /** The carrier's call (session) id; for a call we place ourselves, unknown until it answers the dial. */
  carrierCallId?: string;
  callerControlId?: string;
  ringPlan?: RingPlanState;
  transcribe: boolean;
  status: Extract<CallStatus, 'ringing' | 'missed'>;
  /** For a call that is over as it starts (a number without voice settings). */
  endedAt?: string;
  hangupCause?: string;
}

/** Which leg of a call an event came from, under the call row's lock. */
export interface LockedCall {
  call: CallRow;
  /** The leg we dialed, when the event carried our client_state; undefined for the caller's leg. */
  leg?: LegRow;
}

/**
 * Every change of a call and its legs. Each is one statement whose WHERE clause is the guard;
 * the handlers that call these hold the call row's lock (lockBy*), so what they decide from is
 * what the guard sees. They change rows and return what changed; deciding, billing and announcing
 * are CallFlow's, in the same transaction.
 */
/**
 * A call by its id ($1) in the one partition (two near a boundary) that can hold it: calls'
 * created_at is its id's time (migration 0055), so the lookup names the partition key.
 */
const CALL_BY_ID = `id = $1 AND ${createdAtOfId('$1')}`;

/** A leg by its id and its call's (LegRow is one): what a leg UPDATE needs to find it in one partition. */
export type LegKey = Pick<LegRow, 'id' | 'call_id'>;

/**
 * A leg by its id ($1) and its call's (`callId`, SQL text), in the one partition (two near a
 * boundary) that can hold it: call_legs is partitioned by onceline_id_time(call_id) (migration
 * 0055), and a leg's id carries the dial's time, not its call's, so the call id names the key.
 */
const legById = (callId: string) => `id = $1 AND call_id = ${callId} AND ${createdAtOfId(callId, 'onceline_id_time(call_id)')}`;

/** The legs of a call `callId` (SQL text: a value, or a column of the row a leg is joined to), by the partition key. */
const legsOfCall = (callId: string, legs = 'l') => `${legs}.call_id = ${callId} AND ${createdAtOfId(callId, `onceline_id_time(${legs}.call_id)`)}`;

const columnsOf = (list: string) => list.split(',').map((column) => column.trim());
const LEG_COLUMN_NAMES = columnsOf(LEG_COLUMNS);
/** A call's columns and its leg's in one row: the call's as they are, the leg's prefixed `leg_`. */
export const CALL_COLUMNS_OF_C = columnsOf(CALL_COLUMNS).map((column) => `c.${column}`).join(', ');
const LEG_COLUMNS_AS_PREFIXED = LEG_COLUMN_NAMES.map((column) => `l.${column} AS leg_${column}`).join(', ');

function splitCallAndLeg(row: CallRow & Record<string, unknown>): { call: CallRow; leg: LegRow } {
  const call = { ...row };
  const leg: Record<string, unknown> = {};
  for (const column of LEG_COLUMN_NAMES) {
    leg[column] = row[`leg_${column}`];
    delete (call as Record<string, unknown>)[`leg_${column}`];
  }
  return { call, leg: leg as unknown as LegRow };
}

/**
 * The answer race's guard on call `c` for leg `l` (its target_index, attempt): no ring plan, or
 * the plan rings and its cursor names exactly this target and try.
 */
export function onCursor(c: string, l: string): string {
  return `(${c}.ring_plan IS NULL
               OR (${c}.ring_plan->>'phase' IN ('targets', 'forward')
                   AND (${c}.ring_plan->>'next')::int = ${l}.target_index + 1
                   AND (${c}.ring_plan->>'attempt')::int = ${l}.attempt))`;
}

@Injectable()
export class CallTransitions {
  constructor(private readonly dataSource: DataSource) {}

  /** A new call, once per carrier call however often its first event comes; undefined when it exists. */
  async create(tx: Tx, call: NewCall): Promise<CallRow | undefined> {
    const id = newId(IdPrefix.Call);
    // WHERE call_twin(carrier, carrier_call_id) IS NULL: a duplicate or re-signed call.initiated
    // inserts nothing, whichever time partition holds the call (migration 0055). created_at is the
    // id's time: the partition key, found again from the id alone (createdAtOfId).
    const { rows } = await exec<CallRow>(
      tx,
      `INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, caller_control_id, ring_plan, transcribe, ended_at, hangup_cause,
                          duration_seconds, billable_minutes, created_at)
       SELECT $1, $2, $3, $4, $5, $6, $7, coalesce($8, $1), $9, $10::jsonb, $11, $12::timestamptz, $13,
              CASE WHEN $12::timestamptz IS NULL THEN NULL ELSE 0 END, CASE WHEN $12::timestamptz IS NULL THEN NULL ELSE 0 END, onceline_id_time($1)
        WHERE call_twin($7, coalesce($8, $1)) IS NULL
       ON CONFLICT DO NOTHING
       RETURNING ${CALL_COLUMNS}`,
      [id, call.accountId, call.direction, call.from, call.to, call.status, call.carrier, call.carrierCallId ?? null, call.callerControlId ?? null,
        call.ringPlan ? JSON.stringify(call.ringPlan) : null, call.transcribe, call.endedAt ?? null, call.hangupCause ?? null],
    );
    return rows[0];
  }

  /** The call a carrier session names, locked for this transaction; undefined when not recorded (yet). */
  async lockBySession(tx: Tx, carrier: CarrierName, carrierCallId: string): Promise<CallRow | undefined> {
    const { rows } = await exec<CallRow>(tx, `SELECT ${CALL_COLUMNS} FROM calls WHERE carrier = $1 AND carrier_call_id = $2 FOR UPDATE`, [carrier, carrierCallId]);
    return rows[0];
  }

  /**
   * The call and the leg our client_state names, both locked (call first, then leg: the order in
   * which every call transaction takes them; one that locks a leg alone never waits for its call
   * after); undefined when no such leg of ours exists. One statement: a row it had to wait for is
   * locked and returned at its latest version (READ COMMITTED re-reads a locked row after the
   * wait), so both rows are as their last holder committed. The leg is locked too for that
   * reason: a row only joined, not locked, would come from the snapshot taken before the wait.
   */
  async lockByLeg(tx: Tx, carrier: CarrierName, leg: { callId: string; target: number; attempt: number }): Promise<LockedCall | undefined> {
    const { rows } = await exec<CallRow & Record<string, unknown>>(
      tx,
      `SELECT ${CALL_COLUMNS_OF_C}, ${LEG_COLUMNS_AS_PREFIXED}
         FROM calls c JOIN call_legs l ON l.call_id = c.id AND ${createdAtOfId('$1', 'onceline_id_time(l.call_id)')} AND l.target_index = $3 AND l.attempt = $4
        WHERE c.id = $1 AND c.carrier = $2
          FOR UPDATE OF c FOR NO KEY UPDATE OF l`,
      [leg.callId, carrier, leg.target, leg.attempt],
    );
    return rows[0] && splitCallAndLeg(rows[0]);
  }

  /**
   * lockByLeg for a set of leg events, as a CTE of `stmt`: for each row of `input` (call_id,
   * carrier, call_session_id, target_index, attempt, control_id, kind, occurred_at) whose call's
   * turn `turns` holds (event_id, received_at), its call and leg, locked as lockByLeg locks them
   * (call, then leg), where `decides` (SQL over the call `c`, the leg `l` and the input row `i`)
   * holds on both rows at their latest version: READ COMMITTED re-reads a row this statement
   * waited to lock and evaluates the WHERE again on it, so the decision is the one the guards
   * see. A call whose session is not the event's is not this event's (CallCarrierEvents.locate).
   * One row per event decided: event_id, call_id, leg_id, control_id, kind, occurred_at, received_at,
   * and `columns` (SQL over the same rows, as the lock left them). `callIds`: the calls the input names.
   */
  lockedLegsCte(stmt: CteStatement, name: string, input: string, turns: string, decides: string, callIds: string[], columns = ''): string {
    // c.id = ANY: the calls by their key, whatever the planner makes of the recordset. The legs'
    // partition key within the span of those calls' times: the legs' partitions of those calls only.
    const ids = stmt.param(callIds, 'text[]');
    return stmt.with(
      name,
      `SELECT i.event_id, c.id AS call_id, l.id AS leg_id, i.control_id, i.kind, i.occurred_at, t.received_at${columns && `, ${columns}`}
         FROM ${input} i JOIN ${turns} t ON t.event_id = i.event_id
         JOIN calls c ON c.id = i.call_id AND c.carrier = i.carrier AND c.carrier_call_id = i.call_session_id
         JOIN call_legs l ON l.call_id = c.id AND ${createdAtOfIds(ids, 'onceline_id_time(l.call_id)')} AND l.target_index = i.target_index AND l.attempt = i.attempt
        WHERE c.id = ANY (${ids}) AND (${decides})
          FOR UPDATE OF c FOR NO KEY UPDATE OF l`,
      { materialized: true },
    );
  }

  /**
   * claimLegControl and legRinging for the legs of CTE `legs` (lockedLegsCte) whose event is in
   * `consumed`, in one statement: the leg keeps the first physical leg named and, still dialing,
   * rings. WHERE: the leg is not over and names no physical leg or this one (the guard
   * claimLegControl's caller reads), and there is something to change.
   */
  legsRingingCte(stmt: CteStatement, legs: string, consumed: string): string {
    return stmt.with(
      'call_legs_ringing',
      `UPDATE call_legs l SET control_id = coalesce(l.control_id, r.control_id), status = CASE WHEN l.status = 'dialing' THEN 'ringing' ELSE l.status END
         FROM ${legs} r JOIN ${consumed} k ON k.consumed_event_id = r.event_id
        WHERE l.id = r.leg_id AND ${legsOfCall('r.call_id')} AND l.ended_at IS NULL AND (l.control_id IS NULL OR l.control_id = r.control_id) AND (l.control_id IS NULL OR l.status = 'dialing')
       RETURNING l.id`,
    );
  }

  /**
   * The calls `callIds` as they are now, unlocked: what a set statement decides a ring step from
   * in JS before it runs (CallEventSets.legHangups). A hint only: that statement's guards (the
   * cursor's compare-and-set above all) check it again under the row locks.
   */
  async callsNow(callIds: string[]): Promise<Map<string, CallRow>> {
    const { rows } = await exec<CallRow>(
      this.dataSource.manager,
      `SELECT ${CALL_COLUMNS} FROM calls WHERE id = ANY ($1::text[]) AND ${createdAtOfIds('$1::text[]')}`,
      [callIds],
    );
    return new Map(rows.map((call) => [call.id, call]));
  }

  /**
   * answerByLeg for the answers of CTE `answers` (call_id, leg_id, control_id, occurred_at), in
   * one statement: the leg, live (ended_at IS NULL) and named by this physical leg or none, is
   * answered; then its call, still ringing and not ended, with the plan's cursor on this leg's
   * target and try (answerByLeg's WHERE), takes it as its winner. Returns the CTE of the winners
   * (call_id, leg_id, and the caller's leg, transcription and the leg's physical leg its join needs).
   */
  answersCte(stmt: CteStatement, answers: string): string {
    const legs = stmt.with(
      'call_legs_answered',
      `UPDATE call_legs l SET status = 'answered', answered_at = coalesce(l.answered_at, a.occurred_at), control_id = coalesce(l.control_id, a.control_id)
         FROM ${answers} a
        WHERE l.id = a.leg_id AND ${legsOfCall('a.call_id')} AND l.ended_at IS NULL AND (l.control_id IS NULL OR l.control_id = a.control_id)
       RETURNING l.id, l.target_index, l.attempt`,
    );
    return stmt.with(
      'calls_answered',
      `UPDATE calls c SET status = 'in_progress', answered_leg = a.leg_id, answered_at = a.occurred_at, updated_at = now()
         FROM ${answers} a JOIN ${legs} w ON w.id = a.leg_id
        WHERE c.id = a.call_id AND c.status = 'ringing' AND c.ended_at IS NULL AND ${onCursor('c', 'w')}
       RETURNING c.id AS call_id, a.leg_id, c.caller_control_id, c.transcribe, a.control_id`,
    );
  }

  /**
   * endLeg, claimRingTurn and addLeg for the hand-offs of CTE `handOffs` (call_id, leg_id,
   * control_id, occurred_at, hangup_cause, expected_plan, next_plan, and for a dial new_leg_id,
   * new_target, new_attempt, new_to), in one statement, each gated on the one before for its call:
   * the leg ends once (ended_at IS NULL, by the physical leg kept for its try, claimLegControl's
   * guard); the cursor moves by its compare-and-set (ring_plan = expected_plan on a call still
   * ringing, claimRingTurn's WHERE); then the next try's leg, once (UNIQUE (call_id, target_index,
   * attempt), its call's partition's own index, as addLeg). Returns the CTEs of the calls whose
   * cursor moved (call_id) and of the legs added (id).
   */
  handOffsCte(stmt: CteStatement, handOffs: string): { turned: string; dialed: string } {
    const ended = stmt.with(
      'call_legs_handed_off',
      `UPDATE call_legs l SET status = 'ended', ended_at = h.occurred_at, hangup_cause = h.hangup_cause, control_id = coalesce(l.control_id, h.control_id)
         FROM ${handOffs} h
        WHERE l.id = h.leg_id AND ${legsOfCall('h.call_id')} AND l.ended_at IS NULL AND (l.control_id IS NULL OR l.control_id = h.control_id)
       RETURNING l.id`,
    );
    const turned = stmt.with(
      'calls_ring_turned',
      `UPDATE calls c SET ring_plan = h.next_plan, updated_at = now()
         FROM ${handOffs} h JOIN ${ended} e ON e.id = h.leg_id
        WHERE c.id = h.call_id AND c.status = 'ringing' AND c.ended_at IS NULL AND c.ring_plan = h.expected_plan
       RETURNING c.id AS call_id`,
    );
    const dialed = stmt.with(
      'call_legs_dialed',
      `INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status)
       SELECT h.new_leg_id, h.call_id, h.new_target, h.new_attempt, h.new_to, 'dialing' FROM ${handOffs} h JOIN ${turned} t ON t.call_id = h.call_id
        WHERE h.new_leg_id IS NOT NULL
       ON CONFLICT DO NOTHING RETURNING id`,
    );
    return { turned, dialed };
  }

  async lockById(tx: Tx, callId: string): Promise<CallRow | undefined> {
    const { rows } = await exec<CallRow>(tx, `SELECT ${CALL_COLUMNS} FROM calls WHERE ${CALL_BY_ID} FOR UPDATE`, [callId]);
    return rows[0];
  }

  /** A call we placed learns the carrier's name for it (the first leg event or the dial's answer says it). */
  async nameSession(tx: Tx, callId: string, carrierCallId: string): Promise<void> {
    // carrier_call_id = id: only the placeholder is replaced, never a session already named; and
    // call_twin: never to a session another call already has (one call per carrier call, 0055).
    await exec(tx, `UPDATE calls SET carrier_call_id = $2 WHERE ${CALL_BY_ID} AND carrier_call_id = id AND call_twin(carrier, $2) IS NULL`, [callId, carrierCallId]);
  }

  /** Records the dial of one target try; undefined when that try was already dialed. */
  async addLeg(tx: Tx, callId: string, leg: { target: number; attempt: number; to: string }): Promise<LegRow | undefined> {
    // UNIQUE (call_id, target_index, attempt): one leg per try, however often the decision replays.
    // Each partition's own index, and whole: a call's legs are all in its partition (keyed by
    // onceline_id_time(call_id), migration 0055). The leg's id is new, so the key is the only conflict.
    const { rows } = await exec<LegRow>(
      tx,
      `INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status) VALUES ($1, $2, $3, $4, $5, 'dialing')
       ON CONFLICT DO NOTHING RETURNING ${LEG_COLUMNS}`,
      [newId(IdPrefix.CallLeg), callId, leg.target, leg.attempt, leg.to],
    );
    return rows[0];
  }

  /**
   * The carrier's id of a leg, from its first event or the dial's answer: the first one named is
   * kept. `ours` is false when the leg already has another id (a second physical leg of the same
   * try, or a stray event): that one must be hung up and change nothing. `over`: the leg had
   * ended (written off, or its call ended before the dial was answered), so a leg the carrier
   * says is up must be hung up. Read from the row this statement locked and changed.
   */
  async claimLegControl(tx: Tx, leg: LegKey, controlId: string): Promise<{ ours: boolean; over: boolean }> {
    const { rows } = await exec<{ ours: boolean; over: boolean }>(
      tx,
      `UPDATE call_legs SET control_id = coalesce(control_id, $2) WHERE ${legById('$3')}
       RETURNING control_id = $2 AS ours, ended_at IS NOT NULL AS over`,
      [leg.id, controlId, leg.call_id],
    );
    return rows[0] ?? { ours: false, over: true };
  }

  /**
   * claimLegControl for a leg this transaction holds locked (lockByLeg returned it at its latest
   * version, and nothing in this transaction has changed it since): a leg that already names its
   * physical leg cannot change while the lock is held, so the answer is read off the locked row and
   * no statement is sent; only a leg not named yet takes the UPDATE. Most leg events (a hangup, an
   * answer) come after the dial's answer named the leg: one round trip less on the hand-off.
   */
  async claimLockedLegControl(tx: Tx, leg: LegRow, controlId: string): Promise<{ ours: boolean; over: boolean }> {
    if (leg.control_id !== null) return { ours: leg.control_id === controlId, over: leg.ended_at !== null };
    return this.claimLegControl(tx, leg, controlId);
  }

  /** dialing → ringing (the carrier reports the leg up); an answered or ended leg is left alone. */
  async legRinging(tx: Tx, leg: LegKey): Promise<boolean> {
    const { affected } = await exec(tx, `UPDATE call_legs SET status = 'ringing' WHERE ${legById('$2')} AND status = 'dialing'`, [leg.id, leg.call_id]);
    return affected === 1;
  }

  /** The leg is over (hung up, refused, written off); guarded by ended_at IS NULL, so only the first word counts. */
  async endLeg(tx: Tx, leg: LegKey, at: string, cause: string, status: 'ended' | 'failed' = 'ended'): Promise<boolean> {
    const { affected } = await exec(
      tx,
      `UPDATE call_legs SET status = $4, ended_at = $2, hangup_cause = $3 WHERE ${legById('$5')} AND ended_at IS NULL`,
      [leg.id, at, cause, status, leg.call_id],
    );
    return affected === 1;
  }

  /**
   * A dial the carrier never reported a leg for (refused, or never answered) is written off:
   * ended_at IS NULL AND control_id IS NULL, so a leg the carrier did create and tell us about
   * (its call.initiated, or the dial's answer, named it) rings on and ends by its own hangup.
   */
  async writeOffUnreportedLeg(tx: Tx, leg: LegKey, at: string, cause: string): Promise<LegRow | undefined> {
    const { rows } = await exec<LegRow>(
      tx,
      `UPDATE call_legs SET status = 'failed', ended_at = $2, hangup_cause = $3 WHERE ${legById('$4')} AND ended_at IS NULL AND control_id IS NULL RETURNING ${LEG_COLUMNS}`,
      [leg.id, at, cause, leg.call_id],
    );
    return rows[0];
  }

  /**
   * The call ended: every leg not ended yet is locked by this one statement; those the carrier
   * has not named yet (a dial in flight) are ended here, so the dial's answer or the leg's first
   * event finds it over and hangs it up; those it named are returned, to be hung up now.
   */
  async closeLegsOfEndedCall(tx: Tx, callId: string, at: string): Promise<(LegRow & { control_id: string })[]> {
    const { rows } = await exec<LegRow>(
      tx,
      `UPDATE call_legs SET status = CASE WHEN control_id IS NULL THEN 'ended' ELSE status END,
              ended_at = CASE WHEN control_id IS NULL THEN $2::timestamptz END,
              hangup_cause = CASE WHEN control_id IS NULL THEN 'call_ended' END
        WHERE call_id = $1 AND ${createdAtOfId('$1', 'onceline_id_time(call_id)')} AND ended_at IS NULL
       RETURNING ${LEG_COLUMNS}`,
      [callId, at],
    );
    return rows.filter((leg): leg is LegRow & { control_id: string } => leg.control_id !== null);
  }

  async legs(tx: Tx, callId: string): Promise<LegRow[]> {
    const { rows } = await exec<LegRow>(tx, `SELECT ${LEG_COLUMNS} FROM call_legs WHERE call_id = $1 AND ${createdAtOfId('$1', 'onceline_id_time(call_id)')} ORDER BY ${LEG_ORDER}`, [callId]);
    return rows;
  }

  /** legs as the customer events show them, a jsonb array (SQL, for a fragment of `stmt`): read by the statement that writes the event. */
  legsViewSql(stmt: CteStatement, callId: string): string {
    const id = stmt.param(callId, 'text');
    return `(SELECT coalesce(jsonb_agg(${LEG_VIEW_JSON} ORDER BY ${LEG_ORDER}), '[]'::jsonb) FROM call_legs WHERE call_id = ${id} AND ${createdAtOfId(id, 'onceline_id_time(call_id)')})`;
  }

  /**
   * The ring cursor's compare-and-set (the guard rule, docs/exactly-once.md): moves the plan from `expected` to `next` only if
   * the call still rings and its plan is exactly `expected`. A duplicate or late hangup, an
   * answer, or the caller leaving got there first when it returns false: walk away.
   */
  async claimRingTurn(tx: Tx, callId: string, expected: RingPlanState, next: RingPlanState): Promise<boolean> {
    const { affected } = await exec(
      tx,
      `UPDATE calls SET ring_plan = $3::jsonb, updated_at = now()
        WHERE ${CALL_BY_ID} AND status = 'ringing' AND ended_at IS NULL AND ring_plan = $2::jsonb`,
      [callId, JSON.stringify(expected), JSON.stringify(next)],
    );
    return affected === 1;
  }

  /**
   * The answer race: ringing → in_progress for the first leg that answers while it is live and
   * the plan's current try; undefined for every other. The leg's own row is marked answered and
   * locked by the same statement (ended_at IS NULL: a leg that hung up, was written off, or whose
   * call ended cannot answer), so a hangup of that leg committed first wins, and one waiting on
   * it sees the answer. The call's guard: still ringing, not ended, and (with a ring plan) the
   * plan's cursor names exactly this target and try.
   */
  async answerByLeg(tx: Tx, callId: string, legId: string, at: string): Promise<CallRow | undefined> {
    const { rows } = await exec<CallRow>(
      tx,
      `WITH live_leg AS (
         UPDATE call_legs SET status = 'answered', answered_at = coalesce(answered_at, $3::timestamptz)
          WHERE id = $2 AND call_id = $1 AND ${createdAtOfId('$1', 'onceline_id_time(call_id)')} AND ended_at IS NULL
          RETURNING target_index, attempt)
       UPDATE calls SET status = 'in_progress', answered_leg = $2, answered_at = $3, updated_at = now()
         FROM live_leg
        WHERE calls.id = $1 AND calls.status = 'ringing' AND calls.ended_at IS NULL
          AND ${onCursor('calls', 'live_leg')}
       RETURNING ${CALL_COLUMNS}`,
      [callId, legId, at],
    );
    return rows[0];
  }

  /** The leg the plan rings now (its cursor's target and try), if it was dialed: what a carrier that does not name the leg answered with. */
  async currentTry(tx: Tx, call: CallRow): Promise<LegRow | undefined> {
    if (!call.ring_plan || !['targets', 'forward'].includes(call.ring_plan.phase)) return undefined;
    const { rows } = await exec<LegRow>(tx, `SELECT ${LEG_COLUMNS} FROM call_legs WHERE call_id = $1 AND ${createdAtOfId('$1', 'onceline_id_time(call_id)')} AND target_index = $2 AND attempt = $3`, [call.id, call.ring_plan.next - 1, call.ring_plan.attempt]);
    return rows[0];
  }

  /** The call's own leg answered (a call our side placed, or the caller's leg we answered for voicemail): the answer is the join. */
  async answerOwnLeg(tx: Tx, callId: string, at: string): Promise<CallRow | undefined> {
    // status = 'ringing' and no leg won: an answer already recorded, or a call over, changes nothing.
    const { rows } = await exec<CallRow>(
      tx,
      `UPDATE calls SET status = 'in_progress', answered_at = $2, bridged_at = $2, updated_at = now()
        WHERE ${CALL_BY_ID} AND status = 'ringing' AND ended_at IS NULL AND answered_leg IS NULL RETURNING ${CALL_COLUMNS}`,
      [callId, at],
    );
    return rows[0];
  }

  /**
   * The caller's leg answered (we answer it once a target won): the carrier bills the call from
   * this moment, so its time starts here too. Guarded on a call in progress and not ended;
   * greatest() keeps the later answer, so a repeat changes nothing.
   */
  async startBilledTimeAtCallerAnswer(tx: Tx, callId: string, at: string): Promise<boolean> {
    const { affected } = await exec(
      tx,
      `UPDATE calls SET answered_at = $2, updated_at = now()
        WHERE ${CALL_BY_ID} AND status = 'in_progress' AND ended_at IS NULL AND answered_at < $2::timestamptz`,
      [callId, at],
    );
    return affected === 1;
  }

  /**
   * The answered leg is joined to the caller (the carrier's bridge), once per call: the moment
   * `call.answered` is announced. A leg's report counts only for the leg that won (`legId`); the
   * caller's report (`legId` undefined) for whichever did. A join after the call ended, or after
   * the join timeout wrote the winner off (answered_leg NULL), changes nothing.
   */
  async markJoined(tx: Tx, callId: string, legId: string | undefined, at: string): Promise<CallRow | undefined> {
    const { rows } = await exec<CallRow>(
      tx,
      `UPDATE calls SET bridged_at = $3, updated_at = now()
        WHERE ${CALL_BY_ID} AND bridged_at IS NULL AND ended_at IS NULL AND answered_leg IS NOT NULL AND answered_leg = coalesce($2, answered_leg)
       RETURNING ${CALL_COLUMNS}`,
      [callId, legId ?? null, at],
    );
    return rows[0];
  }

  /**
   * The join timeout: a leg that won the answer but was never bridged gives the call back to the
   * plan (in_progress → ringing). Guarded on that leg still being the winner and no bridge, so a
   * bridge that got there first (or a hangup) leaves the call alone.
   */
  async writeOffUnjoinedAnswer(tx: Tx, callId: string, legId: string): Promise<CallRow | undefined> {
    const { rows } = await exec<CallRow>(
      tx,
      `UPDATE calls SET status = 'ringing', answered_leg = NULL, answered_at = NULL, updated_at = now()
        WHERE ${CALL_BY_ID} AND answered_leg = $2 AND bridged_at IS NULL AND ended_at IS NULL AND status = 'in_progress' RETURNING ${CALL_COLUMNS}`,
      [callId, legId],
    );
    return rows[0];
  }

  /**
   * The hangup guard (the guard rule, docs/exactly-once.md): ends the call once (in_progress → completed, ringing → missed),
   * with its duration from the answer's to the hangup's carrier time and its billable minutes,
   * ceil(duration/60) (at least 1 once answered), which CallFlow.endCall bills from the returned
   * row. A second hangup finds ended_at set: nothing ends, nothing is returned to bill.
   *
   * `reportedSeconds`: the carrier's own duration of the call (Twilio CallDuration), which then is
   * the duration; a call the carrier reports talk time for was answered (that long before its
   * end), even if the report of which target answered has not reached us yet.
   */
  async end(tx: Tx, callId: string, at: string, cause: string | undefined, { reportedSeconds, failed = false }: { reportedSeconds?: number; failed?: boolean } = {}): Promise<CallRow | undefined> {
    const { rows } = await exec<CallRow>(
      tx,
      `UPDATE calls c SET ${endSetSql('c', { at: '$2::timestamptz', cause: '$3', reportedSeconds: '$4::int', failed: '$5' })}
        WHERE ${CALL_BY_ID} AND ended_at IS NULL
       RETURNING ${CALL_COLUMNS}`,
      [callId, at, cause ?? null, reportedSeconds ?? null, failed],
    );
    return rows[0];
  }

  /** The voicemail's recording, once. */
  async saveVoicemail(tx: Tx, callId: string, url: string): Promise<CallRow | undefined> {
    const { rows } = await exec<CallRow>(tx, `UPDATE calls SET voicemail_url = $2, updated_at = now() WHERE ${CALL_BY_ID} AND voicemail_url IS NULL RETURNING ${CALL_COLUMNS}`, [callId, url]);
    return rows[0];
  }

  /** A transcription fragment, kept once (a re-signed copy has a new event id but the same time and words). */
  async addTranscriptFragment(tx: Tx, callId: string, at: string, text: string): Promise<boolean> {
    const { affected } = await exec(tx, `INSERT INTO call_transcript_fragments (call_id, occurred_at, text) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [callId, at, text]);
    return affected === 1;
  }

  /** Assembles the transcript of an ended call from its fragments in carrier time order, once. */
  async completeTranscript(tx: Tx, callId: string): Promise<CallRow | undefined> {
    // The call's row first, alone: a fragment is written by a transaction holding it
    // (CallCarrierEvents.transcription), so the statement below, whose snapshot is taken after
    // this wait, reads every fragment committed before the transcript. In that one statement, a
    // fragment committed while its UPDATE waited for the row was left out of the snapshot's
    // string_agg, and the transcript, written once, lacked it for good.
    await exec(tx, `SELECT FROM calls WHERE ${CALL_BY_ID} FOR UPDATE`, [callId]);
    // transcript IS NULL: a second run of the job writes nothing and announces nothing.
    const { rows } = await exec<CallRow>(
      tx,
      `UPDATE calls SET updated_at = now(),
              transcript = coalesce((SELECT string_agg(text, ' ' ORDER BY occurred_at, id) FROM call_transcript_fragments WHERE call_id = $1), '')
        WHERE ${CALL_BY_ID} AND transcript IS NULL AND ended_at IS NOT NULL RETURNING ${CALL_COLUMNS}`,
      [callId],
    );
    return rows[0];
  }
}
