import { Injectable } from '@nestjs/common';
import type { CallEvent } from '../../carriers/normalized-event.js';
import { DecidesCarrierEventsInSets, type EventBatchRun } from '../ingest/carrier-event-handlers.js';
import { CallTimeline } from './call-timeline.js';
import { CallTransitions } from './call-transitions.js';

/** Most event keys remembered as seen (RecentKeys): a few seconds of a busy process's leg events. */
const SEEN_MAX = 20_000;

/** A bounded set of recent keys, the oldest forgotten first. */
class RecentKeys {
  private readonly keys = new Set<string>();

  /** Whether `key` was seen before; remembers it. */
  seenBefore(key: string): boolean {
    if (this.keys.has(key)) return true;
    this.keys.add(key);
    if (this.keys.size > SEEN_MAX) this.keys.delete(this.keys.values().next().value as string);
    return false;
  }
}

/** Events of one call never share a set statement: the later one goes into the next, in arrival order. */
const byCall = (event: CallEvent) => event.callSessionId;

/** A leg we dialed on Telnyx (the carrier whose call events reach these handlers, CallCarrierEvents). */
const ourTelnyxLeg = (event: CallEvent) => event.carrier === 'telnyx' && event.ourLeg !== undefined;

/**
 * The call events that change no call, or only a leg's own report, decided in sets: the events
 * of many calls in one statement per kind (EventBatchRun), under each call's turn and its rows'
 * locks, with the same guards and the same timeline entry as CallCarrierEvents, which decides
 * every other case (an event these do not find ready goes to it at once, in a transaction):
 *  - a leg's call.initiated while the leg is live and its call goes on: the leg keeps the first
 *    physical leg named and rings;
 *  - a repeat of a leg's hangup (the leg ended by its own physical leg, nothing left for it to
 *    end) and of a leg's answer (it won, and is still the live winner): recorded `duplicate`.
 * A duplicate then costs a share of one statement, not a transaction of its own.
 */
@Injectable()
export class CallEventSets {
  /** Leg hangups and answers this process has run (RecentKeys), by kind and physical leg. */
  private readonly seen = new RecentKeys();

  constructor(
    private readonly transitions: CallTransitions,
    private readonly timeline: CallTimeline,
  ) {}

  /**
   * Which leg hangups and answers are offered to the set statements: those of a physical leg
   * whose same kind of event this process ran before (the twin of an event delivered twice runs
   * after the first, in its call's turn). A hint only: the first goes straight to its transaction
   * (a hand-off, an answer), sparing it a set statement it would not be ready in; what is a repeat
   * is decided by the statement, under the row locks.
   */
  repeatOfOurLeg(event: CallEvent): boolean {
    return ourTelnyxLeg(event) && this.seen.seenBefore(`${event.kind} ${event.carrierCallId}`);
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
   * A repeated hangup of a leg: its physical leg ended it (a leg only ends with a physical leg
   * named by its own hangup; written off, it had none) and, that leg being the winner or the only
   * leg, the call is over too. CallCarrierEvents.hangupOnCall then ends nothing: `duplicate`.
   */
  @DecidesCarrierEventsInSets('call.hangup', { key: byCall, when: 'repeatOfOurLeg' })
  legHangupRepeats(events: CallEvent[], run: EventBatchRun): void {
    this.duplicates(run, events, 'l.control_id = i.control_id AND l.ended_at IS NOT NULL AND (c.ended_at IS NOT NULL OR (c.ring_plan IS NOT NULL AND c.answered_leg IS DISTINCT FROM l.id))');
  }

  /** A repeated answer of the leg that won and is still its call's live winner: CallCarrierEvents.answeredOnCall records `duplicate`. */
  @DecidesCarrierEventsInSets('call.answered', { key: byCall, when: 'repeatOfOurLeg' })
  legAnswerRepeats(events: CallEvent[], run: EventBatchRun): void {
    this.duplicates(run, events, 'l.control_id = i.control_id AND l.ended_at IS NULL AND c.ended_at IS NULL AND c.answered_leg = l.id');
  }

  /** Events that change nothing where `decides` holds: consumed with the note `duplicate`, and their timeline entry. */
  private duplicates(run: EventBatchRun, events: CallEvent[], decides: string): void {
    const legs = this.lockedLegs(run, events, decides);
    const consumed = run.consume({ ready: readyIn(legs), note: () => `'duplicate'` });
    this.timeline.recordManyIn(run.stmt, legs, consumed, { outcome: 'duplicate' });
  }

  /** The events' rows, their calls' turns, and the calls and legs where `decides` holds, locked (CallTransitions.lockedLegsCte). */
  private lockedLegs(run: EventBatchRun, events: CallEvent[], decides: string): string {
    const legs = events.map((event) => (ourTelnyxLeg(event) ? event.ourLeg : undefined));
    const input = run.input(
      'kind text, carrier text, call_session_id text, control_id text, call_id text, target_index int, attempt int, occurred_at timestamptz',
      events.map((event, k) => {
        const leg = legs[k];
        return {
          kind: event.kind, carrier: event.carrier, call_session_id: leg ? event.callSessionId : null, control_id: event.carrierCallId,
          call_id: leg?.callId ?? null, target_index: leg?.target ?? null, attempt: leg?.attempt ?? null, occurred_at: event.occurredAt,
        };
      }),
    );
    const turns = run.takeCallTurns('call_session_id');
    const callIds = legs.flatMap((leg) => (leg ? [leg.callId] : []));
    return this.transitions.lockedLegsCte(run.stmt, 'call_legs_decided', input, turns, decides, callIds);
  }
}

/** An input row `i` is ready when the locked rows decided it (`decided`: CTE with event_id). */
function readyIn(decided: string): (row: string) => string {
  return (row) => `EXISTS (SELECT FROM ${decided} d WHERE d.event_id = ${row}.event_id)`;
}
