import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { Ed25519Verifier } from '../ed25519-verifier.js';
import { developmentCredentialProblem, header, SignatureRejected, type AcceptedWebhook, type CarrierAdapter, type InboundWebhook } from '../carrier-adapter.js';
import { normalizeTelnyx, readEnvelope } from './telnyx-events.js';
import { SIGNATURE_MISMATCH, telnyxPublicKey, telnyxSignedBytes } from './telnyx-signature.js';

/** POST /webhooks/telnyx: Ed25519-signed API v2 events, deduplicated on `data.id`. */
@Injectable()
export class TelnyxAdapter implements CarrierAdapter, OnModuleDestroy {
  readonly carrier = 'telnyx' as const;
  /** Built once: parsing the key per request would cost as much as the verification. */
  private readonly verifier?: Ed25519Verifier;
  /** The key is the sandbox's: taken from loopback peers only. */
  private readonly development: boolean;

  constructor(private readonly config: AppConfig) {
    // Explicit TELNYX_PUBLIC_KEY, else the sandbox's dev key while we talk to the sandbox.
    const publicKey = config.telnyxPublicKey;
    this.development = config.isDevelopmentCredential('telnyx');
    if (publicKey) this.verifier = new Ed25519Verifier(telnyxPublicKey(publicKey), config.INGEST_VERIFY_THREADS);
  }

  async accept(webhook: InboundWebhook): Promise<AcceptedWebhook> {
    const signed = telnyxSignedBytes(
      {
        signature: header(webhook.headers, 'telnyx-signature-ed25519'),
        timestamp: header(webhook.headers, 'telnyx-timestamp'),
        rawBody: webhook.rawBody,
      },
      this.config.WEBHOOK_TOLERANCE_SECONDS,
    );
    if ('problem' in signed) throw new SignatureRejected(signed.problem);
    // No key we may trust: to the caller, exactly a signature that does not match.
    if (!this.verifier) throw new SignatureRejected(SIGNATURE_MISMATCH, 'TELNYX_PUBLIC_KEY is unset (or the development key) while TELNYX_API_URL is not loopback: set the real key');
    const remote = developmentCredentialProblem(this.development, webhook);
    if (remote) throw new SignatureRejected(SIGNATURE_MISMATCH, `TELNYX_PUBLIC_KEY: ${remote}`);
    if (!(await this.verifier.verify(signed.message, signed.signature))) throw new SignatureRejected(SIGNATURE_MISMATCH);
    const envelope = readEnvelope(webhook.body);
    return {
      event: normalizeTelnyx(envelope),
      carrierEventType: envelope.eventType,
      // The signed bytes are already JSON: Postgres parses them into jsonb, no re-serialization.
      payloadJson: webhook.rawBody.toString('utf8'),
      // data.occurred_at: when the event happened, the same in every retry of it.
      carrierEventTime: envelope.occurredAt,
    };
  }

  async onModuleDestroy(): Promise<void> {
    await this.verifier?.close();
  }
}
