import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

export const IdPrefix = {
  Account: 'acct',
  ApiKey: 'key',
  Message: 'msg',
  Call: 'call',
  Event: 'evt',
  WebhookEndpoint: 'we',
  CarrierEvent: 'cev',
  PhoneNumber: 'num',
  UsageRecord: 'use',
  OutboxJob: 'job',
  WebhookDelivery: 'dlv',
} as const;
export type IdPrefix = (typeof IdPrefix)[keyof typeof IdPrefix];

/**
 * `<prefix>_<26 chars>`: 48 bits of milliseconds then 80 random bits, Crockford base32,
 * so ids sort by creation time (cursor pagination) and never contain ':' (BullMQ jobIds).
 */
export function newId(prefix: IdPrefix, now = Date.now()): string {
  let out = '';
  let time = now;
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[time % 32] + out;
    time = Math.floor(time / 32);
  }
  const random = randomBytes(10);
  let acc = 0n;
  for (const byte of random) acc = (acc << 8n) | BigInt(byte);
  let tail = '';
  for (let i = 0; i < 16; i++) {
    tail = CROCKFORD[Number(acc & 31n)] + tail;
    acc >>= 5n;
  }
  return `${prefix}_${out}${tail}`;
}
