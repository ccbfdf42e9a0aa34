import { randomBytes, randomUUID } from 'node:crypto';
import { twilioSignature } from '../../carriers/twilio/twilio-signature.js';
import type { CarrierWebhook } from '../webhook-series.js';
import { CONTRADICTION_AFTER_MS, SENT_AFTER_MS, type SandboxMessage } from '../sandbox-message.js';

/**
 * Twilio's Messages resource as the sandbox speaks it: the send answer, error bodies, and the
 * signed form callbacks (shapes of test/fixtures/carriers/twilio, which the Twilio adapter parses).
 */

const API_VERSION = '2010-04-01';

export function twilioMessageSid(): string {
  return `SM${randomBytes(16).toString('hex')}`;
}

/** Twilio's error body, e.g. 400 `{"code":21211,"message":"...","status":400}`. */
export function twilioError(status: number, code: number, message: string) {
  return { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status };
}

/** The body of a 201 to POST /2010-04-01/Accounts/{sid}/Messages.json. */
export function twilioSendAnswer(message: SandboxMessage, accountSid: string) {
  const date = message.createdAt.toUTCString();
  return {
    sid: message.id,
    account_sid: accountSid,
    from: message.from,
    to: message.to,
    body: message.text,
    status: 'queued',
    direction: 'outbound-api',
    num_segments: String(message.parts),
    num_media: '0',
    api_version: API_VERSION,
    date_created: date,
    date_updated: date,
    date_sent: null,
    error_code: null,
    error_message: null,
    price: null,
    price_unit: 'USD',
    uri: `/${API_VERSION}/Accounts/${accountSid}/Messages/${message.id}.json`,
  };
}

/**
 * A callback to `url`, signed with HMAC-SHA1 of the auth token over the URL and sorted fields.
 * The event id travels as I-Twilio-Idempotency-Token (the app's dedupe key when present), so a
 * re-signed copy is the same fields under a new token.
 */
function twilioCallback(kind: string, url: string, afterMs: number, authToken: string, fields: Record<string, string>, contradiction = false): CarrierWebhook {
  return {
    kind: `twilio ${kind}`,
    url,
    afterMs,
    contradiction,
    eventId: randomUUID(),
    render: (eventId) => ({
      body: new URLSearchParams(fields).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSignature(authToken, url, fields),
        'i-twilio-idempotency-token': eventId,
      },
    }),
  };
}

function statusFields(message: SandboxMessage, accountSid: string, status: string, extra: Record<string, string> = {}) {
  return {
    SmsSid: message.id, SmsStatus: status, MessageStatus: status, To: message.to, MessageSid: message.id,
    AccountSid: accountSid, From: message.from, ApiVersion: API_VERSION, ...extra,
  };
}

/** `sent`, then `delivered` after `receiptDelayMs`, then optionally a contradicting `undelivered`. */
export function twilioOutboundSeries(message: SandboxMessage, statusCallback: string, accountSid: string, authToken: string, receiptDelayMs: number, contradict: boolean): CarrierWebhook[] {
  const steps = [
    twilioCallback('status sent', statusCallback, SENT_AFTER_MS, authToken, statusFields(message, accountSid, 'sent')),
    twilioCallback('status delivered', statusCallback, receiptDelayMs, authToken, statusFields(message, accountSid, 'delivered')),
  ];
  if (contradict) {
    steps.push(twilioCallback('status undelivered', statusCallback, CONTRADICTION_AFTER_MS, authToken,
      statusFields(message, accountSid, 'undelivered', { ErrorCode: '30003' }), true));
  }
  return steps;
}

/** An inbound SMS to one of our numbers, posted to `url` (PUBLIC_BASE_URL/webhooks/twilio/messaging). */
export function twilioInbound(message: SandboxMessage, url: string, accountSid: string, authToken: string): CarrierWebhook {
  return twilioCallback('inbound', url, 0, authToken, {
    ToCountry: 'US', ToState: '', SmsMessageSid: message.id, NumMedia: '0', ToCity: '', FromZip: '', SmsSid: message.id,
    FromState: '', SmsStatus: 'received', FromCity: '', Body: message.text, FromCountry: 'US', To: message.to, ToZip: '',
    NumSegments: String(message.parts), MessageSid: message.id, AccountSid: accountSid, From: message.from, ApiVersion: API_VERSION,
  });
}
