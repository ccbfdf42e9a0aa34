import { Injectable } from '@nestjs/common';
import type { CallEvent } from '../../carriers/normalized-event.js';
import type { Tx } from '../../platform/database/tx.js';
import { PhoneNumbers } from '../numbers/phone-numbers.service.js';
import { startPlan, type RingDecision } from '../sequential-ring/ring-plan.js';
import { CallFlow } from './call-flow.js';
import { CallTransitions } from './call-transitions.js';
import type { CallRow } from './call-view.js';

/** How an incoming call started: what each carrier's flow then says or does differs. */
export type IncomingCallStart =
  | { kind: 'not_ours'; to: string }
  /** Another delivery of the call's start recorded it: this one decides nothing. */
  | { kind: 'duplicate' }
  | { kind: 'missed'; call: CallRow }
  | { kind: 'ringing'; call: CallRow; decision: RingDecision };

/** How a call our customer's own endpoint placed through the carrier started. */
export type OwnEndpointCallStart = { kind: 'not_ours'; from: string } | { kind: 'duplicate' } | { kind: 'started'; call: CallRow };

/** The start of an incoming call, shared by the call-control flow (Telnyx) and the reply flow (Twilio). */
@Injectable()
export class IncomingCalls {
  constructor(
    private readonly transitions: CallTransitions,
    private readonly flow: CallFlow,
    private readonly numbers: PhoneNumbers,
  ) {}

  /**
   * A call to one of our numbers, recorded once (create's ON CONFLICT on the carrier's call id)
   * and announced: `missed` when calls are off for the number (still a row: the carrier's log
   * will list this call), else `ringing` with the plan's first step. `canTranscribe`: whether this
   * carrier's flow can transcribe; a call it cannot says `transcribe: false`.
   */
  async start(tx: Tx, event: CallEvent, { canTranscribe }: { canTranscribe: boolean }): Promise<IncomingCallStart> {
    const to = event.to ?? '';
    const route = await this.numbers.findVoiceRoute(tx, to);
    if (!route) return { kind: 'not_ours', to };
    const base = { accountId: route.accountId, direction: 'inbound' as const, from: event.from ?? 'anonymous', to, carrier: event.carrier, carrierCallId: event.callSessionId, callerControlId: event.carrierCallId };
    if (!route.voice) {
      const call = await this.transitions.create(tx, { ...base, transcribe: false, status: 'missed', endedAt: event.occurredAt, hangupCause: 'no_voice_settings' });
      if (!call) return { kind: 'duplicate' };
      await this.flow.announce(tx, call, 'call.missed');
      return { kind: 'missed', call };
    }
    const decision = startPlan(route.voice);
    const call = await this.transitions.create(tx, { ...base, transcribe: canTranscribe && route.voice.transcribe, status: 'ringing', ringPlan: decision.plan });
    if (!call) return { kind: 'duplicate' };
    await this.flow.announce(tx, call, 'call.initiated');
    return { kind: 'ringing', call, decision };
  }

  /**
   * A call placed by the customer's own endpoint (the carrier says outgoing, and it is no leg we
   * dialed): an outbound call with no plan, never greeted as a customer calling in (read before
   * acting, docs/exactly-once.md). Recorded once (create's ON CONFLICT) when the calling number is ours.
   */
  async startOwnEndpointCall(tx: Tx, event: CallEvent): Promise<OwnEndpointCallStart> {
    const from = event.from ?? '';
    const owner = await this.numbers.findVoiceRoute(tx, from);
    if (!owner) return { kind: 'not_ours', from };
    const call = await this.transitions.create(tx, {
      accountId: owner.accountId, direction: 'outbound', from, to: event.to ?? 'unknown', carrier: event.carrier,
      carrierCallId: event.callSessionId, callerControlId: event.carrierCallId, transcribe: false, status: 'ringing',
    });
    if (!call) return { kind: 'duplicate' };
    await this.flow.announce(tx, call, 'call.initiated');
    return { kind: 'started', call };
  }
}
