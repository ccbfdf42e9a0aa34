import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { developmentCredentialProblem, header, SignatureRejected, type AcceptedWebhook, type CarrierAdapter, type InboundWebhook } from '../carrier-adapter.js';
import { normalizeVonage, readCallback } from './vonage-events.js';
import { SIGNATURE_REFUSED, verifyVonageWebhook } from './vonage-signature.js';

/** POST /webhooks/vonage/messages: Messages API v1 callbacks under an HS256 JWT bound to the body. */
@Injectable()
export class VonageAdapter implements CarrierAdapter {
  readonly carrier = 'vonage' as const;

  constructor(private readonly config: AppConfig) {}

  async accept(webhook: InboundWebhook): Promise<AcceptedWebhook> {
    // The published development secret outside the sandbox: nothing a caller sends can be trusted.
    const secret = this.config.vonageSignatureSecret;
    if (!secret) throw new SignatureRejected(SIGNATURE_REFUSED, 'VONAGE_SIGNATURE_SECRET is the development value while VONAGE_API_URL is not loopback: set the real secret');
    const remote = developmentCredentialProblem(this.config.isDevelopmentCredential('vonage'), webhook);
    if (remote) throw new SignatureRejected(SIGNATURE_REFUSED, `VONAGE_SIGNATURE_SECRET: ${remote}`);
    const verified = await verifyVonageWebhook(secret, header(webhook.headers, 'authorization'), webhook.rawBody, this.config.WEBHOOK_TOLERANCE_SECONDS);
    if ('problem' in verified) throw new SignatureRejected(verified.problem);
    const callback = readCallback(webhook.body);
    const event = normalizeVonage(callback);
    return {
      // message_uuid + status: a new token for the same status (a re-signed retry) is a duplicate.
      event,
      carrierEventType: callback.status,
      // The signed bytes are JSON already (payload_hash proved they are these).
      payloadJson: webhook.rawBody.toString('utf8'),
      // The token's nonce: a replayed token is refused by the partial unique index, whatever its body.
      signatureNonce: verified.jti,
      // The body's timestamp: when the status happened, the same in every retry of it.
      carrierEventTime: event.occurredAt,
    };
  }
}
