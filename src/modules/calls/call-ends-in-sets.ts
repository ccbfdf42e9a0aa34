import { Injectable } from '@nestjs/common';
import type { CallEvent } from '../../carriers/normalized-event.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { isoTimestampSql, type CteStatement } from '../../platform/database/cte-statement.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { createdAtOfId } from '../../platform/retention/id-partition-key.js';
import { UsageLedger } from '../billing/usage-ledger.js';
import { DecidesCarrierEventsInSets, type EventBatchRun } from '../ingest/carrier-event-handlers.js';
import { CustomerEvents } from '../webhooks/customer-events.js';
import { CallControlCommands } from './call-control-commands.js';
import { byCall, CallEventSets, readyIn } from './call-event-sets.js';
import { CallTimeline } from './call-timeline.js';
import { CALL_COLUMNS_OF_C, CallTransitions, endSetSql } from './call-transitions.js';
import { CALL_COLUMNS, CALL_VIEW_JSON, LEG_ORDER, LEG_VIEW_JSON } from './call-view.js';
import { CallControlCommandsJob, CallTranscriptJob } from './calls.jobs.js';

/** The input row of a hangup (CallEndsInSets.ends): the leg it names (lockedLegsCte's columns), its cause and the carrier's id of the event. */
const INPUT_COLUMNS = `kind text, carrier text, call_session_id text, control_id text, call_id text, target_index int, attempt int, occurred_at timestamptz,
  hangup_cause text, carrier_event_ref text`;

/** A call that a hangup ends in sets: answered (in progress), so it ends completed. */
const ANSWERED = `c.status = 'in_progress'`;

/**
 * The answered leg's hangup (its physical leg kept): the call's end while the call is answered
 * and the leg live, or a repeat once the call is over (CallCarrierEvents.hangupOnCall then ends the leg,
 * if it still runs, and ends nothing else: `duplicate`).
 */
const ANSWERED_LEG = `l.control_id = i.control_id AND c.answered_leg = l.id AND (c.ended_at IS NOT NULL OR (l.ended_at IS NULL AND ${ANSWERED}))`;

/** The caller's hangup: the call's end while it is answered, or a repeat once it is over (`duplicate`, nothing written). */
const CALLER = `c.caller_control_id = i.control_id AND (c.ended_at IS NOT NULL OR (${ANSWERED}))`;

/** The columns of a decided row (both kinds of leg): what the timeline, the consumption and the end read; `ends`: the call not ended when locked (the event's note). */
const DECIDED = 'event_id, call_id, leg_id, kind, occurred_at, received_at, ends, status_before, ending_leg_id';
/** DECIDED, of `d`. */
const DECIDED_OF_D = DECIDED.split(', ').map((column) => `d.${column}`).join(', ');


/**
 * A call's end decided in sets: the hangup that ends an answered call (the caller's, or the
 * answered leg's) for many calls in one statement, under each call's turn and its row's lock, as
 * CallCarrierEvents.hangupOnCall and CallFlow.endCall decide it in a transaction, which keeps
 * every other case (a call still ringing, a leg that lost or was written off, a call we placed
 * whose session is not named yet: not ready here, decided there at once).
 *
 * The events whose call (and leg) a case below holds on, locked, are consumed; the hangup guard
 * (`UPDATE calls … WHERE ended_at IS NULL`, endSetSql) is tried for each, and decides which:
 *  - the end: the calls it changed. For those only: the ending leg ended and every leg the carrier has not named yet
 *    (closeLegsOfEndedCall), the minutes billed (UsageLedger.recordFromCte, the cause endCall's
 *    bill gives), `call.completed` with the call and its legs as endCall announces them (and
 *    `call.answered` before it for a call whose join the carrier never reported), the other
 *    legs (and the caller, when a leg ended it) hung up, the transcript queued; `applied`;
 *  - a repeat: the call over. Nothing ends, the answered leg's own row aside (its hangup after
 *    the caller's ends it once); `duplicate`, the cost of one probe.
 * The event's note (`duplicate`) is read off the row as locked, the one thing written before the
 * guard (the consumption); under the lock the two agree.
 */
@Injectable()
export class CallEndsInSets {
  constructor(
    private readonly sets: CallEventSets,
    private readonly transitions: CallTransitions,
    private readonly timeline: CallTimeline,
    private readonly commands: CallControlCommands,
    private readonly events: CustomerEvents,
    private readonly usage: UsageLedger,
    private readonly outbox: OutboxService,
    private readonly config: AppConfig,
  ) {}

  /**
   * Which hangups are offered to `ends` (a hint): the caller's leg's, and the first hangup of a
   * leg whose answer this process ran; every other leg hangup is CallEventSets.legHangups' (its
   * `when`, hangupOfOurLeg, is this one's complement among our legs), so the two never share one.
   */
  endOfCall(event: CallEvent): boolean {
    if (event.carrier !== 'telnyx') return false;
    return event.ourLeg === undefined || !this.sets.hangupOfOurLeg(event);
  }

  @DecidesCarrierEventsInSets('call.hangup', { key: byCall, when: 'endOfCall', afterCommit: CallControlCommandsJob })
  ends(events: CallEvent[], run: EventBatchRun): void {
    const { stmt } = run;
    const input = run.input(INPUT_COLUMNS, events.map((event) => ({
      kind: event.kind, carrier: event.carrier, call_session_id: event.callSessionId, control_id: event.carrierCallId, call_id: event.ourLeg?.callId ?? null,
      target_index: event.ourLeg?.target ?? null, attempt: event.ourLeg?.attempt ?? null, occurred_at: event.occurredAt, hangup_cause: event.hangupCause ?? null, carrier_event_ref: event.carrierEventId,
    })));
    const decided = this.lockedCalls(run, events, input);
    const consumed = run.consume({ ready: readyIn(decided), note: (r) => `CASE WHEN EXISTS (SELECT FROM ${decided} d WHERE d.event_id = ${r}.event_id AND NOT d.ends) THEN 'duplicate' END` });
    const ends = stmt.with(
      'call_ends_consumed',
      `SELECT d.event_id, d.call_id, d.ending_leg_id, d.occurred_at, d.status_before, i.hangup_cause AS cause, i.carrier_event_ref
         FROM ${decided} d JOIN ${consumed} k ON k.consumed_event_id = d.event_id JOIN ${input} i ON i.event_id = d.event_id`,
    );
    // The hangup guard, tried for every event consumed: what is written after (the repeat's
    // `duplicate` too) reads the calls it changed. Only the event's note is the lock's reading.
    const ended = stmt.with(
      'calls_ended',
      `UPDATE calls c SET ${endSetSql('c', { at: 'e.occurred_at', cause: 'e.cause', reportedSeconds: 'NULL::int', failed: 'false' })}
         FROM ${ends} e
        WHERE c.id = e.call_id AND ${createdAtOfId('e.call_id', 'c.created_at')} AND c.ended_at IS NULL
       RETURNING ${CALL_COLUMNS_OF_C}, e.event_id, e.ending_leg_id, e.status_before, e.cause, e.carrier_event_ref`,
    );
    const closed = this.closeLegs(stmt, ended);
    const repeats = stmt.with('call_ends_repeated', `SELECT ${DECIDED} FROM ${decided} d WHERE EXISTS (SELECT FROM ${ends} e WHERE e.event_id = d.event_id) AND NOT EXISTS (SELECT FROM ${ended} x WHERE x.event_id = d.event_id)`);
    this.endRepeatedLegs(stmt, repeats, ends);
    this.hangUpTheRest(stmt, ended, closed);
    this.bill(stmt, ended);
    this.announce(stmt, ended);
    this.outbox.jobsFromCte(stmt, 'call_end_transcripts', stmt.with('call_ends_transcribed', `SELECT id FROM ${ended} WHERE transcribe AND answered_at IS NOT NULL`), CallTranscriptJob, {
      id: `'transcript-' || id`,
      data: `jsonb_build_object('callId', id)`,
      runAt: `clock_timestamp() + make_interval(secs => ${stmt.param(this.config.CALL_TRANSCRIPT_SETTLE_MS / 1000, 'float8')})`,
    });
    const applied = stmt.with('call_ends_applied', `SELECT ${DECIDED_OF_D} FROM ${decided} d JOIN ${ended} x ON x.event_id = d.event_id`);
    this.timeline.recordManyIn(stmt, applied, consumed, { outcome: 'applied', name: 'call_end_timeline_applied' });
    this.timeline.recordManyIn(stmt, repeats, consumed, { outcome: 'duplicate' });
  }

  /**
   * The events' calls, their turns taken, where a case above holds on the rows at their latest
   * version, locked (the call, and the answered leg for its own hangup, as lockByLeg and
   * lockBySession lock them): one row per event decided (DECIDED), `ends` the first case,
   * `leg_id` the timeline's (`caller` for the caller's leg), `ending_leg_id` the leg to end.
   */
  private lockedCalls(run: EventBatchRun, events: CallEvent[], input: string): string {
    const { stmt } = run;
    const turns = run.takeCallTurns('call_session_id');
    // Only the kinds of leg the batch has: a statement planned with fewer CTEs costs PostgreSQL less.
    const decided: string[] = [];
    const legCallIds = events.flatMap((event) => (event.ourLeg ? [event.ourLeg.callId] : []));
    if (legCallIds.length > 0) {
      decided.push(this.transitions.lockedLegsCte(stmt, 'call_ends_legs_decided', input, turns, ANSWERED_LEG, legCallIds, 'c.ended_at IS NULL AS ends, c.status AS status_before, l.id AS ending_leg_id'));
    }
    // The caller's leg: its call by the session (lockBySession), the leg the call names as the caller's.
    const callerSessions = events.filter((event) => !event.ourLeg).map((event) => event.callSessionId);
    if (callerSessions.length > 0) {
      decided.push(stmt.with(
        'call_ends_callers_decided',
        `SELECT i.event_id, c.id AS call_id, 'caller' AS leg_id, i.kind, i.occurred_at, t.received_at, c.ended_at IS NULL AS ends, c.status AS status_before, NULL::text AS ending_leg_id
           FROM ${input} i JOIN ${turns} t ON t.event_id = i.event_id
           JOIN calls c ON c.carrier = i.carrier AND c.carrier_call_id = i.call_session_id
          WHERE i.call_id IS NULL AND c.carrier_call_id = ANY (${stmt.param(callerSessions, 'text[]')}) AND ${CALLER}
            FOR UPDATE OF c`,
        { materialized: true },
      ));
    }
    return stmt.with('call_ends_decided', decided.map((cte) => `SELECT ${DECIDED} FROM ${cte}`).join(' UNION ALL '), { materialized: true });
  }

  /**
   * endLeg and closeLegsOfEndedCall for the calls of CTE `ended`, in one UPDATE (a row updated
   * twice in one statement keeps one of the two): the ending leg ended by its hangup, every leg
   * the carrier has not named ended with the call; those it named are locked and returned, to be
   * hung up. Returns the CTE of the legs (id, call_id, control_id).
   */
  private closeLegs(stmt: CteStatement, ended: string): string {
    return stmt.with(
      'call_legs_of_ended',
      `UPDATE call_legs l SET status = CASE WHEN l.id = x.ending_leg_id OR l.control_id IS NULL THEN 'ended' ELSE l.status END,
              ended_at = CASE WHEN l.id = x.ending_leg_id OR l.control_id IS NULL THEN x.ended_at END,
              hangup_cause = CASE WHEN l.id = x.ending_leg_id THEN coalesce(x.cause, 'unspecified') WHEN l.control_id IS NULL THEN 'call_ended' END
         FROM ${ended} x
        WHERE l.call_id = x.id AND ${createdAtOfId('x.id', 'onceline_id_time(l.call_id)')} AND l.ended_at IS NULL
       RETURNING l.id, l.call_id, l.control_id`,
    );
  }

  /**
   * A repeat of the answered leg's hangup (CTE `repeats`, of `ends`' events), its call over: the
   * leg ends once (endLeg's guard), as the transaction ends it before it finds the call ended.
   */
  private endRepeatedLegs(stmt: CteStatement, repeats: string, ends: string): void {
    stmt.with(
      'call_legs_ended_after_call',
      `UPDATE call_legs l SET status = 'ended', ended_at = e.occurred_at, hangup_cause = coalesce(e.cause, 'unspecified')
         FROM ${repeats} d JOIN ${ends} e ON e.event_id = d.event_id
        WHERE l.id = d.ending_leg_id AND l.call_id = d.call_id AND ${createdAtOfId('d.call_id', 'onceline_id_time(l.call_id)')} AND l.ended_at IS NULL`,
    );
  }

  /** endCall's hangups: every leg the carrier named still up but the ending one, and the caller when a leg ended the call; one job per call. */
  private hangUpTheRest(stmt: CteStatement, ended: string, closed: string): void {
    const commands = stmt.with(
      'call_end_hangups',
      `SELECT x.id AS call_id, x.id || '-ended' AS batch, h.commands FROM ${ended} x
        CROSS JOIN LATERAL (SELECT jsonb_agg(u.command ORDER BY u.n, u.id) AS commands FROM (
               SELECT 0 AS n, o.id, ${this.commands.hangupLegSql('o.id', 'o.control_id')} AS command FROM ${closed} o
                WHERE o.call_id = x.id AND o.control_id IS NOT NULL AND o.id IS DISTINCT FROM x.ending_leg_id
               UNION ALL
               SELECT 1, NULL, ${this.commands.hangupCallerSql('x.caller_control_id', 'x.id')} WHERE x.ending_leg_id IS NOT NULL AND x.caller_control_id IS NOT NULL) u) h
        WHERE h.commands IS NOT NULL`,
    );
    this.commands.queueManyIn(stmt, commands);
  }

  /** CallFlow.bill for the calls of CTE `ended`: their minutes, the hangup that ended each as their cause. */
  private bill(stmt: CteStatement, ended: string): void {
    const iso = isoTimestampSql;
    const source = stmt.with(
      'call_end_usage',
      `SELECT account_id, id AS resource_id, billable_minutes AS quantity,
              jsonb_build_object('resource', jsonb_build_object('type', 'call', 'id', id), 'transition', status_before || ' → ' || status, 'settled_by', NULL,
                'carrier', carrier, 'carrier_resource_id', carrier_call_id,
                'carrier_events', jsonb_build_array(jsonb_build_object('id', event_id, 'carrier_event_id', carrier_event_ref, 'role', 'hangup', 'occurred_at', ${iso('ended_at')})),
                'price_rule', jsonb_build_object('unit', 'minute', 'answered_at', ${iso('answered_at')}, 'ended_at', ${iso('ended_at')}, 'duration_seconds', duration_seconds,
                  'duration_source', 'answered_at_to_ended_at', 'counted', 'ceil(duration_seconds / 60), at least 1')) AS cause
         FROM ${ended} WHERE billable_minutes > 0`,
    );
    this.usage.recordFromCte(stmt, source, 'call_minutes', { accountId: 'account_id', resourceId: 'resource_id', quantity: 'quantity', cause: 'cause' });
  }

  /**
   * endCall's `call.completed`, and `call.answered` before it for a call never announced joined
   * (bridged_at, which the end leaves as it was): the call as ended, its legs as endCall's
   * announce reads them (after the ending leg's end, before the others are closed: this
   * statement's snapshot, with the ending leg as this statement ends it). In that order, so
   * their ids (minted in order) are too.
   */
  private announce(stmt: CteStatement, ended: string): void {
    const legs = `(SELECT coalesce(jsonb_agg(${LEG_VIEW_JSON} ORDER BY ${LEG_ORDER}), '[]'::jsonb) FROM (
        SELECT l.id, l.target_index, l.attempt, l.to_number, l.dialed_at, l.answered_at,
               CASE WHEN l.id = x.ending_leg_id THEN 'ended' ELSE l.status END AS status,
               CASE WHEN l.id = x.ending_leg_id THEN x.ended_at ELSE l.ended_at END AS ended_at,
               CASE WHEN l.id = x.ending_leg_id THEN coalesce(x.cause, 'unspecified') ELSE l.hangup_cause END AS hangup_cause
          FROM call_legs l WHERE l.call_id = x.id AND ${createdAtOfId('x.id', 'onceline_id_time(l.call_id)')}) v)`;
    const source = stmt.with(
      'call_end_announced',
      `SELECT account_id, type, payload FROM (
         SELECT account_id, id, t.n, t.type, ${CALL_VIEW_JSON} || jsonb_build_object('legs', ${legs}) AS payload
           FROM ${ended} x CROSS JOIN LATERAL (VALUES (0, 'call.answered'), (1, 'call.completed')) AS t(n, type)
          WHERE status = 'completed' AND (t.n = 1 OR bridged_at IS NULL)) a
        ORDER BY id, n`,
    );
    this.events.emitFromCte(stmt, source, ['call.answered', 'call.completed'], 'payload');
  }
}
