import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import {
  CarrierUnavailableError, isRetryableStatus, postToCarrier, readJson, unavailable,
  type MessageSender, type OutboundMessage, type SendResult,
} from '../message-sender.js';

/** Sends SMS through Twilio's Messages resource, form-encoded with basic auth. */
@Injectable()
export class TwilioMessageSender implements MessageSender {
  readonly carrier = 'twilio' as const;

  constructor(private readonly config: AppConfig) {}

  async send(message: OutboundMessage): Promise<SendResult> {
    const sid = this.config.TWILIO_ACCOUNT_SID;
    const auth = Buffer.from(`${sid}:${this.config.TWILIO_AUTH_TOKEN}`).toString('base64');
    const form = new URLSearchParams({
      From: message.from,
      To: message.to,
      Body: message.text,
      StatusCallback: `${this.config.publicBaseUrl}/webhooks/twilio/messaging`,
    });
    const response = await postToCarrier(`${this.config.twilioApiUrl}/2010-04-01/Accounts/${encodeURIComponent(sid)}/Messages.json`, {
      headers: {
        authorization: `Basic ${auth}`,
        'content-type': 'application/x-www-form-urlencoded',
        'i-twilio-idempotency-token': message.id,
        'idempotency-key': message.id,
      },
      body: form.toString(),
    });
    const body = await readJson(response);
    if (response.ok) {
      if (typeof body.sid !== 'string') throw new CarrierUnavailableError('Twilio accepted the message without a sid');
      return { outcome: 'accepted', carrierMessageId: body.sid };
    }
    if (isRetryableStatus(response.status)) throw unavailable('Twilio', response);
    return {
      outcome: 'rejected',
      errorCode: String(body.code ?? `http_${response.status}`),
      errorDetail: String(body.message ?? `Twilio answered ${response.status}`),
    };
  }
}
