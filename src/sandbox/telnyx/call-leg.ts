import type { Chaos } from '../chaos.js';
import type { Hangup } from './call-hangups.js';
import type { CallWebhookQueue } from './call-webhook-queue.js';
import type { CarrierWebhook } from '../webhook-series.js';

/** Telnyx's `state` of a leg: an incoming call waits `parked`, a dialed one rings `bridging`. */
export type LegState = 'parked' | 'bridging' | 'answered' | 'bridged' | 'hangup';

export interface Recording {
  id: string;
  startedAt: Date;
  channels: 'single' | 'dual';
  /** http://<sandbox>: where GET /sandbox/recordings/{id}.{mp3,wav} is served. */
  urlBase: string;
}

/** One leg of an emulated call, identified by its call_control_id. */
export interface CallLeg {
  callControlId: string;
  callLegId: string;
  callSessionId: string;
  connectionId: string;
  direction: 'incoming' | 'outgoing';
  from: string;
  to: string;
  /** Base64, opaque: set by the dial or by a command's client_state, echoed on every event of this leg. */
  clientState: string | null;
  state: LegState;
  webhookUrl: string;
  startedAt: Date;
  answeredAt?: Date;
  endedAt?: Date;
  hangup?: Hangup;
  /** call_control_id of the leg it is bridged with. */
  bridgedWith?: string;
  /** The dial's link_to (the caller's leg). */
  linkTo?: string;
  recording?: Recording;
  transcribing: boolean;
  /** What is said on this leg (a target's `transcript`, or the inbound call's). */
  transcript: string[] | null;
  /** Incoming: the handset hangs up this long after the call is answered. */
  talkMs: number | null;
  /** `answer_then_drop`: the leg's events since its answer, sent only after its `call.hangup`. */
  heldUntilHangup?: CarrierWebhook[];
  /** Cancels of this leg's pending timers, run when it ends. */
  timers: Set<() => void>;
}

/** The legs that share one call_session_id: the first is the caller (inbound) or the app's outbound call. */
export interface CallSession {
  id: string;
  legs: CallLeg[];
  /** Chaos of the request that started the call: every webhook of the call goes through it. */
  chaos: Chaos;
  queue: CallWebhookQueue;
}

export const isAlive = (leg: CallLeg): boolean => leg.state !== 'hangup';
export const isAnswered = (leg: CallLeg): boolean => leg.answeredAt !== undefined;

/** GET /sandbox/calls/{call_control_id}: the leg as the sandbox sees it. */
export function legView(leg: CallLeg) {
  return {
    call_control_id: leg.callControlId,
    call_leg_id: leg.callLegId,
    call_session_id: leg.callSessionId,
    direction: leg.direction,
    from: leg.from,
    to: leg.to,
    state: leg.state,
    is_alive: isAlive(leg),
    client_state: leg.clientState,
    link_to: leg.linkTo ?? null,
    bridged_with: leg.bridgedWith ?? null,
    recording: leg.recording ? { id: leg.recording.id, started_at: leg.recording.startedAt.toISOString() } : null,
    transcribing: leg.transcribing,
    start_time: leg.startedAt.toISOString(),
    answered_at: leg.answeredAt?.toISOString() ?? null,
    end_time: leg.endedAt?.toISOString() ?? null,
    hangup_cause: leg.hangup?.cause ?? null,
    hangup_source: leg.hangup?.source ?? null,
    sip_hangup_cause: leg.hangup?.sip ?? null,
  };
}

/** Whole seconds from answer to end (0 when never answered). */
export function answeredSeconds(leg: Pick<CallLeg, 'answeredAt' | 'endedAt'>, now: Date = new Date()): number {
  if (!leg.answeredAt) return 0;
  return Math.round(((leg.endedAt ?? now).getTime() - leg.answeredAt.getTime()) / 1000);
}

/** The body Telnyx answers a dial and GET /v2/calls/{id} with. */
export function callResource(leg: CallLeg) {
  return {
    record_type: 'call',
    call_control_id: leg.callControlId,
    call_leg_id: leg.callLegId,
    call_session_id: leg.callSessionId,
    is_alive: isAlive(leg),
    // Strings in Telnyx's Call schema: absent, never null, while the leg has none.
    ...(leg.clientState != null && { client_state: leg.clientState }),
    start_time: leg.startedAt.toISOString(),
    ...(leg.endedAt && { end_time: leg.endedAt.toISOString() }),
    call_duration: answeredSeconds(leg),
  };
}
