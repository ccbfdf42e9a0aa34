import { Injectable } from '@nestjs/common';
import { IdPrefix, newId } from '../../platform/ids.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import type { CarrierName } from '../../carriers/normalized-event.js';
import { UsageLedger } from '../billing/usage-ledger.js';
import type { RingPlanState } from '../sequential-ring/ring-plan.js';
import { CALL_COLUMNS, LEG_COLUMNS, type CallDirection, type CallRow, type CallStatus, type LegRow } from './call-view.js';

/** Whole seconds from the answer to the hangup ($2), both carrier times (SET reads the row before the change). */
const SECONDS_ANSWERED = `greatest(0, round(extract(epoch FROM $2::timestamptz - answered_at)))::int`;

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
 * what the guard sees, and the usage row and the customer event commit with the change.
 */
@Injectable()
export class CallTransitions {
  constructor(private readonly usage: UsageLedger) {}

  /** A new call, once per carrier call however often its first event comes; undefined when it exists. */
  async create(tx: Tx, call: NewCall): Promise<CallRow | undefined> {
    const id = newId(IdPrefix.Call);
    // ON CONFLICT (carrier, carrier_call_id): a duplicate or re-signed call.initiated inserts nothing.
    const { rows } = await exec<CallRow>(
      tx,
      `INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, caller_control_id, ring_plan, transcribe, ended_at, hangup_cause,
                          duration_seconds, billable_minutes)
       VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce($8, $1), $9, $10::jsonb, $11, $12, $13, CASE WHEN $12::timestamptz IS NULL THEN NULL ELSE 0 END, CASE WHEN $12::timestamptz IS NULL THEN NULL ELSE 0 END)
       ON CONFLICT (carrier, carrier_call_id) DO NOTHING
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

  /** The call and the leg our client_state names, the call locked; undefined when no such leg of ours exists. */
  async lockByLeg(tx: Tx, carrier: CarrierName, leg: { callId: string; target: number; attempt: number }): Promise<LockedCall | undefined> {
    const { rows } = await exec<CallRow>(tx, `SELECT ${CALL_COLUMNS} FROM calls WHERE id = $1 AND carrier = $2 FOR UPDATE`, [leg.callId, carrier]);
    if (!rows[0]) return undefined;
    const legs = await exec<LegRow>(tx, `SELECT ${LEG_COLUMNS} FROM call_legs WHERE call_id = $1 AND target_index = $2 AND attempt = $3`, [leg.callId, leg.target, leg.attempt]);
    return legs.rows[0] ? { call: rows[0], leg: legs.rows[0] } : undefined;
  }

  async lockById(tx: Tx, callId: string): Promise<CallRow | undefined> {
    const { rows } = await exec<CallRow>(tx, `SELECT ${CALL_COLUMNS} FROM calls WHERE id = $1 FOR UPDATE`, [callId]);
    return rows[0];
  }

  /** A call we placed learns the carrier's name for it (the first leg event or the dial's answer says it). */
  async nameSession(tx: Tx, callId: string, carrierCallId: string): Promise<void> {
    // carrier_call_id = id: only the placeholder is replaced, never a session already named.
    await exec(tx, `UPDATE calls SET carrier_call_id = $2 WHERE id = $1 AND carrier_call_id = id`, [callId, carrierCallId]);
  }

  /** Records the dial of one target try; undefined when that try was already dialed. */
  async addLeg(tx: Tx, callId: string, leg: { target: number; attempt: number; to: string }): Promise<LegRow | undefined> {
    // UNIQUE (call_id, target_index, attempt): one leg per try, however often the decision replays.
    const { rows } = await exec<LegRow>(
      tx,
      `INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status) VALUES ($1, $2, $3, $4, $5, 'dialing')
       ON CONFLICT (call_id, target_index, attempt) DO NOTHING RETURNING ${LEG_COLUMNS}`,
      [newId(IdPrefix.CallLeg), callId, leg.target, leg.attempt, leg.to],
    );
    return rows[0];
  }

  /** The carrier's id of a leg, from its first event or the dial's answer; kept once. */
  async stampLegControlId(tx: Tx, legId: string, controlId: string): Promise<void> {
    await exec(tx, `UPDATE call_legs SET control_id = $2 WHERE id = $1 AND control_id IS NULL`, [legId, controlId]);
  }

  /** dialing → ringing (the carrier reports the leg up); an answered or ended leg is left alone. */
  async legRinging(tx: Tx, legId: string): Promise<boolean> {
    const { affected } = await exec(tx, `UPDATE call_legs SET status = 'ringing' WHERE id = $1 AND status = 'dialing'`, [legId]);
    return affected === 1;
  }

  /** The leg picked up; guarded on not ended and not answered already. */
  async legAnswered(tx: Tx, legId: string, at: string): Promise<boolean> {
    const { affected } = await exec(tx, `UPDATE call_legs SET status = 'answered', answered_at = $2 WHERE id = $1 AND status IN ('dialing', 'ringing')`, [legId, at]);
    return affected === 1;
  }

  /** The leg is over (hung up, refused, written off); guarded by ended_at IS NULL, so only the first word counts. */
  async endLeg(tx: Tx, legId: string, at: string, cause: string, status: 'ended' | 'failed' = 'ended'): Promise<boolean> {
    const { affected } = await exec(
      tx,
      `UPDATE call_legs SET status = $4, ended_at = $2, hangup_cause = $3 WHERE id = $1 AND ended_at IS NULL`,
      [legId, at, cause, status],
    );
    return affected === 1;
  }

  /** Legs still up that the carrier knows by id: what must be hung up when the call ends. */
  async liveLegs(tx: Tx, callId: string): Promise<LegRow[]> {
    const { rows } = await exec<LegRow>(tx, `SELECT ${LEG_COLUMNS} FROM call_legs WHERE call_id = $1 AND ended_at IS NULL AND control_id IS NOT NULL`, [callId]);
    return rows;
  }

  async legs(tx: Tx, callId: string): Promise<LegRow[]> {
    const { rows } = await exec<LegRow>(tx, `SELECT ${LEG_COLUMNS} FROM call_legs WHERE call_id = $1 ORDER BY dialed_at, target_index, attempt`, [callId]);
    return rows;
  }

  /**
   * The ring cursor's compare-and-set (seed 000): moves the plan from `expected` to `next` only if
   * the call still rings and its plan is exactly `expected`. A duplicate or late hangup, an
   * answer, or the caller leaving got there first when it returns false: walk away.
   */
  async claimRingTurn(tx: Tx, callId: string, expected: RingPlanState, next: RingPlanState): Promise<boolean> {
    const { affected } = await exec(
      tx,
      `UPDATE calls SET ring_plan = $3::jsonb, updated_at = now()
        WHERE id = $1 AND status = 'ringing' AND ended_at IS NULL AND ring_plan = $2::jsonb`,
      [callId, JSON.stringify(expected), JSON.stringify(next)],
    );
    return affected === 1;
  }

  /** The answer race: ringing → in_progress for the first leg that answers; false for every other. */
  async answerByLeg(tx: Tx, callId: string, legId: string, at: string): Promise<CallRow | undefined> {
    // status = 'ringing': exactly one leg wins; a later answer, or one after the caller left, changes nothing.
    const { rows } = await exec<CallRow>(
      tx,
      `UPDATE calls SET status = 'in_progress', answered_leg = $2, answered_at = $3, updated_at = now()
        WHERE id = $1 AND status = 'ringing' AND ended_at IS NULL RETURNING ${CALL_COLUMNS}`,
      [callId, legId, at],
    );
    return rows[0];
  }

  /** The call's own leg answered (a call our side placed, or the caller's leg we answered for voicemail). */
  async answerOwnLeg(tx: Tx, callId: string, at: string): Promise<CallRow | undefined> {
    // status = 'ringing' and no leg won: an answer already recorded, or a call over, changes nothing.
    const { rows } = await exec<CallRow>(
      tx,
      `UPDATE calls SET status = 'in_progress', answered_at = $2, updated_at = now()
        WHERE id = $1 AND status = 'ringing' AND ended_at IS NULL AND answered_leg IS NULL RETURNING ${CALL_COLUMNS}`,
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
        WHERE id = $1 AND status = 'in_progress' AND ended_at IS NULL AND answered_at < $2::timestamptz`,
      [callId, at],
    );
    return affected === 1;
  }

  /** The winning leg is joined to the caller; kept once. */
  async markBridged(tx: Tx, callId: string, at: string): Promise<boolean> {
    const { affected } = await exec(tx, `UPDATE calls SET bridged_at = $2 WHERE id = $1 AND bridged_at IS NULL AND answered_leg IS NOT NULL AND ended_at IS NULL`, [callId, at]);
    return affected === 1;
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
        WHERE id = $1 AND answered_leg = $2 AND bridged_at IS NULL AND ended_at IS NULL AND status = 'in_progress' RETURNING ${CALL_COLUMNS}`,
      [callId, legId],
    );
    return rows[0];
  }

  /**
   * The hangup guard (seed 000): ends the call once (in_progress → completed, ringing → missed),
   * with its duration from the answer's to the hangup's carrier time, and bills ceil(duration/60)
   * minutes (at least 1 once answered) in this same transaction. A second hangup finds ended_at
   * set: nothing ends, nothing is billed.
   *
   * `reportedSeconds`: the carrier's own duration of the call (Twilio CallDuration), which then is
   * the duration; a call the carrier reports talk time for was answered (that long before its
   * end), even if the report of which target answered has not reached us yet.
   */
  async end(tx: Tx, callId: string, at: string, cause: string | undefined, reportedSeconds?: number): Promise<CallRow | undefined> {
    const answered = `(answered_at IS NOT NULL OR coalesce($4::int, 0) > 0)`;
    const seconds = `coalesce($4::int, CASE WHEN answered_at IS NULL THEN 0 ELSE ${SECONDS_ANSWERED} END)`;
    const { rows } = await exec<CallRow>(
      tx,
      `UPDATE calls SET
              status = CASE WHEN status = 'in_progress' OR (status = 'ringing' AND ${answered}) THEN 'completed' WHEN status = 'ringing' THEN 'missed' ELSE status END,
              ended_at = $2, hangup_cause = $3, updated_at = now(),
              answered_at = coalesce(answered_at, CASE WHEN $4::int > 0 THEN $2::timestamptz - make_interval(secs => $4::int) END),
              duration_seconds = CASE WHEN ${answered} THEN ${seconds} ELSE 0 END,
              billable_minutes = CASE WHEN ${answered} THEN greatest(1, ceil(${seconds} / 60.0))::int ELSE 0 END
        WHERE id = $1 AND ended_at IS NULL
       RETURNING ${CALL_COLUMNS}`,
      [callId, at, cause ?? null, reportedSeconds ?? null],
    );
    const ended = rows[0];
    if (ended && ended.billable_minutes && ended.billable_minutes > 0) {
      await this.usage.record(tx, { accountId: ended.account_id, kind: 'call_minutes', resourceId: ended.id, quantity: ended.billable_minutes });
    }
    return ended;
  }

  /** The voicemail's recording, once. */
  async saveVoicemail(tx: Tx, callId: string, url: string): Promise<CallRow | undefined> {
    const { rows } = await exec<CallRow>(tx, `UPDATE calls SET voicemail_url = $2, updated_at = now() WHERE id = $1 AND voicemail_url IS NULL RETURNING ${CALL_COLUMNS}`, [callId, url]);
    return rows[0];
  }

  /** A transcription fragment, kept once (a re-signed copy has a new event id but the same time and words). */
  async addTranscriptFragment(tx: Tx, callId: string, at: string, text: string): Promise<boolean> {
    const { affected } = await exec(tx, `INSERT INTO call_transcript_fragments (call_id, occurred_at, text) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [callId, at, text]);
    return affected === 1;
  }

  /** Assembles the transcript of an ended call from its fragments in carrier time order, once. */
  async completeTranscript(tx: Tx, callId: string): Promise<CallRow | undefined> {
    // transcript IS NULL: a second run of the job writes nothing and announces nothing.
    const { rows } = await exec<CallRow>(
      tx,
      `UPDATE calls SET updated_at = now(),
              transcript = coalesce((SELECT string_agg(text, ' ' ORDER BY occurred_at, id) FROM call_transcript_fragments WHERE call_id = $1), '')
        WHERE id = $1 AND transcript IS NULL AND ended_at IS NOT NULL RETURNING ${CALL_COLUMNS}`,
      [callId],
    );
    return rows[0];
  }
}
