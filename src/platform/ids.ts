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
 * Minted from the clock (no `now`), ids of one process also sort in the order they were minted:
 * within one millisecond the next id is the last one's random part plus one (ULID's monotonic
 * mode), as onceline_id() does in SQL for one connection (migration 0023: customer events of one
 * transaction, `call.answered` then `call.completed`, list in that order). With an explicit `now`
 * every id gets fresh random bits.
 */
export function newId(prefix: IdPrefix, now?: number): string {
  if (now !== undefined) {
    const [high, low] = randomHalves();
    return format(prefix, now, high, low);
  }
  const clock = Date.now();
  if (clock > last.ms) {
    [last.high, last.low] = randomHalves();
    last.ms = clock;
  } else if (last.low < HALF_MAX) {
    // The same millisecond (or the clock stepped back): one more than the last id.
    last.low++;
  } else if (last.high < HALF_MAX) {
    last.high++;
    last.low = 0;
  } else {
    // 2^80 ids in one millisecond: the next millisecond's first.
    last.ms++;
    last.high = 0;
    last.low = 0;
  }
  return format(prefix, last.ms, last.high, last.low);
}

const HALF_MAX = 2 ** 40 - 1;
/** The last id minted from the clock in this process. */
const last = { ms: -1, high: 0, low: 0 };

/** 80 random bits as two 40-bit halves: each fits a double exactly, so no BigInt on the hot path. */
function randomHalves(): [number, number] {
  const random = randomBytesPooled(10);
  return [random.readUIntBE(0, 5), random.readUIntBE(5, 5)];
}

function format(prefix: IdPrefix, ms: number, high: number, low: number): string {
  return `${prefix}_${base32(ms, 10)}${base32(high, 8)}${base32(low, 8)}`;
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
