import { telnyxFailureReason } from './telnyx-failure-reasons.js';
import type { CallEndReason, CallEvent, CallProgress, NormalizedEvent, ReceiptStatus } from '../normalized-event.js';
import { decodeClientState } from './telnyx-client-state.js';
import { messageIdFromUrl } from '../message-sender.js';
import { readNumberOrder, telnyxOutcome } from './telnyx-numbers.js';
import { MalformedWebhook } from '../carrier-adapter.js';
import { address, BOUNDS, id, instant, isObject, object, optionalText, storableBody, text, word, type Json } from '../shape.js';

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
  'call.bridged': { kind: 'call.bridged', progress: 'bridged' },
  'call.hangup': { kind: 'call.hangup', progress: 'ended' },
};

/** SIP answers after which a dial is worth one more try (the retry table, docs/exactly-once.md: a timeout is not a decision). */
const RETRYABLE_SIP = new Set(['408', '503', '504']);

/** Telnyx hangup_cause words → why the leg ended, in our words. */
const END_REASONS: Record<string, CallEndReason> = {
  normal_clearing: 'completed',
  originator_cancel: 'completed',
  call_rejected: 'declined',
  user_busy: 'declined',
  timeout: 'no_answer',
  no_answer: 'no_answer',
  time_limit: 'completed',
};

function endReason(hangupCause: string | undefined, sipCause: string | undefined): CallEndReason {
  if (sipCause && RETRYABLE_SIP.has(sipCause)) return 'retryable';
  return (hangupCause && END_REASONS[hangupCause]) || 'failed';
}

export interface TelnyxEnvelope {
  id: string;
  eventType: string;
  occurredAt: string;
  payload: Json;
}

/** The API v2 envelope `{"data":{"event_type","id","occurred_at","payload","record_type":"event"},"meta":{...}}`. */
export function readEnvelope(body: unknown): TelnyxEnvelope {
  if (!isObject(body)) throw new MalformedWebhook('body must be a JSON object');
  storableBody(body);
  const data = object(body, 'data', '');
  if (data.record_type !== 'event') throw new MalformedWebhook('data.record_type must be "event"');
  return {
    id: id(data, 'id', 'data'),
    eventType: word(data, 'event_type', 'data'),
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
        carrierMessageId: id(p, 'id', 'data.payload'),
        from: address(object(p, 'from', 'data.payload'), 'phone_number', 'data.payload.from'),
        to: address(firstRecipient(p), 'phone_number', 'data.payload.to[0]'),
        text: typeof p.text === 'string' ? p.text : '',
      };
    case 'message.sent':
    case 'message.finalized': {
      const carrierStatus = word(firstRecipient(p), 'status', 'data.payload.to[0]');
      const error = Array.isArray(p.errors) && isObject(p.errors[0]) ? p.errors[0] : undefined;
      return {
        ...base,
        kind: 'message.status',
        carrierMessageId: id(p, 'id', 'data.payload'),
        status: MESSAGE_STATUS[carrierStatus] ?? 'unknown',
        carrierStatus,
        ...ourReference(p),
        ...(error && { errorCode: optionalText(error, 'code'), errorDetail: optionalText(error, 'detail') ?? optionalText(error, 'title'), ...telnyxFailureReason(optionalText(error, 'code')) }),
      };
    }
  }
  if (envelope.eventType === 'number_order.complete') {
    // The documented callback (numberOrderStatusUpdate) may lack the order id and status: what it
    // does not settle, the handler asks the carrier about (RetrieveNumberOrder).
    const order = readNumberOrder(p, 'data.payload');
    const outcome = telnyxOutcome(order);
    return { ...base, kind: 'number.order.completed', orderId: order.customer_reference, carrierOrderId: order.id, ...(outcome && { placement: { outcome: 'settled' as const, ...outcome } }) };
  }
  const leg = () => ({
    carrierCallId: id(p, 'call_control_id', 'data.payload'),
    callSessionId: id(p, 'call_session_id', 'data.payload'),
    ...optionalLeg(p.client_state),
  });
  const call = CALL_EVENTS[envelope.eventType];
  if (call) {
    const hangupCause = optionalText(p, 'hangup_cause');
    return {
      ...base,
      ...leg(),
      kind: call.kind,
      direction: callDirection(p.direction),
      from: optionalText(p, 'from', { max: BOUNDS.addressLength, path: 'data.payload' }),
      to: optionalText(p, 'to', { max: BOUNDS.addressLength, path: 'data.payload' }),
      progress: call.progress,
      carrierStatus: optionalText(p, 'state', { max: BOUNDS.wordLength, path: 'data.payload' }) ?? envelope.eventType,
      ...(hangupCause && { hangupCause }),
      ...(call.kind === 'call.hangup' && { endReason: endReason(hangupCause, optionalText(p, 'sip_hangup_cause')) }),
    };
  }
  if (envelope.eventType === 'call.recording.saved') {
    const urls = isObject(p.recording_urls) ? p.recording_urls : isObject(p.public_recording_urls) ? p.public_recording_urls : {};
    const bound = { max: BOUNDS.urlLength, path: 'data.payload.recording_urls' };
    const recordingUrl = optionalText(urls, 'mp3', bound) ?? optionalText(urls, 'wav', bound);
    if (!recordingUrl) throw new MalformedWebhook('data.payload.recording_urls must hold an mp3 or wav URL');
    // As published (schema and example), it names the session and call_leg_id, no call_control_id.
    const controlId = optionalText(p, 'call_control_id', { max: BOUNDS.idLength, path: 'data.payload' });
    return {
      ...base, kind: 'call.recording.saved', recordingUrl,
      ...(controlId && { carrierCallId: controlId }),
      callSessionId: id(p, 'call_session_id', 'data.payload'),
      ...optionalLeg(p.client_state),
    };
  }
  if (envelope.eventType === 'call.transcription') {
    const data = object(p, 'transcription_data', 'data.payload');
    const transcript = text(data, 'transcript', 'data.payload.transcription_data');
    if (Buffer.byteLength(transcript) > BOUNDS.transcriptBytes) throw new MalformedWebhook(`data.payload.transcription_data.transcript must be at most ${BOUNDS.transcriptBytes} bytes of UTF-8`);
    return { ...base, ...leg(), kind: 'call.transcription', text: transcript, final: data.is_final !== false };
  }
  return { ...base, kind: 'ignored', carrierEventType: envelope.eventType };
}

/** Our message, named by the per-message webhook_url we sent (signed with the body); absent for a URL of no message of ours. */
function ourReference(payload: Json): { ourMessageId?: string } {
  const ourMessageId = messageIdFromUrl(optionalText(payload, 'webhook_url', { max: BOUNDS.urlLength, path: 'data.payload' }));
  return ourMessageId ? { ourMessageId } : {};
}

/** client_state that is not ours (or not valid) leaves the event without `ourLeg`: never an error. */
function optionalLeg(clientState: unknown) {
  const ourLeg = decodeClientState(clientState);
  return ourLeg ? { ourLeg } : {};
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
