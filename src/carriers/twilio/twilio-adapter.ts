import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { developmentCredentialProblem, header, MalformedWebhook, SignatureRejected, type AcceptedWebhook, type CarrierAdapter, type InboundWebhook } from '../carrier-adapter.js';
import { isObject, storableBody } from '../shape.js';
import { messageIdFromUrl } from '../message-sender.js';
import { normalizeTwilio, readCallback } from './twilio-events.js';
import { readVoiceCallback } from './twilio-voice-events.js';
import { twilioSignatureMatches, type FormFields } from './twilio-signature.js';

const SIGNATURE_REFUSED = 'X-Twilio-Signature missing or wrong';

/** POST /webhooks/twilio/messaging and /voice: HMAC-SHA1-signed form callbacks. */
@Injectable()
export class TwilioAdapter implements CarrierAdapter {
  readonly carrier = 'twilio' as const;

  constructor(private readonly config: AppConfig) {}

  async accept(webhook: InboundWebhook): Promise<AcceptedWebhook> {
    // The published development token outside the sandbox: nothing a caller sends can be trusted.
    const token = this.config.twilioWebhookAuthToken;
    if (!token) throw new SignatureRejected(SIGNATURE_REFUSED, 'TWILIO_AUTH_TOKEN is the development value while TWILIO_API_URL is not loopback: set the real token');
    const remote = developmentCredentialProblem(this.config.isDevelopmentCredential('twilio'), webhook);
    if (remote) throw new SignatureRejected(SIGNATURE_REFUSED, `TWILIO_AUTH_TOKEN: ${remote}`);
    const fields = formFields(webhook.body);
    // Twilio signs the URL it was given: ours as the carrier sees it, plus the query string.
    const url = this.config.publicBaseUrl + webhook.url;
    const signature = header(webhook.headers, 'x-twilio-signature');
    if (!signature || !twilioSignatureMatches(token, url, fields ?? {}, signature)) throw new SignatureRejected(SIGNATURE_REFUSED);
    if (!fields) throw new MalformedWebhook('body must be form fields (application/x-www-form-urlencoded)');
    storableBody(fields);
    const channel = webhook.channel ?? 'messaging';
    // Signed fields (and the signed query) only: I-Twilio-Idempotency-Token is not signed, so a replay could carry a fresh one.
    const { event, carrierEventType } = channel === 'messaging' ? messagingCallback(fields, webhook.url) : readVoiceCallback(fields, channel, webhook.url);
    return {
      event,
      carrierEventType,
      payloadJson: JSON.stringify(fields),
      // The HMAC of URL + every field: the same signed content is the same delivery, however its
      // fields are re-split (name+value concatenation is ambiguous) or whatever headers came with it.
      signatureNonce: signature,
    };
  }
}

/** `url`: the signed URL it was posted to; a per-message StatusCallback names our message in its query. */
function messagingCallback(fields: FormFields, url: string) {
  const callback = readCallback(fields, 'messaging');
  return { event: normalizeTwilio(callback, `${callback.sid}:${callback.status}`, 'messaging', messageIdFromUrl(url)), carrierEventType: `messaging.${callback.status}` };
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
