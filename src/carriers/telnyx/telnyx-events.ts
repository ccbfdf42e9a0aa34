import type { CallEvent, CallProgress, NormalizedEvent, ReceiptStatus } from '../normalized-event.js';
import { MalformedWebhook } from '../carrier-adapter.js';
import { instant, isObject, object, optionalText, text, type Json } from '../shape.js';

/** Telnyx `to[].status` words → our receipt statuses. delivery_unconfirmed is not a delivery: stored as unknown. */
const MESSAGE_STATUS: Record<string, ReceiptStatus> = {
  queued: 'queued',
  sending: 'sending',
  sent: 'sent',
  delivered: 'delivered',
  sending_failed: 'failed',
  delivery_failed: 'failed',
};

const CALL_EVENTS: Record<string, { kind: CallEvent['kind']; progress: CallProgress }> = {
  'call.initiated': { kind: 'call.initiated', progress: 'initiated' },
  'call.answered': { kind: 'call.answered', progress: 'answered' },
  // A bridge happens only on an answered leg; it ends nothing.
  'call.bridged': { kind: 'call.status', progress: 'answered' },
  'call.hangup': { kind: 'call.hangup', progress: 'ended' },
};

export interface TelnyxEnvelope {
  id: string;
  eventType: string;
  occurredAt: string;
  payload: Json;
}

/** The API v2 envelope `{"data":{"event_type","id","occurred_at","payload","record_type":"event"},"meta":{...}}`. */
export function readEnvelope(body: unknown): TelnyxEnvelope {
  if (!isObject(body)) throw new MalformedWebhook('body must be a JSON object');
  const data = object(body, 'data', '');
  if (data.record_type !== 'event') throw new MalformedWebhook('data.record_type must be "event"');
  return {
    id: text(data, 'id', 'data'),
    eventType: text(data, 'event_type', 'data'),
    occurredAt: instant(data, 'occurred_at', 'data'),
    payload: object(data, 'payload', 'data'),
  };
}

/** Telnyx event → our one event type. Types we do not act on are kept as `ignored`. */
export function normalizeTelnyx(envelope: TelnyxEnvelope): NormalizedEvent {
  const base = { carrier: 'telnyx' as const, carrierEventId: envelope.id, occurredAt: envelope.occurredAt };
  const p = envelope.payload;
  switch (envelope.eventType) {
    case 'message.received':
      return {
        ...base,
        kind: 'message.received',
        carrierMessageId: text(p, 'id', 'data.payload'),
        from: text(object(p, 'from', 'data.payload'), 'phone_number', 'data.payload.from'),
        to: text(firstRecipient(p), 'phone_number', 'data.payload.to[0]'),
        text: typeof p.text === 'string' ? p.text : '',
      };
    case 'message.sent':
    case 'message.finalized': {
      const carrierStatus = text(firstRecipient(p), 'status', 'data.payload.to[0]');
      const error = Array.isArray(p.errors) && isObject(p.errors[0]) ? p.errors[0] : undefined;
      return {
        ...base,
        kind: 'message.status',
        carrierMessageId: text(p, 'id', 'data.payload'),
        status: MESSAGE_STATUS[carrierStatus] ?? 'unknown',
        carrierStatus,
        ...(error && { errorCode: optionalText(error, 'code'), errorDetail: optionalText(error, 'detail') ?? optionalText(error, 'title') }),
      };
    }
  }
  const call = CALL_EVENTS[envelope.eventType];
  if (call) {
    const hangupCause = optionalText(p, 'hangup_cause');
    return {
      ...base,
      kind: call.kind,
      carrierCallId: text(p, 'call_control_id', 'data.payload'),
      direction: callDirection(p.direction),
      from: optionalText(p, 'from'),
      to: optionalText(p, 'to'),
      progress: call.progress,
      carrierStatus: optionalText(p, 'state') ?? envelope.eventType,
      ...(hangupCause && { hangupCause }),
    };
  }
  return { ...base, kind: 'ignored', carrierEventType: envelope.eventType };
}

function firstRecipient(payload: Json): Json {
  const to = payload.to;
  if (!Array.isArray(to) || !isObject(to[0])) throw new MalformedWebhook('data.payload.to must be a non-empty array of objects');
  return to[0];
}

/** Telnyx omits `direction` on some call events (hangup): the call row already knows it. */
function callDirection(value: unknown): CallEvent['direction'] {
  if (value === 'incoming') return 'inbound';
  if (value === 'outgoing') return 'outbound';
  if (value === undefined || value === null) return 'unknown';
  throw new MalformedWebhook('data.payload.direction must be incoming or outgoing');
}
