import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';

/** DER header of an Ed25519 PKCS#8 private key; the raw 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The seed used when SANDBOX_TELNYX_SEED is unset: a well-known, development-only key pair. */
export const DEFAULT_SANDBOX_TELNYX_SEED = 'onceline-dev-sandbox-telnyx';

export interface TelnyxDevKeyPair {
  privateKey: KeyObject;
  /** base64 of the raw 32-byte public key, the form TELNYX_PUBLIC_KEY takes. */
  publicKey: string;
}

const cache = new Map<string, TelnyxDevKeyPair>();

/**
 * The sandbox's Telnyx signing key pair, derived from a seed phrase (SHA-256 of it is the
 * Ed25519 seed). Deterministic, so the sandbox (which signs) and the app (which verifies) agree
 * without exchanging anything: both read the same SANDBOX_TELNYX_SEED. Never a production key.
 */
export function telnyxDevKeyPair(seed: string = DEFAULT_SANDBOX_TELNYX_SEED): TelnyxDevKeyPair {
  const known = cache.get(seed);
  if (known) return known;
  const raw = createHash('sha256').update(seed, 'utf8').digest();
  const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, raw]), format: 'der', type: 'pkcs8' });
  const x = createPublicKey(privateKey).export({ format: 'jwk' }).x as string;
  const pair = { privateKey, publicKey: Buffer.from(x, 'base64url').toString('base64') };
  cache.set(seed, pair);
  return pair;
}
