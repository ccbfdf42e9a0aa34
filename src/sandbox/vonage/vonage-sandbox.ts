import { randomUUID } from 'node:crypto';
import { signVonageWebhook } from '../../carriers/vonage/vonage-signature.js';
import type { CarrierWebhook, RenderedWebhook } from '../webhook-series.js';
import { CONTRADICTION_AFTER_MS, SENT_AFTER_MS, type SandboxMessage } from '../sandbox-message.js';

/**
 * The Vonage Messages API (v1) as the sandbox speaks it: the send answer, RFC 7807 error bodies,
 * and the webhooks under a signed JWT (shapes of test/fixtures/carriers/vonage, which the Vonage
 * adapter parses). Vonage writes numbers in E.164 without the `+`.
 */

const ERRORS = 'https://developer.vonage.com/api-errors';

export const vonageNumber = (e164: string): string => e164.replace(/^\+/, '');

/** Vonage's error body, e.g. 422 `{"type":".../messages#1150","title":"Invalid params","detail":...}`. */
export function vonageError(type: string, title: string, detail: string) {
  return { type: `${ERRORS}${type}`, title, detail, instance: randomUUID() };
}

/**
 * One webhook under `Authorization: Bearer <JWT>` whose `jti` is the delivery's event id: a
 * duplicate repeats the very token (a replay), a re-signed copy gets a new one (new jti, new iat).
 */
function vonageWebhook(kind: string, url: string, afterMs: number, secret: string, body: Record<string, unknown>, contradiction = false): CarrierWebhook {
  const text = JSON.stringify(body);
  const tokens = new Map<string, Promise<string>>();
  return {
    kind: `vonage ${kind}`,
    url,
    afterMs,
    contradiction,
    eventId: randomUUID(),
    render: async (eventId): Promise<RenderedWebhook> => {
      let token = tokens.get(eventId);
      if (!token) tokens.set(eventId, (token = signVonageWebhook(secret, text, { jti: eventId })));
      return { body: text, headers: { 'content-type': 'application/json', authorization: `Bearer ${await token}` } };
    },
  };
}

/** The body of a 202 to POST /v1/messages. */
export function vonageSendAnswer(message: SandboxMessage) {
  return { message_uuid: message.id };
}

function statusBody(message: SandboxMessage, clientRef: string | undefined, status: string, extra: Record<string, unknown> = {}) {
  return {
    message_uuid: message.id,
    to: vonageNumber(message.to),
    from: vonageNumber(message.from),
    timestamp: new Date().toISOString(),
    status,
    ...(clientRef !== undefined && { client_ref: clientRef }),
    channel: 'sms',
    usage: { currency: 'EUR', price: (0.0333 * message.parts).toFixed(4) },
    sms: { count_total: String(message.parts) },
    ...extra,
  };
}

/** `submitted`, then `delivered` after `receiptDelayMs`, then optionally a contradicting `undeliverable`. */
export function vonageOutboundSeries(message: SandboxMessage, clientRef: string | undefined, url: string, secret: string, receiptDelayMs: number, contradict: boolean): CarrierWebhook[] {
  const steps = [
    vonageWebhook('status submitted', url, SENT_AFTER_MS, secret, statusBody(message, clientRef, 'submitted')),
    vonageWebhook('status delivered', url, receiptDelayMs, secret, statusBody(message, clientRef, 'delivered')),
  ];
  if (contradict) {
    steps.push(vonageWebhook('status undeliverable', url, CONTRADICTION_AFTER_MS, secret, statusBody(message, clientRef, 'undeliverable', {
      error: { type: `${ERRORS}/messages#1320`, title: 1320, detail: 'Message failed because the number is not reachable', instance: randomUUID() },
    }), true));
  }
  return steps;
}

/** An inbound SMS to one of our numbers, posted to `url` (PUBLIC_BASE_URL/webhooks/vonage/messages). */
export function vonageInbound(message: SandboxMessage, url: string, secret: string): CarrierWebhook {
  return vonageWebhook('inbound', url, 0, secret, {
    channel: 'sms',
    message_uuid: message.id,
    to: vonageNumber(message.to),
    from: vonageNumber(message.from),
    timestamp: message.createdAt.toISOString(),
    text: message.text,
    sms: { num_messages: String(message.parts), count_total: String(message.parts) },
    usage: { currency: 'EUR', price: '0.0000' },
    message_type: 'text',
    context_status: 'none',
  });
}
