import { describe, expect, it } from '@jest/globals';
import { SenderThroughput } from '../sender-throughput.js';

describe('SenderThroughput (the sandbox carrier limit per sending number)', () => {
  it('lets a sender spaced at the rate through, refuses a burst past one second of it with Retry-After, and refills at the rate', () => {
    const limit = new SenderThroughput(10);
    // spaced by exactly 1/rate from a full bucket: never refused
    for (let i = 0; i < 100; i++) expect(limit.take('+15550000001', 1, i * 100)).toBeUndefined();
    // a burst: the bucket (one second's worth, 10) is full again after a quiet second, then empty
    const burst = Array.from({ length: 12 }, () => limit.take('+15550000001', 1, 20_000));
    expect(burst.filter((r) => r === undefined)).toHaveLength(10);
    expect(burst.slice(10)).toEqual([1, 1]);
    // another number has its own bucket
    expect(limit.take('+15550000002', 1, 20_000)).toBeUndefined();
    // 100 ms later one segment has come back
    expect(limit.take('+15550000001', 1, 20_100)).toBeUndefined();
    expect(limit.take('+15550000001', 1, 20_100)).toBe(1);
  });

  it('counts segments, takes a number of its own limit over the default, and 0 is no limit', () => {
    const limit = new SenderThroughput(0);
    for (let i = 0; i < 1000; i++) expect(limit.take('+15550000001', 3, 0)).toBeUndefined();
    limit.numbers.set('+15550000003', 2);
    // a message of more segments than a second's worth still goes from a full bucket ...
    expect(limit.take('+15550000003', 3, 0)).toBeUndefined();
    // ... and empties it: 2 more segments owe one second at 2 a second, 5 more (and later) three
    expect(limit.take('+15550000003', 2, 0)).toBe(1);
    expect(limit.take('+15550000003', 5, 0)).toBe(3);
  });
});
