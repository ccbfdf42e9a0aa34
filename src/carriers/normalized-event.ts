/**
 * The one event type every carrier adapter produces. Carrier vocabulary (Telnyx and Twilio field
 * names and status words) stops at src/carriers/<carrier>/; everything past an adapter speaks this.
 */
export type CarrierName = 'telnyx' | 'twilio';

/** Our message statuses as a carrier receipt can report them; `unknown` is stored, never guessed. */
export type ReceiptStatus = 'queued' | 'sending' | 'sent' | 'delivered' | 'failed' | 'unknown';

/** Our call statuses as a carrier callback can report them. */
export type CallProgress = 'initiated' | 'ringing' | 'answered' | 'ended' | 'unknown';

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
  errorDetail?: string;
}

export interface CallEvent extends EventBase {
  kind: 'call.initiated' | 'call.answered' | 'call.hangup' | 'call.status';
  /** The carrier's id of this call leg (Telnyx call_control_id, Twilio CallSid). */
  carrierCallId: string;
  /** `unknown` when the carrier omits it on this event (Telnyx call.hangup): the call row knows it. */
  direction: 'inbound' | 'outbound' | 'unknown';
  from?: string;
  to?: string;
  progress: CallProgress;
  carrierStatus: string;
  /** Carrier-reported duration, when it gives one (Twilio CallDuration). */
  durationSeconds?: number;
  hangupCause?: string;
}

/** A carrier event we store but do not act on (unknown or unneeded type). */
export interface IgnoredEvent extends EventBase {
  kind: 'ignored';
  carrierEventType: string;
}

export type NormalizedEvent = MessageReceived | MessageStatusChanged | CallEvent | IgnoredEvent;
export type NormalizedEventKind = NormalizedEvent['kind'];

/** Every kind a module can own, for the boot check of carrier event handlers. */
export const HANDLED_KINDS = ['message.received', 'message.status', 'call.initiated', 'call.answered', 'call.hangup', 'call.status'] as const satisfies readonly Exclude<NormalizedEventKind, 'ignored'>[];
