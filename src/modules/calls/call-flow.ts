import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import type { Tx } from '../../platform/database/tx.js';
import type { CteStatement } from '../../platform/database/cte-statement.js';
import { CallJoinTimeoutJob, CallTranscriptJob } from './calls.jobs.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { UsageLedger } from '../billing/usage-ledger.js';
import { afterLegEnded, type LegEnd, type RingDecision, type RingStep } from '../sequential-ring/ring-plan.js';
import { CustomerEvents } from '../webhooks/customer-events.js';
import type { CustomerEventType } from '../webhooks/event-types.js';
import { CallControlCommands, type QueuedCommand } from './call-control-commands.js';
import { CallTransitions } from './call-transitions.js';
import { toCallView, type CallRow, type LegRow } from './call-view.js';

/** What a step of the flow did, for the call's timeline. */
/** `stale`: the event came from a leg that was no longer live or not the plan's current try: it did nothing but hang that leg up. */
export const FLOW_OUTCOMES = ['applied', 'duplicate', 'superseded', 'ignored', 'stale'] as const;
export type FlowOutcome = (typeof FLOW_OUTCOMES)[number];

export type KnownLeg = LegRow & { control_id: string };

/**
 * How a call ends (endCall): the duration the carrier reported with its final status, a dial it
 * refused, and the hangup event that ended it (our stored event's id and the carrier's: the cause
 * of the call's charge).
 */
export interface EndOptions {
  reportedSeconds?: number;
  failed?: boolean;
  hangup?: { id: string; carrierEventId: string };
}

/** The hangup a carrier event is, as endCall names it: `context` carries our stored event's id, `event` the carrier's. */
export function hangupOf(event: { carrierEventId: string }, context: { carrierEventId: string }): EndOptions['hangup'] {
  return { id: context.carrierEventId, carrierEventId: event.carrierEventId };
}
/** The customer event that announces each way a call can end. */
const END_EVENTS = { completed: 'call.completed', missed: 'call.missed', failed: 'call.failed' } as const satisfies Record<string, CustomerEventType>;
const known = (leg: LegRow): leg is KnownLeg => leg.control_id !== null;

/**
 * The steps of a call that several triggers share (a carrier event, a refused dial, the join
 * timeout): moving the ring plan on after a leg stopped ringing, and ending the call. Callers
 * hold the call row's lock; every step is a guarded transition, and its commands, customer event
 * and usage row commit with it.
 */
@Injectable()
export class CallFlow {
  constructor(
    private readonly transitions: CallTransitions,
    private readonly commands: CallControlCommands,
    private readonly events: CustomerEvents,
    private readonly outbox: OutboxService,
    private readonly usage: UsageLedger,
    private readonly config: AppConfig,
  ) {}

  /**
   * A leg we dialed for the ring plan stopped ringing (hangup before answer, refused dial, join
   * timeout). The plan moves on only by the cursor's compare-and-set from this leg's own target
   * and try: a late or repeated report of an earlier leg cannot move it.
   */
  async advanceAfterLeg(tx: Tx, call: CallRow, leg: LegRow, end: LegEnd): Promise<FlowOutcome> {
    if (!call.ring_plan) return 'ignored';
    const decision = await this.claimNextStep(tx, call, leg, end);
    if (!decision) return 'superseded';
    await this.applyRingStep(tx, { ...call, ring_plan: decision.plan }, decision);
    return 'applied';
  }

  /**
   * The plan's next step after `leg` stopped ringing, claimed by the cursor's compare-and-set;
   * undefined when it is not that leg's turn, or the turn was taken (an answer, the caller
   * leaving, a repeated report). Whoever gets a decision carries it out, by commands or in a reply.
   */
  async claimNextStep(tx: Tx, call: CallRow, leg: LegRow, end: LegEnd): Promise<RingDecision | undefined> {
    if (!call.ring_plan) return undefined;
    const decision = afterLegEnded(call.ring_plan, { target: leg.target_index, attempt: leg.attempt }, end);
    if (!decision) return undefined;
    return (await this.transitions.claimRingTurn(tx, call.id, call.ring_plan, decision.plan)) ? decision : undefined;
  }

  /** Carries out the step a plan decision names: dial a target, or run the fallback. */
  async applyRingStep(tx: Tx, call: CallRow, { step }: RingDecision): Promise<void> {
    const leg = step.kind === 'dial' ? await this.transitions.addLeg(tx, call.id, { ...step.leg, to: step.to }) : undefined;
    if (step.kind === 'dial' && !leg) return;
    const queued = this.ringStepCommands(call, step, leg);
    if (queued) await this.commands.queue(tx, call.id, queued.batch, queued.commands);
  }

  /**
   * The commands a ring step queues, and the batch (the job's id) that names its intent: a dial
   * of `leg`, the leg row it created; the fallback's (undefined when the call has no caller's leg
   * to act on). The transaction (applyRingStep) and the set statement (CallEventSets) queue the same.
   */
  ringStepCommands(call: CallRow, step: RingStep, leg?: LegRow): { batch: string; commands: QueuedCommand[] } | undefined {
    if (step.kind === 'dial') return leg && { batch: `${leg.id}-dial`, commands: [this.commands.dial(call, leg, step.timeoutSecs)] };
    if (!call.caller_control_id) return undefined;
    if (step.kind === 'voicemail') return { batch: `${call.id}-voicemail`, commands: [this.commands.answerCaller(call), this.commands.recordVoicemail(call)] };
    // No target answered: hang up the caller; its hangup ends the call as missed.
    return { batch: `${call.id}-fallback-hangup`, commands: [this.commands.hangupCaller(call.caller_control_id, call.id)] };
  }

  /** A leg won the answer: join the caller to it (and transcribe), and watch for a join that never comes. */
  async joinWinner(tx: Tx, call: CallRow, leg: KnownLeg): Promise<void> {
    const { batch, commands } = this.joinCommands(call, leg);
    await this.commands.queue(tx, call.id, batch, commands);
    await this.outbox.enqueue(tx, {
      job: CallJoinTimeoutJob,
      data: { callId: call.id, legId: leg.id },
      jobId: `join-timeout-${leg.id}`,
      runAt: new Date(Date.now() + this.config.DIAL_JOIN_TIMEOUT_SECONDS * 1000),
    });
  }

  /** The commands that join the caller to the leg that won (joinWinner; joinCommandsSql is the set statement's twin), and their batch. */
  joinCommands(call: CallRow, leg: KnownLeg): { batch: string; commands: QueuedCommand[] } {
    // Each step names the leg it joins: it is sent only while that leg is still the live winner.
    const commands: QueuedCommand[] = [this.commands.answerCaller(call, leg.id), this.commands.bridge(call, leg)];
    if (call.transcribe) commands.push(this.commands.startTranscription(call, leg.id));
    return { batch: `${leg.id}-join`, commands };
  }

  /**
   * joinCommands in SQL, over a row `w` of a set statement's winners (call_id, leg_id,
   * caller_control_id, transcribe, control_id: the call and leg as the statement locked them):
   * the same batch and commands (a test holds the two equal).
   */
  joinCommandsSql(w: string): { batch: string; commands: string } {
    const join = this.commands.joinSql(`${w}.call_id`, `${w}.caller_control_id`, `${w}.leg_id`, `${w}.control_id`);
    return {
      batch: `${w}.leg_id || '-join'`,
      commands: `jsonb_build_array(${join.answer}, ${join.bridge}) || CASE WHEN ${w}.transcribe THEN jsonb_build_array(${join.transcription}) ELSE '[]'::jsonb END`,
    };
  }

  /** joinWinner's join timeout for the winners of a set statement: one job per row of CTE `winners` (call_id, leg_id), as `stmt` writes them. */
  joinTimeoutsIn(stmt: CteStatement, winners: string): void {
    this.outbox.jobsFromCte(stmt, 'call_join_timeouts', winners, CallJoinTimeoutJob, {
      id: `'join-timeout-' || leg_id`,
      data: `jsonb_build_object('callId', call_id, 'legId', leg_id)`,
      // clock_timestamp(): from the win, after the statement's waits for its rows' locks, not from its start.
      runAt: `clock_timestamp() + make_interval(secs => ${stmt.param(this.config.DIAL_JOIN_TIMEOUT_SECONDS, 'int')})`,
      runAtLeastSeconds: this.config.DIAL_JOIN_TIMEOUT_SECONDS,
    });
  }

  /**
   * Ends the call through the hangup guard and, only when that guard ended it, bills its minutes
   * (this is where a hangup is billed), announces it,
   * hangs up every leg still up (and the caller, when a leg ended it), and queues the transcript.
   * Returns false when the call had ended already: a second hangup ends and bills nothing.
   * `call` is the row as this transaction locked it: a call that ends answered but was never
   * announced joined (the carrier's report of the join had not come) is announced answered here,
   * so every answered call gets one `call.answered` before its `call.completed`.
   * `failed`: a call our side placed that the carrier refused to dial ends failed.
   */
  async endCall(tx: Tx, call: CallRow, at: string, cause: string | undefined, endedBy: 'caller' | LegRow, options: EndOptions = {}): Promise<boolean> {
    const ended = await this.transitions.end(tx, call.id, at, cause, options);
    if (!ended) return false;
    if (ended.billable_minutes && ended.billable_minutes > 0) await this.bill(tx, call, ended, options);
    if (ended.status === 'completed' && !call.bridged_at) await this.announce(tx, ended, 'call.answered');
    await this.announce(tx, ended, END_EVENTS[ended.status as keyof typeof END_EVENTS]);
    const legsUp = await this.transitions.closeLegsOfEndedCall(tx, call.id, at);
    const hangups = legsUp.filter((leg) => endedBy === 'caller' || leg.id !== endedBy.id).map((leg) => this.commands.hangupLeg(leg));
    if (endedBy !== 'caller' && call.caller_control_id) hangups.push(this.commands.hangupCaller(call.caller_control_id, call.id));
    await this.commands.queue(tx, call.id, `${call.id}-ended`, hangups);
    if (ended.transcribe && ended.answered_at) {
      await this.outbox.enqueue(tx, {
        job: CallTranscriptJob,
        data: { callId: call.id },
        jobId: `transcript-${call.id}`,
        runAt: new Date(Date.now() + this.config.CALL_TRANSCRIPT_SETTLE_MS),
      });
    }
    return true;
  }

  /** The minutes of a call the hangup guard just ended, with the hangup that won as their cause. */
  private async bill(tx: Tx, call: CallRow, ended: CallRow, { reportedSeconds, hangup }: EndOptions): Promise<void> {
    const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());
    await this.usage.record(tx, {
      accountId: ended.account_id, kind: 'call_minutes', resourceId: ended.id, quantity: ended.billable_minutes!,
      cause: {
        resource: { type: 'call', id: ended.id }, transition: `${call.status} → ${ended.status}`, settled_by: null, carrier: ended.carrier, carrier_resource_id: ended.carrier_call_id,
        carrier_events: hangup ? [{ id: hangup.id, carrier_event_id: hangup.carrierEventId, role: 'hangup', occurred_at: iso(ended.ended_at) }] : [],
        price_rule: {
          unit: 'minute', answered_at: iso(ended.answered_at), ended_at: iso(ended.ended_at), duration_seconds: ended.duration_seconds,
          duration_source: reportedSeconds === undefined ? 'answered_at_to_ended_at' : 'carrier_reported', counted: 'ceil(duration_seconds / 60), at least 1',
        },
      },
    });
  }

  /**
   * Hangs up a physical leg the carrier named for one of our legs that must not stay up: the leg
   * itself (`ours`: its call or the leg ended while it came up), or a second physical leg of the
   * same try (a stray), by the id the carrier named it with.
   */
  async hangUpPhysicalLeg(tx: Tx, callId: string, legId: string, controlId: string, ours: boolean): Promise<void> {
    const hangup = ours ? this.commands.hangupLeg({ id: legId, control_id: controlId }) : this.commands.hangupStray(legId, controlId);
    await this.commands.queue(tx, callId, hangup.commandId, [hangup]);
  }

  /** Hangs up a leg of ours that must not stay up (it lost the answer race, or its call is over). */
  async hangUpLeg(tx: Tx, call: CallRow, leg: LegRow): Promise<void> {
    if (known(leg)) await this.hangUpPhysicalLeg(tx, call.id, leg.id, leg.control_id, true);
  }

  /**
   * The customer event for a transition that just changed `call`: the call as the API shows it.
   * Its legs are read by the statement that writes the event (one round trip, not two).
   */
  async announce(tx: Tx, call: CallRow, type: CustomerEventType): Promise<void> {
    await this.events.emit(tx, call.account_id, type, toCallView(call, []), (stmt) => ({ legs: this.transitions.legsViewSql(stmt, call.id) }));
  }
}
