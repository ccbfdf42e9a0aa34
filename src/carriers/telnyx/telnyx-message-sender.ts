import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import {
  CarrierUnavailableError, isRetryableStatus, postToCarrier, readJson, unavailable,
  type MessageSender, type OutboundMessage, type SendResult,
} from '../message-sender.js';

/** Sends SMS through Telnyx API v2: POST $TELNYX_API_URL/messages with a bearer key. */
@Injectable()
export class TelnyxMessageSender implements MessageSender {
  readonly carrier = 'telnyx' as const;

  constructor(private readonly config: AppConfig) {}

  async send(message: OutboundMessage): Promise<SendResult> {
    const response = await postToCarrier(`${this.config.telnyxApiUrl}/messages`, {
      headers: {
        authorization: `Bearer ${this.config.TELNYX_API_KEY}`,
        'content-type': 'application/json',
        'idempotency-key': message.id,
      },
      body: JSON.stringify({ from: message.from, to: message.to, text: message.text, type: 'SMS' }),
    });
    const body = await readJson(response);
    if (response.ok) {
      const id = (body.data as { id?: unknown } | undefined)?.id;
      if (typeof id !== 'string') throw new CarrierUnavailableError('Telnyx accepted the message without an id');
      return { outcome: 'accepted', carrierMessageId: id };
    }
    if (isRetryableStatus(response.status)) throw unavailable('Telnyx', response);
    const [first] = (body.errors as { code?: string; title?: string; detail?: string }[] | undefined) ?? [];
    return {
      outcome: 'rejected',
      errorCode: String(first?.code ?? `http_${response.status}`),
      errorDetail: first?.detail ?? first?.title ?? `Telnyx answered ${response.status}`,
    };
  }
}
