import { Injectable } from '@nestjs/common';
import type { CallEvent } from '../../carriers/normalized-event.js';
import { DecidesCarrierEventsInSets, type EventBatchRun } from '../ingest/carrier-event-handlers.js';
import { IdPrefix, newId } from '../../platform/ids.js';
import { afterLegEnded } from '../sequential-ring/ring-plan.js';
import { CallControlCommands } from './call-control-commands.js';
import { CallFlow } from './call-flow.js';
import { CallTimeline } from './call-timeline.js';
import { CallTransitions, onCursor } from './call-transitions.js';
import type { CallRow, LegRow } from './call-view.js';
import { CallControlCommandsJob } from './calls.jobs.js';

/** Most event keys remembered as seen (RecentKeys): a few seconds of a busy process's leg events. */
const SEEN_MAX = 20_000;

/** A bounded map of recent keys to the first carrier event id seen with each, the oldest forgotten first. */
class RecentKeys {
  private readonly keys = new Map<string, string>();

  /** Whether `key` was seen before under another event id; remembers the first. */
  seenBefore(key: string, eventId: string): boolean {
    const first = this.keys.get(key);
    if (first !== undefined) return first !== eventId;
    this.keys.set(key, eventId);
    if (this.keys.size > SEEN_MAX) this.keys.delete(this.keys.keys().next().value as string);
    return false;
  }

  /** The first event id seen with `key` (undefined: never, or forgotten). */
  firstOf(key: string): string | undefined {
    return this.keys.get(key);
  }
}

/** Events of one call never share a set statement: the later one goes into the next, in arrival order. */
export const byCall = (event: CallEvent) => event.callSessionId;

/** A leg we dialed on Telnyx (the carrier whose call events reach these handlers, CallCarrierEvents). */
const ourTelnyxLeg = (event: CallEvent) => event.carrier === 'telnyx' && event.ourLeg !== undefined;

/** What RecentKeys remembers an event of a physical leg by: its kind and the leg. */
const legKey = (event: CallEvent, kind: string = event.kind) => `${kind} ${event.carrierCallId}`;

/**
 * Call events decided in sets: the events of many calls in one statement per kind
 * (EventBatchRun), under each call's turn and its rows' locks, with the same guards and the same
 * timeline entry as CallCarrierEvents, which decides every other case (an event these do not find
 * ready goes to it at once, in a transaction):
 *  - a leg's call.initiated while the leg is live and its call goes on: the leg keeps the first
 *    physical leg named and rings;
 *  - a repeat of a leg's hangup (the leg ended by its own physical leg, nothing left for it to
 *    end) and of a leg's answer (it won, and is still the live winner): recorded `duplicate`;
 *  - a leg's first hangup that hands the call on (legHangups): the leg ended, the ring cursor's
 *    compare-and-set, the next try's leg and its commands;
 *  - a leg's answer that wins the race on a call with a caller to join (legAnswers): the leg and
 *    the call answered, the join's commands and its timeout.
 * A duplicate or a win then costs a share of one statement, a hand-off a share of two (a read and
 * the statement), not a transaction of its own.
 */
@Injectable()
export class CallEventSets {
  /** Leg hangups and answers this process has run (RecentKeys), by kind and physical leg. */
  private readonly seen = new RecentKeys();

  constructor(
    private readonly transitions: CallTransitions,
    private readonly timeline: CallTimeline,
    private readonly flow: CallFlow,
    private readonly commands: CallControlCommands,
  ) {}

  /**
   * Whether a leg's hangup or answer repeats one this process ran before under another event id
   * (the twin of an event delivered twice runs after the first, in its call's turn); remembers
   * the first. A hint only: the hand-off statement reads the call for a first hangup, not for a
   * repeat; what is a repeat is decided by the statement, under the row locks.
   */
  repeatOfOurLeg(event: CallEvent): boolean {
    return ourTelnyxLeg(event) && this.seen.seenBefore(legKey(event), event.carrierEventId);
  }

  /**
   * Which leg hangups are offered to the set statement (legHangups): a repeat (repeatOfOurLeg),
   * and a first hangup of a leg whose answer this process has not run (a hand-off, most likely;
   * the answered leg's hangup ends the call, in its transaction). A hint, as repeatOfOurLeg.
   */
  hangupOfOurLeg(event: CallEvent): boolean {
    return this.repeatOfOurLeg(event) || (ourTelnyxLeg(event) && this.seen.firstOf(legKey(event, 'call.answered')) === undefined);
  }

  /** Our own leg's call.initiated: what CallCarrierEvents.initiated does for a live leg of a call that goes on. */
  @DecidesCarrierEventsInSets('call.initiated', { key: byCall, when: 'ourLeg' })
  legsUp(events: CallEvent[], run: EventBatchRun): void {
    const legs = this.lockedLegs(run, events, 'l.ended_at IS NULL AND c.ended_at IS NULL AND (l.control_id IS NULL OR l.control_id = i.control_id)');
    const consumed = run.consume({ ready: readyIn(legs) });
    this.transitions.legsRingingCte(run.stmt, legs, consumed);
    this.timeline.recordManyIn(run.stmt, legs, consumed, { outcome: 'ignored', note: 'our own leg: creates nothing' });
  }

  ourLeg(event: CallEvent): boolean {
    return ourTelnyxLeg(event);
  }

  /**
   * A leg's hangup, in one statement for many calls, two cases (exclusive on the locked rows):
   *  - a repeat: its physical leg ended it (a leg only ends with a physical leg named by its own
   *    hangup; written off, it had none) and, that leg being the winner or the only leg, the call is
   *    over too. CallCarrierEvents.hangupOnCall then ends nothing: `duplicate`;
   *  - the hand-off: the leg's first end, on a call still ringing whose cursor names this leg's
   *    try (CallFlow.advanceAfterLeg). The plan's next step is decided here in JS (afterLegEnded)
   *    from the calls as read before the statement (one read for the batch, of the first hangups
   *    only); the statement ends the leg, moves the cursor by its compare-and-set from the plan that
   *    read found (ring_plan = expected), adds the next try's leg and queues its commands (a dial
   *    this process sends once the statement commits), and records `applied`. A plan moved since
   *    the read (an answer, the caller leaving, a join timeout) fails the CAS: the event is not
   *    ready and goes to its transaction, which decides on the call as it is.
   */
  @DecidesCarrierEventsInSets('call.hangup', { key: byCall, when: 'hangupOfOurLeg', afterCommit: CallControlCommandsJob })
  async legHangups(events: CallEvent[], run: EventBatchRun): Promise<void> {
    const handOffs = await this.repeatOrFirst(run, events, {
      decided: { columns: HAND_OFF_COLUMNS, row: (call, event) => handOffRow(this.flow, call, event) }, repeated: REPEATED_HANGUP, first: HAND_OFF, firstCase: 'l.ended_at IS NULL',
    });
    const { turned, dialed } = this.transitions.handOffsCte(run.stmt, handOffs);
    // The step's commands, once its cursor moved (and, for a dial, its leg was added).
    const commands = run.stmt.with(
      'call_hand_off_commands',
      `SELECT h.call_id, h.batch, h.commands FROM ${handOffs} h JOIN ${turned} t ON t.call_id = h.call_id
        WHERE h.commands IS NOT NULL AND (h.new_leg_id IS NULL OR EXISTS (SELECT FROM ${dialed} a WHERE a.id = h.new_leg_id))`,
    );
    this.commands.queueManyIn(run.stmt, commands);
  }

  /** Every answer of our leg is offered to the set statement (legAnswers); remembered, as repeatOfOurLeg does. */
  answerOfOurLeg(event: CallEvent): boolean {
    return this.repeatOfOurLeg(event) || ourTelnyxLeg(event);
  }

  /**
   * A leg's answer, in one statement for many calls, two cases (exclusive on the locked rows):
   *  - a repeat of the answer of the leg that won and is still its call's live winner:
   *    CallCarrierEvents.answeredOnCall records `duplicate`;
   *  - the answer that wins the race (answeredOnCall's winner on a call with a caller to join):
   *    the leg live and ours, its call ringing, not ended, the plan's cursor on this leg's try
   *    (answerByLeg's guard). The statement answers the leg and the call, queues the join's
   *    commands, built from the call and leg as it locked them (CallFlow.joinCommandsSql; sent
   *    here once it commits), and the join timeout, and records `applied`: no read before it.
   *    Anything else (a stale answer, a call of ours without a caller's leg) goes to its transaction.
   */
  @DecidesCarrierEventsInSets('call.answered', { key: byCall, when: 'answerOfOurLeg', afterCommit: CallControlCommandsJob })
  async legAnswers(events: CallEvent[], run: EventBatchRun): Promise<void> {
    const answers = await this.repeatOrFirst(run, events, { repeated: REPEATED_ANSWER, first: WINS, firstCase: 'c.answered_leg IS NULL' });
    const won = this.transitions.answersCte(run.stmt, answers);
    const join = this.flow.joinCommandsSql('w');
    this.commands.queueManyIn(run.stmt, run.stmt.with('call_join_commands', `SELECT w.call_id, ${join.batch} AS batch, ${join.commands} AS commands FROM ${won} w`));
    this.flow.joinTimeoutsIn(run.stmt, won);
  }

  /**
   * The frame of a statement that decides a leg's event as a repeat or as its first (legHangups,
   * legAnswers), two cases exclusive on the locked rows: the input rows, with `columns` built by
   * `row` from the event's call as read now (first events only; none, and no read, without
   * `decided`); the calls and legs where `repeated` or `first` holds, locked (`firstCase`: SQL
   * over them saying which); the consumption (a repeat noted `duplicate`) and the timeline
   * entries (`applied`, `duplicate`). Returns the CTE of the first events consumed: call_id,
   * leg_id, control_id, occurred_at and the input's `columns`.
   */
  private async repeatOrFirst(
    run: EventBatchRun,
    events: CallEvent[],
    { decided, repeated, first, firstCase }: { decided?: { columns: string; row: (call: CallRow | undefined, event: CallEvent) => object }; repeated: string; first: string; firstCase: string },
  ): Promise<string> {
    const columns = decided?.columns ?? '';
    const calls = decided ? await this.firstsCalls(events) : new Map<CallEvent, CallRow>();
    const input = this.legsInput(run, events, columns, (event) => decided?.row(calls.get(event), event) ?? {});
    const legs = this.lockedLegs(run, events, `(${repeated}) OR (${first})`, input, `${firstCase} AS first_case`);
    const consumed = run.consume({ ready: readyIn(legs), note: (r) => `CASE WHEN EXISTS (SELECT FROM ${legs} d WHERE d.event_id = ${r}.event_id AND NOT d.first_case) THEN 'duplicate' END` });
    const repeats = run.stmt.with('call_legs_repeated', `SELECT * FROM ${legs} WHERE NOT first_case`);
    const applied = run.stmt.with('call_legs_applied', `SELECT * FROM ${legs} WHERE first_case`);
    this.timeline.recordManyIn(run.stmt, repeats, consumed, { outcome: 'duplicate' });
    this.timeline.recordManyIn(run.stmt, applied, consumed, { outcome: 'applied', name: 'call_timeline_applied' });
    // The input's own columns, but those the locked rows name (the leg's id, as locked).
    const inputColumns = columns.split(',').map((column) => column.trim().split(' ')[0]).filter((name) => name && !['call_id', 'leg_id', 'control_id', 'occurred_at'].includes(name));
    return run.stmt.with(
      'call_legs_first',
      `SELECT d.call_id, d.leg_id, d.control_id, d.occurred_at${inputColumns.map((name) => `, i.${name}`).join('')}
         FROM ${applied} d JOIN ${consumed} k ON k.consumed_event_id = d.event_id JOIN ${input} i ON i.event_id = d.event_id`,
    );
  }

  /** The calls of the events that are the first of their physical leg (a repeat decides nothing from them), read now; by event. */
  private async firstsCalls(events: CallEvent[]): Promise<Map<CallEvent, CallRow>> {
    const firsts = events.filter((event) => this.seen.firstOf(legKey(event)) === event.carrierEventId);
    if (firsts.length === 0) return new Map();
    const calls = await this.transitions.callsNow(firsts.map((event) => event.ourLeg!.callId));
    return new Map(firsts.flatMap((event) => {
      const call = calls.get(event.ourLeg!.callId);
      return call ? [[event, call]] : [];
    }));
  }

  /** The events' rows, their calls' turns, and the calls and legs where `decides` holds, locked (CallTransitions.lockedLegsCte). */
  private lockedLegs(run: EventBatchRun, events: CallEvent[], decides: string, input = this.legsInput(run, events), columns = ''): string {
    const turns = run.takeCallTurns('call_session_id');
    const callIds = events.flatMap((event) => (ourTelnyxLeg(event) ? [event.ourLeg!.callId] : []));
    return this.transitions.lockedLegsCte(run.stmt, 'call_legs_decided', input, turns, decides, callIds, columns);
  }

  /** The events' input rows (the leg each names), with `columns` more from `more`. */
  private legsInput(run: EventBatchRun, events: CallEvent[], columns = '', more: (event: CallEvent) => object = () => ({})): string {
    return run.input(
      `kind text, carrier text, call_session_id text, control_id text, call_id text, target_index int, attempt int, occurred_at timestamptz${columns && `, ${columns}`}`,
      events.map((event) => {
        const leg = ourTelnyxLeg(event) ? event.ourLeg : undefined;
        return {
          kind: event.kind, carrier: event.carrier, call_session_id: leg ? event.callSessionId : null, control_id: event.carrierCallId,
          call_id: leg?.callId ?? null, target_index: leg?.target ?? null, attempt: leg?.attempt ?? null, occurred_at: event.occurredAt, ...more(event),
        };
      }),
    );
  }
}

/** The hand-off's columns of an input row (handOffRow). */
const HAND_OFF_COLUMNS = 'hangup_cause text, expected_plan jsonb, caller_control_id text, next_plan jsonb, new_leg_id text, new_target int, new_attempt int, new_to text, batch text, commands jsonb';

/**
 * A leg's first hangup as a hand-off, decided in JS from `call` as read before the statement
 * (CallFlow.claimNextStep's decision, without its CAS: the statement's): the plan it expects and
 * the plan after, the next try's leg (a new id) and the step's commands. No plan, or none for this
 * leg's try (not its turn, a call over): expected_plan null, which no call matches.
 */
function handOffRow(flow: CallFlow, call: CallRow | undefined, event: CallEvent): object {
  const row = { hangup_cause: event.hangupCause ?? 'unspecified' };
  const plan = call?.ring_plan;
  const decision = call && plan && call.status === 'ringing' && !call.ended_at ? afterLegEnded(plan, event.ourLeg!, event.endReason ?? 'failed') : undefined;
  if (!call || !decision) return row;
  const { step } = decision;
  const leg = step.kind === 'dial' ? ({ id: newId(IdPrefix.CallLeg), call_id: call.id, target_index: step.leg.target, attempt: step.leg.attempt, to_number: step.to } as LegRow) : undefined;
  const queued = flow.ringStepCommands({ ...call, ring_plan: decision.plan }, step, leg);
  return {
    ...row, expected_plan: plan, caller_control_id: call.caller_control_id, next_plan: decision.plan,
    new_leg_id: leg?.id ?? null, new_target: leg?.target_index ?? null, new_attempt: leg?.attempt ?? null, new_to: leg?.to_number ?? null,
    batch: queued?.batch ?? null, commands: queued?.commands ?? null,
  };
}

/** A repeated answer of the leg that won and is still its call's live winner (legAnswers). */
const REPEATED_ANSWER = 'l.control_id = i.control_id AND l.ended_at IS NULL AND c.ended_at IS NULL AND c.answered_leg = l.id';

/**
 * The winning answer (legAnswers): the leg live and ours (named by this physical leg, or none
 * yet), its call ringing and not ended with the cursor on its try (answerByLeg's guard), with a
 * caller's leg to join.
 */
const WINS = `l.ended_at IS NULL AND (l.control_id IS NULL OR l.control_id = i.control_id)
  AND c.status = 'ringing' AND c.ended_at IS NULL AND c.answered_leg IS NULL AND ${onCursor('c', 'l')}
  AND c.caller_control_id IS NOT NULL`;

/** A repeated hangup of a leg (legHangups): its own physical leg ended it, and nothing is left for it to end. */
const REPEATED_HANGUP = 'l.control_id = i.control_id AND l.ended_at IS NOT NULL AND (c.ended_at IS NOT NULL OR (c.ring_plan IS NOT NULL AND c.answered_leg IS DISTINCT FROM l.id))';

/**
 * A hand-off (legHangups): the leg's first end by the physical leg kept for its try (or none
 * named yet), on a call still ringing, not answered by this leg, whose plan is the one the
 * decision was taken from (the cursor's compare-and-set, checked again by its UPDATE).
 */
const HAND_OFF = `i.expected_plan IS NOT NULL AND l.ended_at IS NULL AND (l.control_id IS NULL OR l.control_id = i.control_id)
  AND c.status = 'ringing' AND c.ended_at IS NULL AND c.answered_leg IS DISTINCT FROM l.id
  AND c.ring_plan = i.expected_plan AND c.caller_control_id IS NOT DISTINCT FROM i.caller_control_id`;

/** An input row `i` is ready when the locked rows decided it (`decided`: CTE with event_id). */
export function readyIn(decided: string): (row: string) => string {
  return (row) => `EXISTS (SELECT FROM ${decided} d WHERE d.event_id = ${row}.event_id)`;
}
