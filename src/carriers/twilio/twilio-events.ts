import type { CallEndReason, CallEvent, CallProgress, NormalizedEvent, ReceiptStatus } from '../normalized-event.js';
import { MalformedWebhook } from '../carrier-adapter.js';
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

export function readCallback(fields: FormFields, channel: 'messaging' | 'voice'): TwilioCallback {
  return channel === 'messaging'
    ? { sid: required(fields, 'MessageSid', 'SmsSid'), status: required(fields, 'MessageStatus', 'SmsStatus'), fields }
    : { sid: required(fields, 'CallSid'), status: required(fields, 'CallStatus'), fields };
}

/** Twilio sends no event time on most callbacks: the voice `Timestamp` when present, else arrival. */
export function occurredAt(fields: FormFields): string {
  const stamp = Date.parse(field(fields, 'Timestamp') ?? '');
  return new Date(Number.isNaN(stamp) ? Date.now() : stamp).toISOString();
}

export function normalizeTwilio(callback: TwilioCallback, carrierEventId: string, channel: 'messaging' | 'voice'): NormalizedEvent {
  const { sid, status, fields } = callback;
  const base = { carrier: 'twilio' as const, carrierEventId, occurredAt: occurredAt(fields) };
  if (channel === 'messaging') {
    if (status === 'received') {
      return { ...base, kind: 'message.received', carrierMessageId: sid, from: required(fields, 'From'), to: required(fields, 'To'), text: field(fields, 'Body') ?? '' };
    }
    const errorCode = field(fields, 'ErrorCode');
    return {
      ...base,
      kind: 'message.status',
      carrierMessageId: sid,
      status: MESSAGE_STATUS[status] ?? 'unknown',
      carrierStatus: status,
      ...(errorCode && { errorCode, errorDetail: field(fields, 'ErrorMessage') }),
    };
  }
  const call = CALL_STATUS[status] ?? { kind: 'call.status' as const, progress: 'unknown' as const };
  const duration = Number(field(fields, 'CallDuration'));
  return {
    ...base,
    kind: call.kind,
    carrierCallId: sid,
    callSessionId: sid,
    direction: callDirection(field(fields, 'Direction')),
    from: field(fields, 'From'),
    to: field(fields, 'To'),
    progress: call.progress,
    carrierStatus: status,
    ...(Number.isInteger(duration) && duration >= 0 && field(fields, 'CallDuration') !== undefined && { durationSeconds: duration }),
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
