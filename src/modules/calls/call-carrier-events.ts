import { Injectable } from '@nestjs/common';
import type { CallEvent, CallRecordingSaved, CallTranscription } from '../../carriers/normalized-event.js';
import type { Tx } from '../../platform/database/tx.js';
import { HandlesCarrierEvent, NotHandledYetError, RetryLaterError, type CarrierEventContext } from '../ingest/carrier-event-handlers.js';
import { PhoneNumbers } from '../numbers/phone-numbers.service.js';
import { CallControlCommands } from './call-control-commands.js';
import { CallFlow, hangupOf, type FlowOutcome } from './call-flow.js';
import { CallTimeline } from './call-timeline.js';
import { CallTransitions, type LockedCall } from './call-transitions.js';
import type { CallRow, LegRow } from './call-view.js';
import { IncomingCalls } from './incoming-calls.js';

type AnyCallEvent = CallEvent | CallRecordingSaved | CallTranscription;

const NOT_OURS = 'not a leg of a call of ours: nothing to do';
const STALE = 'stale: the leg is not live: hung up';
/** The note of a repeated caller's call.initiated (the call exists): here and in CallStartsInSets. */
export const DUPLICATE_START_NOTE = 'duplicate call.initiated';

/**
 * What Calls does with the carrier's call events. Each handler first locks the call the event
 * belongs to (by our client_state on legs we dialed, else by the carrier's session id), so every
 * decision below is taken from the row the guards see; events of one call take turns.
 * Direction and status are read before acting (read before acting, docs/exactly-once.md): our own leg's call.initiated creates
 * nothing, an outgoing call without our state is the customer's own endpoint calling out, and
 * only hangups end a call. An event for a call not recorded yet is retried, never dropped.
 */
@Injectable()
export class CallCarrierEvents {
  constructor(
    private readonly transitions: CallTransitions,
    private readonly flow: CallFlow,
    private readonly commands: CallControlCommands,
    private readonly timeline: CallTimeline,
    private readonly numbers: PhoneNumbers,
    private readonly incomingCalls: IncomingCalls,
  ) {}

  @HandlesCarrierEvent('call.initiated')
  async initiated(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    if (!event.ourLeg) {
      const elsewhere = answeredElsewhere(event);
      if (elsewhere) return elsewhere;
      return event.direction === 'outbound' ? this.ownEndpointCallingOut(event, tx, context) : this.incoming(event, tx, context);
    }
    return this.withLockedCall(tx, event, async (found) => {
      if (!found.leg) return NOT_OURS;
      const leg = await this.liveLeg(tx, found as Required<LockedCall>, event, context);
      if (!leg) return STALE;
      await this.transitions.legRinging(tx, leg);
      this.record(found, event, context, 'ignored', 'our own leg: creates nothing');
    });
  }

  /** A call to one of our numbers: a ringing call and its first dial, a missed call, or a hangup. */
  private async incoming(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    const started = await this.incomingCalls.start(tx, event, { canTranscribe: true });
    switch (started.kind) {
      case 'not_ours':
        await this.commands.queue(tx, null, `${context.carrierEventId}-refuse`, [this.commands.hangupCaller(event.carrierCallId, context.carrierEventId)]);
        return `no account owns ${started.to || 'the called number'}: caller hung up, no call recorded`;
      case 'duplicate':
        return this.duplicateStart(tx, event, context);
      case 'missed': {
        const { call } = started;
        await this.commands.queue(tx, call.id, `${call.id}-refuse`, [this.commands.hangupCaller(event.carrierCallId, call.id)]);
        this.record({ call }, event, context, 'applied', 'no voice settings: missed, caller hung up');
        return;
      }
      case 'ringing':
        await this.flow.applyRingStep(tx, started.call, started.decision);
        this.record({ call: started.call }, event, context, 'applied');
    }
  }

  /** `outgoing` without our state: the customer's own endpoint calling out, an outbound call with no plan. */
  private async ownEndpointCallingOut(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    const started = await this.incomingCalls.startOwnEndpointCall(tx, event);
    if (started.kind === 'not_ours') return `outgoing call from ${started.from || 'an unknown number'}, which no account owns: not recorded`;
    if (started.kind === 'duplicate') return this.duplicateStart(tx, event, context);
    this.record({ call: started.call }, event, context, 'applied', 'outbound call from your own endpoint');
  }

  private async duplicateStart(tx: Tx, event: CallEvent, context: CarrierEventContext): Promise<string> {
    // ON CONFLICT waited for the first insert's commit, so the call is there and this lock finds it.
    const call = await this.transitions.lockBySession(tx, event.carrier, event.callSessionId);
    if (call) this.record({ call }, event, context, 'duplicate');
    return DUPLICATE_START_NOTE;
  }

  @HandlesCarrierEvent('call.answered')
  answered(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    return this.withLockedCall(tx, event, (found) => this.answeredOnCall(found, event, tx, context));
  }

  private async answeredOnCall(found: LockedCall, event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    const { call } = found;
    if (!found.leg) {
      // The call's own leg: a call our side placed, or the caller we answered for voicemail.
      if (call.ring_plan && call.ring_plan.phase !== 'voicemail') {
        // We answered the caller for the leg that won: the carrier's billed time starts now.
        const moved = await this.transitions.startBilledTimeAtCallerAnswer(tx, call.id, event.occurredAt);
        return this.record(found, event, context, moved ? 'applied' : 'duplicate', 'the caller answered for the leg that won: billed time starts here');
      }
      const answered = await this.transitions.answerOwnLeg(tx, call.id, event.occurredAt);
      if (answered) await this.flow.announce(tx, answered, 'call.answered');
      return this.record(found, event, context, answered ? 'applied' : 'duplicate');
    }
    const leg = await this.liveLeg(tx, found as Required<LockedCall>, event, context);
    if (!leg) return STALE;
    // The answer race: one statement picks one winner among the live legs of the plan's current try.
    const won = await this.transitions.answerByLeg(tx, call.id, leg.id, event.occurredAt);
    if (won) {
      if (call.caller_control_id) await this.flow.joinWinner(tx, won, leg);
      else await this.announceJoined(tx, won, leg.id, event.occurredAt);
      return this.record(found, event, context, 'applied');
    }
    if (call.answered_leg === leg.id) return this.record(found, event, context, 'duplicate');
    await this.flow.hangUpLeg(tx, call, leg);
    return this.record(found, event, context, 'stale', 'not the live leg of the plan\'s current try (another target answered, the leg was written off, or the call is over): leg hung up');
  }

  @HandlesCarrierEvent('call.bridged')
  bridged(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    return this.withLockedCall(tx, event, async (found) => {
      if (found.leg && !(await this.liveLeg(tx, found as Required<LockedCall>, event, context))) return STALE;
      // The join is what call.answered announces: once per call, only for the leg that won.
      const joined = await this.transitions.markJoined(tx, found.call.id, found.leg?.id, event.occurredAt);
      if (joined) await this.flow.announce(tx, joined, 'call.answered');
      return this.record(found, event, context, joined ? 'applied' : 'duplicate');
    });
  }

  @HandlesCarrierEvent('call.hangup')
  hangup(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    return this.withLockedCall(tx, event, (found) => this.hangupOnCall(found, event, tx, context));
  }

  private async hangupOnCall(found: LockedCall, event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    const { call } = found;
    if (!found.leg) {
      const ended = await this.flow.endCall(tx, call, event.occurredAt, event.hangupCause, 'caller', { hangup: hangupOf(event, context) });
      return this.record(found, event, context, ended ? 'applied' : 'duplicate');
    }
    const control = await this.transitions.claimLockedLegControl(tx, found.leg, event.carrierCallId);
    if (!control.ours) return this.record(found, event, context, 'stale', 'the hangup of another physical leg than the one kept for this try: changes nothing');
    const leg = found.leg;
    const legEnded = await this.transitions.endLeg(tx, leg, event.occurredAt, event.hangupCause ?? 'unspecified');
    if (call.answered_leg === leg.id || !call.ring_plan) {
      // The answered leg, or the only leg of a call we placed: its end is the call's end.
      const ended = await this.flow.endCall(tx, call, event.occurredAt, event.hangupCause, leg, { hangup: hangupOf(event, context) });
      return this.record(found, event, context, ended ? 'applied' : 'duplicate');
    }
    if (!legEnded) return this.record(found, event, context, 'duplicate');
    const outcome = await this.flow.advanceAfterLeg(tx, call, leg, event.endReason ?? 'failed');
    return this.record(found, event, context, outcome, outcome === 'superseded' ? 'not this leg\'s turn: the plan had moved on' : undefined);
  }

  /**
   * The leg an event of a leg we dialed is about, when it may act: the carrier's id for it is
   * the one we keep for that try (the first named), and the leg is not over. Otherwise the
   * physical leg the event names is hung up (the carrier says it is up) and the event recorded
   * `stale`; undefined then.
   */
  private async liveLeg(tx: Tx, found: Required<LockedCall>, event: CallEvent, context: CarrierEventContext): Promise<(LegRow & { control_id: string }) | undefined> {
    const { call, leg } = found;
    const control = await this.transitions.claimLockedLegControl(tx, leg, event.carrierCallId);
    if (control.ours && !control.over && !call.ended_at) return { ...leg, control_id: event.carrierCallId };
    await this.flow.hangUpPhysicalLeg(tx, call.id, leg.id, event.carrierCallId, control.ours);
    const why = !control.ours ? 'a second physical leg for this try' : 'a leg that is over (written off, or its call ended)';
    this.record(found, event, context, 'stale', `${why}: hung up`);
    return undefined;
  }

  /** A call our side placed: its one leg answering is the join. */
  private async announceJoined(tx: Tx, call: CallRow, legId: string, at: string): Promise<void> {
    const joined = await this.transitions.markJoined(tx, call.id, legId, at);
    if (joined) await this.flow.announce(tx, joined, 'call.answered');
  }

  /** Progress reports (ringing, early media) never end a call. */
  @HandlesCarrierEvent('call.status')
  progress(event: CallEvent, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    return this.withLockedCall(tx, event, (found) => this.record(found, event, context, 'ignored', `progress report (${event.carrierStatus}) ends nothing`));
  }

  @HandlesCarrierEvent('call.recording.saved')
  recordingSaved(event: CallRecordingSaved, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    return this.withLockedCall(tx, event, async (found) => {
      const saved = await this.transitions.saveVoicemail(tx, found.call.id, event.recordingUrl);
      if (saved) await this.flow.announce(tx, saved, 'call.voicemail');
      return this.record(found, event, context, saved ? 'applied' : 'duplicate');
    });
  }

  @HandlesCarrierEvent('call.transcription')
  transcription(event: CallTranscription, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    return this.withLockedCall(tx, event, async (found) => {
      if (!event.final) return this.record(found, event, context, 'ignored', 'interim fragment');
      const added = await this.transitions.addTranscriptFragment(tx, found.call.id, event.occurredAt, event.text);
      return this.record(found, event, context, added ? 'applied' : 'duplicate');
    });
  }

  /**
   * Every handler's preamble: a carrier whose calls are decided elsewhere (or not built) stops
   * here; otherwise the call the event belongs to is locked, and `act` runs with it (an event of
   * no call of ours changes nothing).
   */
  private async withLockedCall(tx: Tx, event: AnyCallEvent, act: (found: LockedCall) => Promise<string | void> | string | void): Promise<string | void> {
    const elsewhere = answeredElsewhere(event);
    if (elsewhere) return elsewhere;
    const found = await this.locate(tx, event);
    return found ? act(found) : NOT_OURS;
  }

  /**
   * The call an event belongs to, locked. Legs we dialed are named by our client_state (a state
   * naming a call of another session is not ours); the caller's leg by the session. A session we
   * have no call for yet, to or from one of our numbers, is retried: its call.initiated may not
   * have been processed yet.
   */
  private async locate(tx: Tx, event: AnyCallEvent): Promise<LockedCall | undefined> {
    if (event.ourLeg) {
      const found = await this.transitions.lockByLeg(tx, event.carrier, event.ourLeg);
      if (!found) return undefined;
      const { call } = found;
      if (call.carrier_call_id === call.id) await this.transitions.nameSession(tx, call.id, event.callSessionId);
      else if (call.carrier_call_id !== event.callSessionId) return undefined;
      return found;
    }
    const call = await this.transitions.lockBySession(tx, event.carrier, event.callSessionId);
    if (!call) {
      const numbers = 'from' in event ? [event.to, event.from] : [];
      for (const number of numbers) {
        if (number && (await this.numbers.findVoiceRoute(tx, number))) throw new RetryLaterError(`no call recorded for ${event.carrier} session ${event.callSessionId} yet`);
      }
      if (numbers.length === 0) throw new RetryLaterError(`no call recorded for ${event.carrier} session ${event.callSessionId} yet`);
      return undefined;
    }
    // An event that names no leg (a saved recording: we record only the caller's leg) is the caller's.
    return event.carrierCallId === undefined || call.caller_control_id === event.carrierCallId ? { call } : undefined;
  }

  /** The event's timeline entry, written with its processed mark (withProcessedMark); its note unless applied. */
  private record(found: LockedCall, event: AnyCallEvent, context: CarrierEventContext, outcome: FlowOutcome, note?: string): string | void {
    const entry = { callId: found.call.id, carrierEventId: context.carrierEventId, eventType: event.kind, leg: found.leg?.id ?? 'caller', outcome, note, occurredAt: event.occurredAt, receivedAt: context.receivedAt };
    context.withProcessedMark((stmt) => this.timeline.recordIn(stmt, entry));
    if (outcome !== 'applied') return note ?? outcome;
  }
}

/**
 * Call control (Telnyx) only. Twilio Voice is decided in the request that asks (CallReplies), so
 * its events are processed when stored and never reach these handlers; one stored before that
 * flow existed can no longer be answered (Twilio got no TwiML then), so it changes nothing.
 * Vonage has no voice here: such an event waits unconsumed.
 */
function answeredElsewhere(event: AnyCallEvent): string | undefined {
  if (event.carrier === 'twilio') return 'Twilio Voice is decided in the request that asks; a stored callback changes nothing';
  if (event.carrier !== 'telnyx') throw new NotHandledYetError(`${event.carrier} call flows are not built yet`);
  return undefined;
}
