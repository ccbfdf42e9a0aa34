import { randomUUID, sign, type KeyObject } from 'node:crypto';
import type { CarrierWebhook, RenderedWebhook } from '../webhook-series.js';
import { CONTRADICTION_AFTER_MS, SENT_AFTER_MS, type SandboxMessage } from '../sandbox-message.js';

/**
 * Telnyx API v2 as the sandbox speaks it: the send answer, error bodies, and the signed webhooks
 * (shapes of test/fixtures/carriers/telnyx, which the Telnyx adapter parses).
 */

const PROFILE_ID = '740572b6-099c-44a1-89b9-6c92163bc68d';
const HANDSET_CARRIER = 'T-MOBILE USA, INC.';

/** `{"errors":[...]}` as Telnyx answers a refused request. */
export function telnyxErrors(code: string, title: string, detail: string, pointer?: string) {
  return { errors: [{ code, title, detail, ...(pointer && { source: { pointer } }) }] };
}

/** The body of a 200 to POST /v2/messages. */
export function telnyxSendAnswer(message: SandboxMessage, webhookUrl: string) {
  return {
    data: {
      record_type: 'message',
      direction: 'outbound',
      id: message.id,
      type: 'SMS',
      messaging_profile_id: PROFILE_ID,
      from: { phone_number: message.from, carrier: 'Telnyx', line_type: 'Wireless' },
      to: [{ phone_number: message.to, status: 'queued', carrier: HANDSET_CARRIER, line_type: 'Wireless' }],
      text: message.text,
      media: [],
      webhook_url: webhookUrl,
      encoding: message.encoding,
      parts: message.parts,
      tags: [],
      cost: null,
      received_at: message.createdAt.toISOString(),
      sent_at: null,
      completed_at: null,
      valid_until: new Date(message.createdAt.getTime() + 4 * 3600_000).toISOString(),
      errors: [],
    },
  };
}

/** Signs like Telnyx: Ed25519 over `${timestamp}|${body}`, in telnyx-signature-ed25519 / telnyx-timestamp. */
function signed(privateKey: KeyObject, body: string): RenderedWebhook {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = sign(null, Buffer.from(`${timestamp}|${body}`), privateKey).toString('base64');
  return { body, headers: { 'content-type': 'application/json', 'telnyx-timestamp': timestamp, 'telnyx-signature-ed25519': signature } };
}

/** One Telnyx event in the API v2 envelope; `occurred_at` is now, the moment it is built. */
export function telnyxWebhook(kind: string, url: string, afterMs: number, privateKey: KeyObject, payload: Record<string, unknown>, contradiction = false): CarrierWebhook {
  const occurredAt = new Date().toISOString();
  return {
    kind: `telnyx ${kind}`,
    url,
    afterMs,
    contradiction,
    eventId: randomUUID(),
    render: (eventId, attempt) =>
      signed(privateKey, JSON.stringify({
        data: { event_type: kind, id: eventId, occurred_at: occurredAt, record_type: 'event', payload },
        meta: { attempt, delivered_to: url },
      })),
  };
}

function outboundPayload(message: SandboxMessage, status: string, extra: Record<string, unknown>) {
  return {
    id: message.id,
    record_type: 'message',
    direction: 'outbound',
    type: 'SMS',
    messaging_profile_id: PROFILE_ID,
    from: { phone_number: message.from, carrier: 'Telnyx', line_type: 'Wireless' },
    to: [{ phone_number: message.to, status, carrier: HANDSET_CARRIER, line_type: 'Wireless' }],
    text: message.text,
    parts: message.parts,
    errors: [],
    ...extra,
  };
}

/** message.sent, then message.finalized (delivered) after `receiptDelayMs`, then optionally a contradicting delivery_failed. */
export function telnyxOutboundSeries(message: SandboxMessage, url: string, privateKey: KeyObject, receiptDelayMs: number, contradict: boolean): CarrierWebhook[] {
  const now = () => new Date().toISOString();
  const steps = [
    telnyxWebhook('message.sent', url, SENT_AFTER_MS, privateKey, outboundPayload(message, 'sent', { sent_at: now(), webhook_url: url })),
    telnyxWebhook('message.finalized', url, receiptDelayMs, privateKey,
      outboundPayload(message, 'delivered', { completed_at: now(), cost: { amount: (0.004 * message.parts).toFixed(4), currency: 'USD' }, webhook_url: url })),
  ];
  if (contradict) {
    steps.push(telnyxWebhook('message.finalized', url, CONTRADICTION_AFTER_MS, privateKey, outboundPayload(message, 'delivery_failed', {
      completed_at: now(),
      webhook_url: url,
      // 40008 "Undeliverable" (Telnyx's general delivery failure; 40300 is its STOP block, an opt-out)
      errors: [{ code: '40008', title: 'Undeliverable', detail: 'The recipient carrier did not accept the message.', source: { pointer: '/to/0/phone_number' } }],
    }), true));
  }
  return steps;
}

/** message.received for an SMS from a handset to one of our numbers. */
export function telnyxInbound(message: SandboxMessage, url: string, privateKey: KeyObject): CarrierWebhook {
  return telnyxWebhook('message.received', url, 0, privateKey, {
    id: message.id,
    record_type: 'message',
    direction: 'inbound',
    type: 'SMS',
    messaging_profile_id: PROFILE_ID,
    from: { phone_number: message.from, carrier: HANDSET_CARRIER, line_type: 'Wireless' },
    to: [{ phone_number: message.to, status: 'webhook_delivered' }],
    text: message.text,
    media: [],
    parts: message.parts,
    errors: [],
    received_at: message.createdAt.toISOString(),
    cost: { amount: '0.0000', currency: 'USD' },
  });
}
