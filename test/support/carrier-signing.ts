import { createHash, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SignJWT, UnsecuredJWT } from 'jose';
import { twilioSignature } from '../../src/carriers/twilio/twilio-signature.js';

/**
 * Builds and signs carrier webhooks the way Telnyx and Twilio do, for tests and the sandbox:
 * a fresh Ed25519 key pair per Telnyx signer, HMAC-SHA1 over URL + sorted fields for Twilio, an
 * HS256 JWT bound to the body for Vonage.
 */

const FIXTURES = new URL('../fixtures/carriers/', import.meta.url);

/** A sample webhook body from test/fixtures/carriers (copied from the shared carrier samples). */
export function carrierFixture(name: string): string {
  return readFileSync(new URL(name, FIXTURES), 'utf8');
}

export interface TelnyxSigner {
  /** base64 of the raw 32-byte public key: the TELNYX_PUBLIC_KEY to configure. */
  publicKey: string;
  privateKey: KeyObject;
  /** The two headers Telnyx sends, for these exact body bytes. */
  headers(body: string | Buffer, timestamp?: number): Record<string, string>;
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export function telnyxSigner(): TelnyxSigner {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
  return {
    publicKey: raw.toString('base64'),
    privateKey,
    headers(body, timestamp = nowSeconds()) {
      const signed = Buffer.concat([Buffer.from(`${timestamp}|`), Buffer.from(body)]);
      return {
        'content-type': 'application/json',
        'telnyx-timestamp': String(timestamp),
        'telnyx-signature-ed25519': sign(null, signed, privateKey).toString('base64'),
      };
    },
  };
}

export interface TelnyxEventOptions {
  id?: string;
  attempt?: number;
  occurredAt?: string;
}

/** A Telnyx API v2 envelope around a payload; `attempt` changes the body as a real retry does. */
export function telnyxEvent(eventType: string, payload: Record<string, unknown>, options: TelnyxEventOptions = {}): string {
  return JSON.stringify({
    data: { event_type: eventType, id: options.id ?? randomUUID(), occurred_at: options.occurredAt ?? new Date().toISOString(), record_type: 'event', payload },
    meta: { attempt: options.attempt ?? 1, delivered_to: 'http://127.0.0.1/webhooks/telnyx' },
  });
}

/** A Telnyx `message.received` (the shared sample) of a new inbound SMS to `toNumber`: its body and carrier message id. */
export function telnyxInboundSms(toNumber: string, text: string, options: { from?: string; carrierMessageId?: string } = {}): { body: string; carrierMessageId: string } {
  const carrierMessageId = options.carrierMessageId ?? randomUUID();
  const sample = JSON.parse(carrierFixture('telnyx/message.received.json')).data.payload;
  const from = options.from ? { ...sample.from, phone_number: options.from } : sample.from;
  const payload = { ...sample, id: carrierMessageId, from, to: [{ phone_number: toNumber }], text };
  return { body: telnyxEvent('message.received', payload), carrierMessageId };
}

/** A fixture with its event id and meta.attempt replaced: the same event delivered again. */
export function telnyxFixture(name: string, options: TelnyxEventOptions = {}): string {
  const body = JSON.parse(carrierFixture(`telnyx/${name}`));
  if (options.id) body.data.id = options.id;
  if (options.attempt) body.meta.attempt = options.attempt;
  if (options.occurredAt) body.data.occurred_at = options.occurredAt;
  return JSON.stringify(body);
}

/**
 * An outbound message receipt for `carrierMessageId` with Telnyx status word `status`; a
 * `delivery_failed` one fails as undeliverable (40008), or with 40300 ("Blocked due to STOP
 * message": the handset texted STOP to Telnyx) when `optedOut`.
 */
export function telnyxReceipt(carrierMessageId: string, status: string, options: TelnyxEventOptions & { optedOut?: boolean } = {}): string {
  const failed = options.optedOut ? 'message.finalized.opted-out.json' : 'message.finalized.failed.json';
  const body = JSON.parse(telnyxFixture(status === 'delivery_failed' ? failed : 'message.finalized.delivered.json', options));
  body.data.id = options.id ?? randomUUID();
  body.data.payload.id = carrierMessageId;
  body.data.payload.to[0].status = status;
  if (!['delivery_failed', 'sending_failed'].includes(status)) body.data.payload.errors = [];
  return JSON.stringify(body);
}

export type TwilioFields = Record<string, string>;

export function formBody(fields: TwilioFields): string {
  return new URLSearchParams(fields).toString();
}

export function parseForm(body: string): TwilioFields {
  return Object.fromEntries(new URLSearchParams(body));
}

/** Headers of a Twilio callback to `url` (PUBLIC_BASE_URL + path) carrying `fields`. */
export function twilioHeaders(authToken: string, url: string, fields: TwilioFields, idempotencyToken?: string): Record<string, string> {
  return {
    'content-type': 'application/x-www-form-urlencoded',
    'x-twilio-signature': twilioSignature(authToken, url, fields),
    ...(idempotencyToken && { 'i-twilio-idempotency-token': idempotencyToken }),
  };
}

/**
 * A Vonage token signed by `jose` directly (the reference, independent of our helper): HS256
 * unless `alg` says otherwise, `payload_hash` of `body` unless overridden.
 */
export async function vonageToken(secret: string, body: string, claims: { jti?: string; iat?: number; payloadHash?: string; alg?: 'HS256' | 'HS512' } = {}): Promise<string> {
  return new SignJWT({ payload_hash: claims.payloadHash ?? createHash('sha256').update(body).digest('hex') })
    .setProtectedHeader({ alg: claims.alg ?? 'HS256', typ: 'JWT' })
    .setIssuer('Vonage')
    .setJti(claims.jti ?? randomUUID())
    .setIssuedAt(claims.iat ?? nowSeconds())
    .sign(new TextEncoder().encode(secret));
}

/** An unsigned token (`alg: none`) with otherwise valid claims: a forger's first try. */
export function vonageUnsignedToken(body: string): string {
  return new UnsecuredJWT({ payload_hash: createHash('sha256').update(body).digest('hex') }).setJti(randomUUID()).setIssuedAt(nowSeconds()).encode();
}

export function vonageHeaders(token: string): Record<string, string> {
  return { 'content-type': 'application/json', authorization: `Bearer ${token}` };
}

/** A Vonage fixture with its message_uuid (and status) replaced. */
export function vonageFixture(name: string, changes: Record<string, unknown> = {}): string {
  return JSON.stringify({ ...JSON.parse(carrierFixture(`vonage/${name}`)), ...changes });
}
