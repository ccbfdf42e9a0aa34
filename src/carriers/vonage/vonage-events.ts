import { vonageFailureReason } from './vonage-failure-reasons.js';
import { MalformedWebhook } from '../carrier-adapter.js';
import type { NormalizedEvent, ReceiptStatus } from '../normalized-event.js';
import { address, BOUNDS, id, instant, isObject, optionalText, storableBody, word, type Json } from '../shape.js';

/** Vonage Messages status words → our receipt statuses (anything else is stored as unknown). */
const MESSAGE_STATUS: Record<string, ReceiptStatus> = {
  submitted: 'sent',
  delivered: 'delivered',
  // `read` (WhatsApp, RCS, Viber) comes after delivery.
  read: 'delivered',
  rejected: 'failed',
  undeliverable: 'failed',
  failed: 'failed',
};

/** An inbound message has no status word: its dedupe key takes this one. */
export const INBOUND = 'inbound';

/** A Messages API v1 callback, read enough to know what it is and what it is keyed by. */
export interface VonageCallback {
  messageUuid: string;
  /** The status word, or `inbound` for an inbound message. */
  status: string;
  body: Json;
}

export function readCallback(body: unknown): VonageCallback {
  if (!isObject(body)) throw new MalformedWebhook('body must be a JSON object');
  storableBody(body);
  const messageUuid = id(body, 'message_uuid', 'body');
  const status = body.status === undefined ? INBOUND : word(body, 'status', 'body');
  return { messageUuid, status, body };
}

/** Vonage writes numbers in E.164 without the `+` (`447700900000`); we always store it. */
export function e164(number: string): string {
  return number.startsWith('+') ? number : `+${number}`;
}

export function normalizeVonage({ messageUuid, status, body }: VonageCallback): NormalizedEvent {
  const base = { carrier: 'vonage' as const, carrierEventId: `${messageUuid}:${status}`, occurredAt: instant(body, 'timestamp', 'body') };
  const channel = word(body, 'channel', 'body');
  // Only SMS is ours; another channel's event is kept, not acted on.
  if (channel !== 'sms') return { ...base, kind: 'ignored', carrierEventType: `${channel}.${status}` };
  if (status === INBOUND) {
    // The published inbound SMS (inboundMessageSMS) has no message_type: its required `text` is the
    // message. A message_type other than text is not an SMS we can record.
    const type = optionalText(body, 'message_type');
    if ((type !== undefined && type !== 'text') || typeof body.text !== 'string') return { ...base, kind: 'ignored', carrierEventType: `sms.${INBOUND}` };
    return {
      ...base, kind: 'message.received', carrierMessageId: messageUuid,
      from: e164(address(body, 'from', 'body')), to: e164(address(body, 'to', 'body')), text: typeof body.text === 'string' ? body.text : '',
    };
  }
  // client_ref: what we sent as our message id, echoed on every status (bound by payload_hash).
  const ourMessageId = optionalText(body, 'client_ref', { max: BOUNDS.idLength, path: 'body' });
  return {
    ...base, kind: 'message.status', carrierMessageId: messageUuid, status: MESSAGE_STATUS[status] ?? 'unknown', carrierStatus: status,
    ...(ourMessageId?.startsWith('msg_') && { ourMessageId }), ...readError(body.error),
  };
}

/** `error: {type, title, detail}`: title is Vonage's numeric code (`1320`), detail its words. */
function readError(error: unknown): { errorCode?: string; errorDetail?: string } {
  if (!isObject(error)) return {};
  const code = typeof error.title === 'number' || typeof error.title === 'string' ? String(error.title) : optionalText(error, 'type');
  return code === undefined ? {} : { errorCode: code, errorDetail: optionalText(error, 'detail'), ...vonageFailureReason(code) };
}
