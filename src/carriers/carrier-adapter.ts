import { isLoopbackAddress } from '../platform/net/loopback.js';
import type { CarrierName } from './carrier-name.js';
import type { NormalizedEvent } from './normalized-event.js';

/** One carrier webhook as it reached us, before anything trusts it. */
export interface InboundWebhook {
  /** The exact bytes received: what the carrier signed. */
  rawBody: Buffer;
  /** The body as the HTTP layer parsed it (JSON value or form fields). */
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
  /** Path plus query string as requested, e.g. `/webhooks/twilio/voice?x=1`. */
  url: string;
  /** The TCP peer's address (the socket's, never a forwarded header): development credentials need a loopback one. */
  peerAddress: string | undefined;
  /**
   * Which of the carrier's webhook URLs was called, for carriers with several (Twilio: messaging,
   * and for voice the incoming call, a dial's result, status callbacks, a voicemail recording).
   */
  channel?: 'messaging' | 'voice' | 'voice.dial' | 'voice.status' | 'voice.recording';
}

/** A verified webhook, normalized: what ingest stores. */
export interface AcceptedWebhook {
  event: NormalizedEvent;
  /** The carrier's own word for the event type, kept for humans and `ignored` events. */
  carrierEventType: string;
  /** The carrier's body as JSON text (stored as jsonb). */
  payloadJson: string;
  /** For carriers that sign with a nonce: the replay key under a partial unique index. */
  signatureNonce?: string;
  /**
   * When the carrier stamps its events with a time of its own that every retry of the event
   * repeats (Telnyx's `occurred_at`, Vonage's `timestamp`): that time, ISO 8601. No copy of the
   * event can have reached us before it (less the carrier's clock error), which spares the dedupe
   * guard a look at older partitions. Absent where the time is ours (Twilio's callbacks carry none).
   */
  carrierEventTime?: string;
}

/** Verifies and normalizes one carrier's webhooks; the only code that knows its vocabulary. */
export interface CarrierAdapter {
  readonly carrier: CarrierName;
  /** Rejects with SignatureRejected (401) or MalformedWebhook (400); never touches storage. */
  accept(webhook: InboundWebhook): Promise<AcceptedWebhook>;
}

/**
 * Signature missing or wrong, or timestamp outside the tolerance: answered 401. The message is the
 * caller's (it goes in the response body); `internalReason` is ours and goes to the log only, e.g.
 * that no credential is configured, which is no business of whoever sent the request.
 */
export class SignatureRejected extends Error {
  constructor(
    message: string,
    readonly internalReason?: string,
  ) {
    super(message);
  }
}

/** Correctly signed but not the carrier's shape: answered 400. */
export class MalformedWebhook extends Error {}

/** One header's value, whatever its case in the request (Node lower-cases them already). */
export function header(headers: InboundWebhook['headers'], name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Why a webhook verified by a published development credential is refused (for the log), or
 * undefined: such a credential is in this repository, so it proves something only for a request
 * from this machine (the sandbox, a test), never from the network.
 */
export function developmentCredentialProblem(development: boolean, webhook: InboundWebhook): string | undefined {
  if (!development || (webhook.peerAddress !== undefined && isLoopbackAddress(webhook.peerAddress))) return undefined;
  return `a development credential verifies webhooks from loopback peers only; this one came from ${webhook.peerAddress ?? 'an unknown peer'}: set the real credential`;
}
