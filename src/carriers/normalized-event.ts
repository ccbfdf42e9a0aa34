// The one event type every carrier adapter produces. Carrier vocabulary (Telnyx and Twilio field
// names and status words, Vonage's) stops at src/carriers/<carrier>/; everything past an adapter speaks this.
import type { CarrierName } from './carrier-name.js';
import type { FailureReason } from './failure-reason.js';
import type { OrderPlacement } from './number-provider.js';

// Every event names its carrier: the name travels with the events (carrier-name.ts owns it), and a
// receipt its failure reason (failure-reason.ts, which the senders share without importing events).
export { CARRIER_NAMES, type CarrierName } from './carrier-name.js';
export type { FailureReason } from './failure-reason.js';

/** Our message statuses as a carrier receipt can report them; `unknown` is stored, never guessed. */
export type ReceiptStatus = 'queued' | 'sending' | 'sent' | 'delivered' | 'failed' | 'unknown';

/** Our call statuses as a carrier callback can report them. */
export type CallProgress = 'initiated' | 'ringing' | 'answered' | 'bridged' | 'ended' | 'unknown';


interface EventBase {
  carrier: CarrierName;
  /** The carrier's id for this delivery of the event (the ingest dedupe key). */
  carrierEventId: string;
  /** When the carrier says it happened (ISO 8601). */
  occurredAt: string;
}

export interface MessageReceived extends EventBase {
  kind: 'message.received';
  carrierMessageId: string;
  from: string;
  to: string;
  text: string;
}

export interface MessageStatusChanged extends EventBase {
  kind: 'message.status';
  carrierMessageId: string;
  status: ReceiptStatus;
  /** The carrier's own word, kept for the record and for `unknown`. */
  carrierStatus: string;
  errorCode?: string;
  /** The carrier's code in our words, when it is one we act on. */
  reason?: FailureReason;
  errorDetail?: string;
  /**
   * Our message id, as the carrier echoed the reference we sent with it (Twilio: the StatusCallback
   * URL it called; Telnyx: the payload's webhook_url; Vonage: client_ref): a receipt names our
   * message even when the send's answer, and so the carrier's id, never reached us.
   */
  ourMessageId?: string;
}

/**
 * Why a leg or call ended, in our words (the carrier's own word stays in `hangupCause`):
 * `declined` (the callee refused or was busy: never dial that target again), `no_answer`,
 * `retryable` (SIP 408/503/504: a timeout is not a decision, dial once more), `completed` (a
 * normal end), `failed` (anything else).
 */
export type CallEndReason = 'completed' | 'declined' | 'no_answer' | 'retryable' | 'failed';

/**
 * Our own state on a leg we dialed, as the carrier echoes it back (Telnyx client_state). Only
 * present when it decodes to our shape: anything else is "not ours".
 */
export interface OurLegState {
  callId: string;
  /** Index of the ring-plan target this leg dials. */
  target: number;
  /** 1 for the first dial of that target, 2 for the one redial a SIP 408/503/504 earns. */
  attempt: number;
}

interface CallEventBase extends EventBase {
  /** The carrier's id of this call leg (Telnyx call_control_id, Twilio CallSid): commands go to it. */
  carrierCallId: string;
  /** What the carrier's call log names the whole call by (Telnyx call_session_id, Twilio CallSid). */
  callSessionId: string;
  /** Set on legs we dialed (our client_state came back); absent on the caller's leg and on others'. */
  ourLeg?: OurLegState;
}

export interface CallEvent extends CallEventBase {
  kind: 'call.initiated' | 'call.answered' | 'call.bridged' | 'call.hangup' | 'call.status';
  /** `unknown` when the carrier omits it on this event (Telnyx call.hangup): the call row knows it. */
  direction: 'inbound' | 'outbound' | 'unknown';
  from?: string;
  to?: string;
  progress: CallProgress;
  carrierStatus: string;
  /** Carrier-reported duration, when it gives one (Twilio CallDuration). */
  durationSeconds?: number;
  hangupCause?: string;
  /** On hangups: why, in our words. */
  endReason?: CallEndReason;
  /** On the end of a leg we dialed: it had answered first (a dial's result that reports the talk that took place). */
  answered?: boolean;
  /** On the end of a leg we dialed: the caller's own leg had already ended when the carrier reported it. */
  callerLeft?: boolean;
}

/**
 * A recording we started (voicemail) is stored at the carrier. It may name no leg to command
 * (Telnyx's published call.recording.saved carries the session and the leg's log id, no
 * call_control_id): the call is then found by its session.
 */
export interface CallRecordingSaved extends Omit<CallEventBase, 'carrierCallId'> {
  kind: 'call.recording.saved';
  carrierCallId?: string;
  recordingUrl: string;
}

/** One fragment of a live transcription. */
export interface CallTranscription extends CallEventBase {
  kind: 'call.transcription';
  text: string;
  final: boolean;
}

/** A carrier settled (or reports still pending) a number order it had answered asynchronously. */
export interface NumberOrderCompleted extends EventBase {
  kind: 'number.order.completed';
  /** Our order id, as we gave it to the carrier (Telnyx customer_reference); absent: not an order of ours. */
  orderId?: string;
  /** The carrier's order id, when the event carries it. */
  carrierOrderId?: string;
  /** How the order ended, when the event says; absent: ask the carrier (the order it names). */
  placement?: Extract<OrderPlacement, { outcome: 'settled' }>;
}

/** A carrier event we store but do not act on (unknown or unneeded type). */
export interface IgnoredEvent extends EventBase {
  kind: 'ignored';
  carrierEventType: string;
}

export type NormalizedEvent = MessageReceived | MessageStatusChanged | CallEvent | CallRecordingSaved | CallTranscription | NumberOrderCompleted | IgnoredEvent;
export type NormalizedEventKind = NormalizedEvent['kind'];

/** Every kind a module can own, for the boot check of carrier event handlers. */
export const HANDLED_KINDS = [
  'message.received',
  'message.status',
  'call.initiated',
  'call.answered',
  'call.bridged',
  'call.hangup',
  'call.status',
  'call.recording.saved',
  'call.transcription',
  'number.order.completed',
] as const satisfies readonly Exclude<NormalizedEventKind, 'ignored'>[];
