import { twilioFailureReason } from './twilio-failure-reasons.js';
import type { CallEndReason, CallEvent, CallProgress, NormalizedEvent, ReceiptStatus } from '../normalized-event.js';
import { MalformedWebhook } from '../carrier-adapter.js';
import { bounded, BOUNDS, instantOf } from '../shape.js';
import type { FormFields } from './twilio-signature.js';

/** Twilio MessageStatus words → our receipt statuses (anything else is stored as unknown). */
const MESSAGE_STATUS: Record<string, ReceiptStatus> = {
  accepted: 'queued',
  scheduled: 'queued',
  queued: 'queued',
  sending: 'sending',
  sent: 'sent',
  delivered: 'delivered',
  // `read` (WhatsApp, RCS) comes after delivery.
  read: 'delivered',
  undelivered: 'failed',
  failed: 'failed',
};

/**
 * Twilio CallStatus words. queued / initiated / ringing say a call is starting and must never
 * end anything; only the final words (completed, busy, failed, no-answer, canceled) end a call.
 */
const CALL_STATUS: Record<string, { kind: CallEvent['kind']; progress: CallProgress }> = {
  queued: { kind: 'call.status', progress: 'initiated' },
  initiated: { kind: 'call.initiated', progress: 'initiated' },
  ringing: { kind: 'call.status', progress: 'ringing' },
  'in-progress': { kind: 'call.answered', progress: 'answered' },
  completed: { kind: 'call.hangup', progress: 'ended' },
  busy: { kind: 'call.hangup', progress: 'ended' },
  failed: { kind: 'call.hangup', progress: 'ended' },
  'no-answer': { kind: 'call.hangup', progress: 'ended' },
  canceled: { kind: 'call.hangup', progress: 'ended' },
};

/** Final CallStatus words → why the call ended, in our words. */
const TWILIO_END_REASONS: Record<string, CallEndReason> = { completed: 'completed', busy: 'declined', 'no-answer': 'no_answer', canceled: 'completed', failed: 'failed' };

export interface TwilioCallback {
  /** MessageSid / SmsSid / CallSid. */
  sid: string;
  /** MessageStatus / SmsStatus / CallStatus, as Twilio spelled it. */
  status: string;
  fields: FormFields;
}

export function field(fields: FormFields, ...names: string[]): string | undefined {
  for (const name of names) {
    const value = fields[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string' && first.length > 0) return first;
  }
  return undefined;
}

export function required(fields: FormFields, ...names: string[]): string {
  const value = field(fields, ...names);
  if (value === undefined) throw new MalformedWebhook(`form field ${names.join(' or ')} is required`);
  return value;
}

/** A field that is at most `max` characters when present (ids and words are parts of keys). */
export function boundedField(fields: FormFields, max: number, ...names: string[]): string | undefined {
  const value = field(fields, ...names);
  return value === undefined ? undefined : bounded(value, max, `form field ${names.join(' or ')}`);
}

/** A SID (MessageSid, CallSid, RecordingSid…): required, at most BOUNDS.idLength characters. */
export function requiredSid(fields: FormFields, ...names: string[]): string {
  return bounded(required(fields, ...names), BOUNDS.idLength, `form field ${names.join(' or ')}`);
}

/** A status word: required, at most BOUNDS.wordLength characters. */
export function requiredWord(fields: FormFields, ...names: string[]): string {
  return bounded(required(fields, ...names), BOUNDS.wordLength, `form field ${names.join(' or ')}`);
}

/** A duration in whole seconds from 0 to BOUNDS.callSeconds, or undefined when absent. */
export function seconds(fields: FormFields, name: string): number | undefined {
  const value = field(fields, name);
  if (value === undefined) return undefined;
  const n = /^\d{1,6}$/.test(value) ? Number(value) : NaN;
  if (!(n <= BOUNDS.callSeconds)) throw new MalformedWebhook(`form field ${name} must be a whole number of seconds from 0 to ${BOUNDS.callSeconds}`);
  return n;
}

export function readCallback(fields: FormFields, channel: 'messaging' | 'voice'): TwilioCallback {
  return channel === 'messaging'
    ? { sid: requiredSid(fields, 'MessageSid', 'SmsSid'), status: requiredWord(fields, 'MessageStatus', 'SmsStatus'), fields }
    : { sid: requiredSid(fields, 'CallSid'), status: requiredWord(fields, 'CallStatus'), fields };
}

/** Twilio sends no event time on most callbacks: the voice `Timestamp` when present, else arrival. */
export function occurredAt(fields: FormFields): string {
  const stamp = Date.parse(field(fields, 'Timestamp') ?? '');
  return Number.isNaN(stamp) ? new Date().toISOString() : instantOf(stamp, 'form field Timestamp');
}

/**
 * `ourMessageId`: our message, as named by the StatusCallback URL Twilio called (the signed URL's
 * query: MESSAGE_REFERENCE_PARAM), for a messaging status callback.
 */
export function normalizeTwilio(callback: TwilioCallback, carrierEventId: string, channel: 'messaging' | 'voice', ourMessageId?: string): NormalizedEvent {
  const { sid, status, fields } = callback;
  const base = { carrier: 'twilio' as const, carrierEventId, occurredAt: occurredAt(fields) };
  if (channel === 'messaging') {
    if (status === 'received') {
      const from = bounded(required(fields, 'From'), BOUNDS.addressLength, 'form field From');
      const to = bounded(required(fields, 'To'), BOUNDS.addressLength, 'form field To');
      return { ...base, kind: 'message.received', carrierMessageId: sid, from, to, text: field(fields, 'Body') ?? '' };
    }
    const errorCode = boundedField(fields, BOUNDS.wordLength, 'ErrorCode');
    return {
      ...base,
      kind: 'message.status',
      carrierMessageId: sid,
      status: MESSAGE_STATUS[status] ?? 'unknown',
      carrierStatus: status,
      ...(ourMessageId && { ourMessageId }),
      ...(errorCode && { errorCode, errorDetail: field(fields, 'ErrorMessage'), ...twilioFailureReason(errorCode) }),
    };
  }
  const call = CALL_STATUS[status] ?? { kind: 'call.status' as const, progress: 'unknown' as const };
  const duration = seconds(fields, 'CallDuration');
  return {
    ...base,
    kind: call.kind,
    carrierCallId: sid,
    callSessionId: sid,
    direction: callDirection(field(fields, 'Direction')),
    from: boundedField(fields, BOUNDS.addressLength, 'From'),
    to: boundedField(fields, BOUNDS.addressLength, 'To'),
    progress: call.progress,
    carrierStatus: status,
    ...(duration !== undefined && { durationSeconds: duration }),
    ...(call.progress === 'ended' && status !== 'completed' && { hangupCause: status }),
    ...(call.progress === 'ended' && { endReason: TWILIO_END_REASONS[status] ?? 'failed' }),
  };
}

/** `inbound`, or `outbound-api` / `outbound-dial` (our own side calling out). */
export function callDirection(value: string | undefined): CallEvent['direction'] {
  if (value === 'inbound') return 'inbound';
  if (value?.startsWith('outbound')) return 'outbound';
  if (value === undefined) return 'unknown';
  throw new MalformedWebhook(`form field Direction has an unknown value`);
}
