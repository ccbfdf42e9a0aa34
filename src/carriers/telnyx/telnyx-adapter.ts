import { Injectable } from '@nestjs/common';
import type { KeyObject } from 'node:crypto';
import { AppConfig } from '../../config/app-config.js';
import { header, SignatureRejected, type AcceptedWebhook, type CarrierAdapter, type InboundWebhook } from '../carrier-adapter.js';
import { normalizeTelnyx, readEnvelope } from './telnyx-events.js';
import { telnyxPublicKey, telnyxSignatureProblem } from './telnyx-signature.js';

/** POST /webhooks/telnyx: Ed25519-signed API v2 events, deduplicated on `data.id`. */
@Injectable()
export class TelnyxAdapter implements CarrierAdapter {
  readonly carrier = 'telnyx' as const;
  /** Built once: parsing the key per request would cost as much as the verification. */
  private readonly key?: KeyObject;

  constructor(private readonly config: AppConfig) {
    // Explicit TELNYX_PUBLIC_KEY, else the sandbox's dev key while we talk to the sandbox.
    const publicKey = config.telnyxPublicKey;
    if (publicKey) this.key = telnyxPublicKey(publicKey);
  }

  accept(webhook: InboundWebhook): AcceptedWebhook {
    if (!this.key) throw new SignatureRejected('TELNYX_PUBLIC_KEY is not configured: no Telnyx webhook can be verified');
    const problem = telnyxSignatureProblem(
      this.key,
      {
        signature: header(webhook.headers, 'telnyx-signature-ed25519'),
        timestamp: header(webhook.headers, 'telnyx-timestamp'),
        rawBody: webhook.rawBody,
      },
      this.config.WEBHOOK_TOLERANCE_SECONDS,
    );
    if (problem) throw new SignatureRejected(problem);
    const envelope = readEnvelope(webhook.body);
    return {
      event: normalizeTelnyx(envelope),
      carrierEventType: envelope.eventType,
      // The signed bytes are already JSON: Postgres parses them into jsonb, no re-serialization.
      payloadJson: webhook.rawBody.toString('utf8'),
    };
  }
}
