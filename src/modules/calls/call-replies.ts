import { Injectable } from '@nestjs/common';
import type { CallReply } from '../../carriers/call-reply.js';
import type { CallEvent, CallRecordingSaved, NormalizedEvent } from '../../carriers/normalized-event.js';
import type { Tx } from '../../platform/database/tx.js';
import type { CarrierEventContext } from '../ingest/carrier-event-handlers.js';
import type { RingDecision } from '../sequential-ring/ring-plan.js';
import { CallFlow, hangupOf, type FlowOutcome } from './call-flow.js';
import { CallTimeline } from './call-timeline.js';
import { CallTransitions } from './call-transitions.js';
import { IncomingCalls } from './incoming-calls.js';
import type { CallRow, LegRow } from './call-view.js';

export interface DecidedReply {
  reply: CallReply;
  /** Why the event changed nothing, kept on the carrier event. */
  note?: string;
}

const HANGUP: CallReply = { kind: 'hangup' };
const NOTHING: CallReply = { kind: 'nothing' };

/**
 * Calls on a carrier that asks us what to do next and follows the answer to that request
 * (Twilio Voice): the same plan (startPlan, afterLegEnded), the same guarded statements (create,
 * the cursor's claimRingTurn, answerByLeg, end) and the same timeline as the call-control flow,
 * but each decision is returned as the reply instead of queued as commands. Ingest runs this in
 * the transaction that stores the event, so the decision and its stored reply commit together.
 * Every method locks the call first; the guards, not that lock, are what make a step count once.
 */
@Injectable()
export class CallReplies {
  constructor(
    private readonly transitions: CallTransitions,
    private readonly flow: CallFlow,
    private readonly timeline: CallTimeline,
    private readonly incomingCalls: IncomingCalls,
  ) {}

  async decide(event: NormalizedEvent, tx: Tx, context: CarrierEventContext): Promise<DecidedReply> {
    switch (event.kind) {
      case 'call.initiated':
        return this.incoming(event, tx, context);
      case 'call.hangup':
        return event.ourLeg ? this.dialEnded(event, tx, context) : this.reported(event, tx, context);
      case 'call.answered':
      case 'call.bridged':
      case 'call.status':
        return this.reported(event, tx, context);
      case 'call.recording.saved':
        return this.recordingSaved(event, tx, context);
      default:
        return { reply: NOTHING, note: `${event.kind} is not a call step` };
    }
  }

  /** A call to one of our numbers: the call row and its first dial, or a refusal (a missed row when calls are off). */
  private async incoming(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<DecidedReply> {
    if (event.direction === 'outbound') return this.ownEndpointCallingOut(event, tx, context);
    // canTranscribe false: answered calls are not transcribed on this carrier yet (no
    // transcription in the TwiML flow), so the call says so rather than announcing an empty transcript.
    const started = await this.incomingCalls.start(tx, event, { canTranscribe: false });
    switch (started.kind) {
      case 'not_ours':
        return { reply: { kind: 'reject' }, note: `no account owns ${started.to || 'the called number'}: rejected, no call recorded` };
      case 'duplicate':
        return this.duplicateStart(tx, event, context);
      case 'missed':
        this.record(started.call, undefined, event, context, 'applied', 'no voice settings: missed, rejected');
        return { reply: { kind: 'reject' } };
      case 'ringing': {
        const reply = await this.carryOut(tx, started.call, started.decision, event.occurredAt);
        this.record(started.call, undefined, event, context, 'applied');
        return { reply };
      }
    }
  }

  /**
   * The voice URL asked about a call our own side placed (Direction outbound-api / outbound-dial):
   * not a customer calling in, so no ring plan and no greeting; recorded as an outbound call when
   * it is from one of our numbers, and told nothing more.
   */
  private async ownEndpointCallingOut(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<DecidedReply> {
    const started = await this.incomingCalls.startOwnEndpointCall(tx, event);
    if (started.kind === 'not_ours') return { reply: HANGUP, note: `outgoing call from ${started.from || 'an unknown number'}, which no account owns: not recorded` };
    if (started.kind === 'duplicate') return this.duplicateStart(tx, event, context);
    this.record(started.call, undefined, event, context, 'applied', 'outbound call from your own side: no ring plan');
    return { reply: NOTHING };
  }

  /** The call exists under another delivery of its start: this one decides nothing. */
  private async duplicateStart(tx: Tx, event: CallEvent, context: CarrierEventContext): Promise<DecidedReply> {
    const call = await this.transitions.lockBySession(tx, event.carrier, event.callSessionId);
    if (call) this.record(call, undefined, event, context, 'duplicate');
    return { reply: HANGUP, note: 'the call was started by another request' };
  }

  /**
   * A dial we answered with ended (its result names our call and target): after an answer the
   * talk is over; otherwise the cursor's compare-and-set from this target decides the next step.
   */
  private async dialEnded(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<DecidedReply> {
    const found = await this.transitions.lockByLeg(tx, event.carrier, event.ourLeg!);
    if (!found?.leg || found.call.carrier_call_id !== event.callSessionId) return { reply: HANGUP, note: 'not a dial of a call of ours' };
    const { call, leg } = found;
    await this.transitions.claimLockedLegControl(tx, leg, event.carrierCallId);
    if (event.answered) return this.talkEnded(tx, call, leg, event, context);
    const legEnded = await this.transitions.endLeg(tx, leg, event.occurredAt, event.hangupCause ?? 'unspecified');
    if (event.callerLeft) {
      // The caller hung up while this target rang: the plan must not move on (no phantom dial,
      // no voicemail answering a call that is over); the call ends missed, once.
      const ended = await this.flow.endCall(tx, call, event.occurredAt, 'caller_left', 'caller', { hangup: hangupOf(event, context) });
      const note = 'the caller had left while this target rang: the plan stops here';
      this.record(call, leg, event, context, ended ? 'applied' : 'superseded', note);
      return { reply: HANGUP, note };
    }
    const decision = legEnded ? await this.flow.claimNextStep(tx, call, leg, event.endReason ?? 'failed') : undefined;
    if (!decision) {
      const note = "not this dial's turn: the plan had moved on or the call is over";
      this.record(call, leg, event, context, 'superseded', note);
      return { reply: HANGUP, note };
    }
    const reply = await this.carryOut(tx, { ...call, ring_plan: decision.plan }, decision, event.occurredAt);
    this.record(call, leg, event, context, 'applied');
    return { reply };
  }

  /**
   * The target answered and the bridged talk is over: the answer race's guard records the winner
   * (unless the parent's in-progress callback already did, or the call's end came first), and
   * the call hangs up.
   */
  private async talkEnded(tx: Tx, call: CallRow, leg: LegRow, event: CallEvent, context: CarrierEventContext): Promise<DecidedReply> {
    const answeredAt = new Date(Date.parse(event.occurredAt) - (event.durationSeconds ?? 0) * 1000).toISOString();
    const won = await this.transitions.answerByLeg(tx, call.id, leg.id, answeredAt);
    if (won) await this.announceJoined(tx, won, leg, answeredAt);
    await this.transitions.endLeg(tx, leg, event.occurredAt, 'completed');
    const outcome: FlowOutcome = won ? 'applied' : call.answered_leg === leg.id ? 'duplicate' : 'superseded';
    const note = outcome === 'superseded' ? 'the call had another winner or was over' : undefined;
    this.record(call, leg, event, context, outcome, note);
    return { reply: HANGUP, note };
  }

  /**
   * Status callbacks. `in-progress` of the caller's call: with answerOnBridge the caller is
   * answered when the target the plan rings now picks up, so that try wins the answer race here
   * and the call is announced answered once. Only a final status ends the call, through the
   * hangup guard, with the carrier's duration.
   */
  private async reported(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<DecidedReply> {
    const call = await this.transitions.lockBySession(tx, event.carrier, event.callSessionId);
    if (!call) return { reply: NOTHING, note: 'no call recorded for this call: nothing to end' };
    if (event.kind === 'call.answered') return this.callerAnswered(tx, call, event, context);
    if (event.kind !== 'call.hangup') {
      const note = `progress report (${event.carrierStatus}) ends nothing`;
      this.record(call, undefined, event, context, 'ignored', note);
      return { reply: NOTHING, note };
    }
    const ended = await this.flow.endCall(tx, call, event.occurredAt, event.hangupCause, 'caller', { reportedSeconds: event.durationSeconds, hangup: hangupOf(event, context) });
    this.record(call, undefined, event, context, ended ? 'applied' : 'duplicate');
    return { reply: NOTHING, note: ended ? undefined : 'the call had ended already' };
  }

  private async callerAnswered(tx: Tx, call: CallRow, event: CallEvent, context: CarrierEventContext): Promise<DecidedReply> {
    const leg = await this.transitions.currentTry(tx, call);
    const won = leg && (await this.transitions.answerByLeg(tx, call.id, leg.id, event.occurredAt));
    if (won) await this.announceJoined(tx, won, leg, event.occurredAt);
    const note = won ? 'the target the plan rang answered: the caller is joined to it' : 'the caller was answered already (a target, or the voicemail)';
    this.record(call, leg, event, context, won ? 'applied' : 'duplicate', note);
    return { reply: NOTHING, note: won ? undefined : note };
  }

  /** With answerOnBridge the target's answer is the join: the call is announced answered once. */
  private async announceJoined(tx: Tx, call: CallRow, leg: LegRow, at: string): Promise<void> {
    const joined = await this.transitions.markJoined(tx, call.id, leg.id, at);
    if (joined) await this.flow.announce(tx, joined, 'call.answered');
  }

  private async recordingSaved(event: CallRecordingSaved, tx: Tx, context: CarrierEventContext): Promise<DecidedReply> {
    const call = await this.transitions.lockBySession(tx, event.carrier, event.callSessionId);
    if (!call) return { reply: HANGUP, note: 'no call recorded for this recording' };
    const saved = await this.transitions.saveVoicemail(tx, call.id, event.recordingUrl);
    if (saved) await this.flow.announce(tx, saved, 'call.voicemail');
    this.record(call, undefined, event, context, saved ? 'applied' : 'duplicate');
    return { reply: HANGUP };
  }

  /** A step the plan decided, as the reply: dial a target (its leg recorded), or the fallback. */
  private async carryOut(tx: Tx, call: CallRow, { step }: RingDecision, at: string): Promise<CallReply> {
    if (step.kind === 'dial') {
      await this.transitions.addLeg(tx, call.id, { ...step.leg, to: step.to });
      return { kind: 'dial', to: step.to, timeoutSecs: step.timeoutSecs, leg: { callId: call.id, ...step.leg } };
    }
    if (step.kind === 'voicemail') {
      // Recording answers the caller: the call is answered from here (status = 'ringing' guards it).
      const answered = await this.transitions.answerOwnLeg(tx, call.id, at);
      if (answered) await this.flow.announce(tx, answered, 'call.answered');
      return { kind: 'voicemail', callId: call.id };
    }
    // No target answered: the caller is hung up; the status callback ends the call as missed.
    return HANGUP;
  }

  /** The event's timeline entry, written with its processed mark (withProcessedMark). */
  private record(call: CallRow, leg: LegRow | undefined, event: NormalizedEvent & { kind: string }, context: CarrierEventContext, outcome: FlowOutcome, note?: string): void {
    const entry = { callId: call.id, carrierEventId: context.carrierEventId, eventType: event.kind, leg: leg?.id ?? 'caller', outcome, note, occurredAt: event.occurredAt, receivedAt: context.receivedAt };
    context.withProcessedMark((stmt) => this.timeline.recordIn(stmt, entry));
  }
}
