import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { honourRetryAfter, jittered, scheduledDelayMs } from '../retry-policy.js';

const NOW = Date.UTC(2030, 0, 15, 12, 0, 0);

describe('jittered', () => {
  it('spans exactly ±20% of the scheduled seconds, in milliseconds', () => {
    expect(jittered(10, () => 0)).toBe(8_000);
    expect(jittered(10, () => 0.5)).toBe(10_000);
    expect(jittered(10, () => 1)).toBe(12_000);
    expect(jittered(300, () => 0.25)).toBe(270_000);
  });

  it('stays within [0.8 s, 1.2 s] for any random draw in [0, 1)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 86_400 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (seconds, r) => {
        const ms = jittered(seconds, () => r);
        expect(Number.isInteger(ms)).toBe(true);
        expect(ms).toBeGreaterThanOrEqual(Math.floor(seconds * 800));
        expect(ms).toBeLessThanOrEqual(Math.ceil(seconds * 1200));
      }),
    );
  });

  it('a zero delay stays zero whatever the draw', () => {
    expect(jittered(0, () => 0.9)).toBe(0);
  });

  it('uses Math.random by default: bounded and actually varying', () => {
    const draws = Array.from({ length: 200 }, () => jittered(100));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(80_000);
    expect(Math.max(...draws)).toBeLessThanOrEqual(120_000);
    expect(new Set(draws).size).toBeGreaterThan(100);
  });
});

describe('honourRetryAfter', () => {
  it('keeps the schedule when the customer says nothing', () => {
    expect(honourRetryAfter(5_000, undefined, NOW)).toBe(5_000);
    expect(honourRetryAfter(5_000, '', NOW)).toBe(5_000);
  });

  it('reads delta-seconds, surrounding whitespace allowed', () => {
    expect(honourRetryAfter(5_000, '7', NOW)).toBe(7_000);
    expect(honourRetryAfter(5_000, ' 8 ', NOW)).toBe(8_000);
  });

  it('reads an HTTP date relative to now', () => {
    const in8s = new Date(NOW + 8_000).toUTCString();
    expect(honourRetryAfter(5_000, in8s, NOW)).toBe(8_000);
    expect(honourRetryAfter(5_000, 'Tue, 15 Jan 2030 12:00:09 GMT', NOW)).toBe(9_000);
  });

  it('never hurries the schedule: shorter asks, zero and past dates give the scheduled delay', () => {
    expect(honourRetryAfter(5_000, '1', NOW)).toBe(5_000);
    expect(honourRetryAfter(5_000, '0', NOW)).toBe(5_000);
    expect(honourRetryAfter(5_000, new Date(NOW - 60_000).toUTCString(), NOW)).toBe(5_000);
  });

  it('never stalls past twice the schedule: long asks and far dates give 2 × scheduled', () => {
    expect(honourRetryAfter(5_000, '3600', NOW)).toBe(10_000);
    expect(honourRetryAfter(5_000, '99999999999999999999999', NOW)).toBe(10_000);
    expect(honourRetryAfter(5_000, new Date(NOW + 86_400_000).toUTCString(), NOW)).toBe(10_000);
  });

  it.each(['garbage', 'soon', '10s', '1e3', 'Infinity', 'NaN', '-5', '1.5', '+5'])('ignores %j (keeps the schedule)', (header) => {
    expect(honourRetryAfter(5_000, header, NOW)).toBe(5_000);
  });

  it('always lands in [scheduled, 2 × scheduled], whatever the header', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000_000 }), fc.oneof(fc.string(), fc.nat().map(String), fc.date({ noInvalidDate: true }).map((d) => d.toUTCString())), (scheduled, header) => {
        const ms = honourRetryAfter(scheduled, header, NOW);
        expect(ms).toBeGreaterThanOrEqual(scheduled);
        expect(ms).toBeLessThanOrEqual(2 * scheduled);
      }),
    );
  });
});

describe('scheduledDelayMs', () => {
  const schedule = [0, 5, 300];

  it('jitters the entry of the attempt index', () => {
    expect(scheduledDelayMs(schedule, 0, () => 0)).toBe(0);
    expect(scheduledDelayMs(schedule, 1, () => 0)).toBe(4_000);
    expect(scheduledDelayMs(schedule, 2, () => 1)).toBe(360_000);
  });

  it('is undefined once the round is over (end of schedule)', () => {
    expect(scheduledDelayMs(schedule, 3, () => 0.5)).toBeUndefined();
    expect(scheduledDelayMs(schedule, 99)).toBeUndefined();
    expect(scheduledDelayMs([], 0)).toBeUndefined();
  });
});
