import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { IdPrefix, newId, randomBytesPooled } from '../ids.js';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
const BODY = /^[0-9a-hjkmnp-tv-z]{26}$/;

/** The milliseconds in an id's first 10 characters. */
function timeOf(id: string): number {
  return [...id.split('_')[1].slice(0, 10)].reduce((n, c) => n * 32 + CROCKFORD.indexOf(c), 0);
}

describe('newId', () => {
  it.each(Object.entries(IdPrefix))('%s ids are "%s_" + 26 Crockford base32 characters', (_name, prefix) => {
    const id = newId(prefix);
    expect(id.startsWith(`${prefix}_`)).toBe(true);
    expect(id.slice(prefix.length + 1)).toMatch(BODY);
  });

  it('prefixes are distinct, lower-case and free of "_" and ":"', () => {
    const prefixes = Object.values(IdPrefix);
    expect(new Set(prefixes).size).toBe(prefixes.length);
    for (const p of prefixes) expect(p).toMatch(/^[a-z]+$/);
  });

  it('never contains ":" nor the ambiguous letters i, l, o, u', () => {
    const ids = Array.from({ length: 2_000 }, () => newId(IdPrefix.Message).slice(4)).join('');
    expect(ids).not.toMatch(/[:ilou]/);
  });

  it('carries its creation time in the first 10 characters', () => {
    expect(timeOf(newId(IdPrefix.Event, 0))).toBe(0);
    expect(timeOf(newId(IdPrefix.Event, 1_900_000_000_123))).toBe(1_900_000_000_123);
    expect(timeOf(newId(IdPrefix.Event, 2 ** 48 - 1))).toBe(2 ** 48 - 1);
  });

  it('sorts by creation time (string order = millisecond order)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), fc.integer({ min: 0, max: 2 ** 48 - 1 }), (a, b) => {
        fc.pre(a !== b);
        const [ia, ib] = [newId(IdPrefix.Message, a), newId(IdPrefix.Message, b)];
        expect(ia < ib).toBe(a < b);
      }),
    );
  });

  it('is unique over 10,000 ids minted in the same millisecond', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 10_000; i++) ids.add(newId(IdPrefix.CarrierEvent, 1_900_000_000_000));
    expect(ids.size).toBe(10_000);
  });

  it('minted from the clock, sort in the order they were minted, within a millisecond too', () => {
    const ids = Array.from({ length: 5_000 }, () => newId(IdPrefix.Event));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids.map((id) => id.slice(4, 14))).size).toBeLessThan(ids.length);
  });

  it('its 80 random bits are not stuck: every character position varies', () => {
    const tails = Array.from({ length: 500 }, () => newId(IdPrefix.Message, 0).slice(-16));
    for (let pos = 0; pos < 16; pos++) expect(new Set(tails.map((t) => t[pos])).size).toBeGreaterThan(16);
  });
});

describe('randomBytesPooled', () => {
  it('returns the size asked, including sizes past the pool', () => {
    for (const size of [0, 1, 10, 4_096, 4_097, 10_000]) expect(randomBytesPooled(size)).toHaveLength(size);
  });

  it('never hands out the same bytes twice, across pool refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5_000; i++) seen.add(randomBytesPooled(10).toString('hex'));
    expect(seen.size).toBe(5_000);
  });

  it('returns a copy: changing it does not change later draws', () => {
    const a = randomBytesPooled(16);
    a.fill(0);
    const b = randomBytesPooled(16);
    expect(b.equals(Buffer.alloc(16))).toBe(false);
  });
});
