import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { header, MalformedWebhook, SignatureRejected, type AcceptedWebhook, type CarrierAdapter, type InboundWebhook } from '../carrier-adapter.js';
import { isObject } from '../shape.js';
import { normalizeTwilio, readCallback } from './twilio-events.js';
import { twilioSignatureMatches, type FormFields } from './twilio-signature.js';

/** POST /webhooks/twilio/messaging and /voice: HMAC-SHA1-signed form callbacks. */
@Injectable()
export class TwilioAdapter implements CarrierAdapter {
  readonly carrier = 'twilio' as const;

  constructor(private readonly config: AppConfig) {}

  async accept(webhook: InboundWebhook): Promise<AcceptedWebhook> {
    const token = this.config.TWILIO_AUTH_TOKEN;
    if (!token) throw new SignatureRejected('TWILIO_AUTH_TOKEN is not configured: no Twilio webhook can be verified');
    const fields = formFields(webhook.body);
    // Twilio signs the URL it was given: ours as the carrier sees it, plus the query string.
    const url = this.config.publicBaseUrl + webhook.url;
    if (!twilioSignatureMatches(token, url, fields ?? {}, header(webhook.headers, 'x-twilio-signature'))) {
      throw new SignatureRejected('X-Twilio-Signature missing or wrong');
    }
    if (!fields) throw new MalformedWebhook('body must be form fields (application/x-www-form-urlencoded)');
    const channel = webhook.channel ?? 'messaging';
    const callback = readCallback(fields, channel);
    // Several callbacks share a Sid: the idempotency token Twilio sends on retries, else Sid:Status.
    const carrierEventId = header(webhook.headers, 'i-twilio-idempotency-token') ?? `${callback.sid}:${callback.status}`;
    return {
      event: normalizeTwilio(callback, carrierEventId, channel),
      carrierEventType: `${channel}.${callback.status}`,
      payloadJson: JSON.stringify(fields),
    };
  }
}

/**
 * The form fields of a urlencoded body, or undefined for any other body: that one is checked
 * against a signature over no fields (401 unless signed so) and then refused as malformed (400).
 */
function formFields(body: unknown): FormFields | undefined {
  if (!isObject(body)) return undefined;
  const fields: FormFields = {};
  for (const [name, value] of Object.entries(body)) {
    if (typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string'))) fields[name] = value as string | string[];
    else return undefined;
  }
  return fields;
}
