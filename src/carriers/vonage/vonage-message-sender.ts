import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import {
  CarrierUnavailableError, isRetryableStatus, postToCarrier, readJson, unavailable,
  type MessageSender, type OutboundMessage, type SendResult,
} from '../message-sender.js';

/** Vonage's error `type` ends in the numeric code: `https://developer.vonage.com/api-errors/messages#1150`. */
const ERROR_CODE = /#(\w+)$/;

/** Sends SMS through the Vonage Messages API: POST $VONAGE_API_URL/v1/messages with basic auth. */
@Injectable()
export class VonageMessageSender implements MessageSender {
  readonly carrier = 'vonage' as const;

  constructor(private readonly config: AppConfig) {}

  async send(message: OutboundMessage): Promise<SendResult> {
    const auth = Buffer.from(`${this.config.VONAGE_API_KEY}:${this.config.VONAGE_API_SECRET}`).toString('base64');
    const response = await postToCarrier(`${this.config.vonageApiUrl}/v1/messages`, {
      headers: { authorization: `Basic ${auth}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        message_type: 'text',
        channel: 'sms',
        // Vonage wants E.164 without the leading `+`.
        from: message.from.replace(/^\+/, ''),
        to: message.to.replace(/^\+/, ''),
        text: message.text,
        // Our id comes back on every status webhook; Vonage has no Idempotency-Key.
        client_ref: message.id,
      }),
    });
    const body = await readJson(response);
    if (response.ok) {
      if (typeof body.message_uuid !== 'string') throw new CarrierUnavailableError('Vonage accepted the message without a message_uuid');
      return { outcome: 'accepted', carrierMessageId: body.message_uuid };
    }
    if (isRetryableStatus(response.status)) throw unavailable('Vonage', response);
    const type = typeof body.type === 'string' ? body.type : '';
    return {
      outcome: 'rejected',
      errorCode: ERROR_CODE.exec(type)?.[1] ?? `http_${response.status}`,
      errorDetail: String(body.detail ?? body.title ?? `Vonage answered ${response.status}`),
    };
  }
}
