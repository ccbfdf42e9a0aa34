import { createPublicKey, verify, type KeyObject } from 'node:crypto';

/** DER header of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const BASE64_SIGNATURE = /^[A-Za-z0-9+/]{86}==$/;
const UNIX_SECONDS = /^\d{1,12}$/;

/** Telnyx publishes its key as base64 of the raw 32 bytes; OpenSSL wants a KeyObject. */
export function telnyxPublicKey(base64: string): KeyObject {
  const raw = Buffer.from(base64, 'base64');
  if (raw.length !== 32 || raw.toString('base64') !== base64) {
    throw new Error('TELNYX_PUBLIC_KEY must be the base64 of a raw 32-byte Ed25519 public key');
  }
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

export interface TelnyxSignedRequest {
  signature: string | undefined;
  timestamp: string | undefined;
  rawBody: Buffer;
}

/** The bytes Telnyx signed and the signature to check them against. */
export interface TelnyxSignedBytes {
  message: Buffer;
  signature: Buffer;
}

/**
 * Everything but the Ed25519 check itself: a problem to refuse the request with, or the bytes to
 * verify. Ed25519 over `${timestamp}|${raw body}`, timestamp within the tolerance in both
 * directions (a replay of an old delivery and a future-dated one are both refused before any work).
 */
export function telnyxSignedBytes(
  request: TelnyxSignedRequest,
  toleranceSeconds: number,
  nowSeconds = Math.floor(Date.now() / 1000),
): { problem: string } | TelnyxSignedBytes {
  const { signature, timestamp, rawBody } = request;
  if (!signature || !timestamp) return { problem: 'telnyx-signature-ed25519 and telnyx-timestamp headers are required' };
  if (!UNIX_SECONDS.test(timestamp)) return { problem: 'telnyx-timestamp must be unix seconds' };
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) return { problem: 'telnyx-timestamp is outside the tolerance' };
  if (!BASE64_SIGNATURE.test(signature)) return { problem: 'telnyx-signature-ed25519 must be a base64 64-byte signature' };
  return { message: Buffer.concat([Buffer.from(`${timestamp}|`), rawBody]), signature: Buffer.from(signature, 'base64') };
}

export const SIGNATURE_MISMATCH = 'signature does not match';

/** Why a request is refused, or undefined when it is genuine; verifies on the calling thread. */
export function telnyxSignatureProblem(
  key: KeyObject,
  request: TelnyxSignedRequest,
  toleranceSeconds: number,
  nowSeconds = Math.floor(Date.now() / 1000),
): string | undefined {
  const checked = telnyxSignedBytes(request, toleranceSeconds, nowSeconds);
  if ('problem' in checked) return checked.problem;
  // Native OpenSSL Ed25519: about 60x the pure-JS verifier.
  return verify(null, checked.message, key, checked.signature) ? undefined : SIGNATURE_MISMATCH;
}
