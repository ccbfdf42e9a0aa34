import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

export const IdPrefix = {
  Account: 'acct',
  ApiKey: 'key',
  Message: 'msg',
  Call: 'call',
  CallLeg: 'leg',
  Event: 'evt',
  WebhookEndpoint: 'we',
  CarrierEvent: 'cev',
  PhoneNumber: 'num',
  UsageRecord: 'use',
  OutboxJob: 'job',
  WebhookDelivery: 'dlv',
  Entitlement: 'ent',
  NumberOrder: 'ord',
} as const;
export type IdPrefix = (typeof IdPrefix)[keyof typeof IdPrefix];

/**
 * `<prefix>_<26 chars>`: 48 bits of milliseconds then 80 random bits, Crockford base32,
 * so ids sort by creation time (cursor pagination) and never contain ':' (BullMQ jobIds).
 */
export function newId(prefix: IdPrefix, now = Date.now()): string {
  const random = randomBytesPooled(10);
  // 80 random bits as two 40-bit halves: each fits a double exactly, so no BigInt on the hot path.
  const high = random.readUIntBE(0, 5);
  const low = random.readUIntBE(5, 5);
  return `${prefix}_${base32(now, 10)}${base32(high, 8)}${base32(low, 8)}`;
}

/** The low 5×digits bits of a non-negative integer below 2^53, most significant digit first. */
function base32(value: number, digits: number): string {
  let out = '';
  for (let i = 0; i < digits; i++) {
    out = CROCKFORD[value % 32] + out;
    value = Math.floor(value / 32);
  }
  return out;
}

const POOL_SIZE = 4096;
let pool = Buffer.alloc(0);
let poolOffset = 0;

/**
 * Cryptographically random bytes taken from a pooled buffer: one call into OpenSSL per 4 KiB
 * instead of one per id (per-call overhead showed in the ingest profile). Returns a copy.
 */
export function randomBytesPooled(size: number): Buffer {
  if (size > POOL_SIZE) return randomBytes(size);
  if (poolOffset + size > pool.length) {
    pool = randomBytes(POOL_SIZE);
    poolOffset = 0;
  }
  const out = Buffer.from(pool.subarray(poolOffset, poolOffset + size));
  pool.fill(0, poolOffset, poolOffset + size);
  poolOffset += size;
  return out;
}
