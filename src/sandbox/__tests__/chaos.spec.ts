import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ChaosSyntaxError, formatChaos, MAX_DELAY_MS, MAX_DUPLICATE, NO_CHAOS, parseChaos, pickSendFault, shuffle, type Chaos } from '../chaos.js';

const rate = fc.oneof(fc.constant(0), fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true }).filter((x) => !Object.is(x, -0)));
const anyChaos: fc.Arbitrary<Chaos> = fc.record({
  duplicate: fc.integer({ min: 1, max: MAX_DUPLICATE }),
  resign: fc.boolean(),
  earlyReceipt: fc.boolean(),
  contradict: fc.boolean(),
  reorder: fc.boolean(),
  delayMs: fc.integer({ min: 0, max: MAX_DELAY_MS }),
  failRate: rate,
  rejectRate: rate,
});

/** A small deterministic PRNG (mulberry32), so statistical checks never flake. */
function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('parseChaos / formatChaos', () => {
  it('round-trips every valid setting: parse(format(c)) = c', () => {
    fc.assert(fc.property(anyChaos, (chaos) => expect(parseChaos(formatChaos(chaos))).toEqual(chaos)));
  });

  it('format is canonical: format(parse(format(c))) = format(c), whatever the knob order', () => {
    expect(formatChaos(parseChaos('reorder, delay_ms=200 ,duplicate=3,resign'))).toBe('duplicate=3,resign,reorder,delay_ms=200');
    fc.assert(fc.property(anyChaos, (chaos) => expect(formatChaos(parseChaos(formatChaos(chaos)))).toBe(formatChaos(chaos))));
  });

  it('nothing, empty parts and "off" mean no chaos', () => {
    expect(parseChaos(undefined)).toEqual(NO_CHAOS);
    expect(parseChaos('')).toEqual(NO_CHAOS);
    expect(parseChaos(' , ,')).toEqual(NO_CHAOS);
    expect(formatChaos(NO_CHAOS)).toBe('off');
    expect(parseChaos('off')).toEqual(NO_CHAOS);
  });

  it('reads every knob of the documented example', () => {
    expect(parseChaos('duplicate=3,resign,early_receipt,contradict,reorder,delay_ms=200,fail_rate=0.3,reject')).toEqual({
      duplicate: 3, resign: true, earlyReceipt: true, contradict: true, reorder: true, delayMs: 200, failRate: 0.3, rejectRate: 1,
    });
  });

  it('applies on top of a base (the header overrides) and "off"/"none" reset it', () => {
    const base = parseChaos('duplicate=5,reorder');
    expect(parseChaos('delay_ms=10', base)).toEqual({ ...base, delayMs: 10 });
    expect(parseChaos('duplicate=2', base).duplicate).toBe(2);
    expect(parseChaos('none', base)).toEqual(NO_CHAOS);
    expect(parseChaos('off,resign', base)).toEqual({ ...NO_CHAOS, resign: true });
    expect(base).toEqual({ ...NO_CHAOS, duplicate: 5, reorder: true });
  });

  it('flags take no value or 0/1', () => {
    expect(parseChaos('resign=1').resign).toBe(true);
    expect(parseChaos('resign=0').resign).toBe(false);
    expect(parseChaos('reorder=0', parseChaos('reorder')).reorder).toBe(true);
    expect(() => parseChaos('resign=yes')).toThrow(new ChaosSyntaxError('chaos knob resign: takes no value (or 0/1)'));
    expect(() => parseChaos('reorder=')).toThrow(ChaosSyntaxError);
  });

  it('reject alone means every call; reject_rate is a share', () => {
    expect(parseChaos('reject').rejectRate).toBe(1);
    expect(parseChaos('reject_rate=0.25').rejectRate).toBe(0.25);
    expect(formatChaos({ ...NO_CHAOS, rejectRate: 1 })).toBe('reject');
    expect(formatChaos({ ...NO_CHAOS, rejectRate: 0.25 })).toBe('reject_rate=0.25');
  });

  it('accepts the ends of every range', () => {
    expect(parseChaos(`duplicate=1,delay_ms=0,fail_rate=0,reject_rate=0`)).toEqual(NO_CHAOS);
    expect(parseChaos(`duplicate=${MAX_DUPLICATE},delay_ms=${MAX_DELAY_MS},fail_rate=1,reject_rate=1`)).toMatchObject({
      duplicate: MAX_DUPLICATE, delayMs: MAX_DELAY_MS, failRate: 1, rejectRate: 1,
    });
  });

  it.each([
    ['duplicate=0', /chaos knob duplicate: needs a whole number from 1 to 50/],
    [`duplicate=${MAX_DUPLICATE + 1}`, /chaos knob duplicate/],
    ['duplicate=2.5', /chaos knob duplicate: needs a whole number/],
    ['duplicate', /chaos knob duplicate/],
    ['duplicate=', /chaos knob duplicate/],
    ['duplicate=abc', /chaos knob duplicate/],
    [`delay_ms=${MAX_DELAY_MS + 1}`, /chaos knob delay_ms: needs a whole number from 0 to 10000/],
    ['delay_ms=-1', /chaos knob delay_ms/],
    ['fail_rate=1.01', /chaos knob fail_rate: needs a number from 0 to 1/],
    ['fail_rate=-0.1', /chaos knob fail_rate/],
    ['fail_rate=Infinity', /chaos knob fail_rate/],
    ['fail_rate=NaN', /chaos knob fail_rate/],
    ['reject_rate=2', /chaos knob reject_rate/],
    ['explode', /unknown chaos knob "explode" \(known: .*duplicate.*reject_rate, off\)/],
    ['Reorder', /unknown chaos knob "Reorder"/],
    ['=3', /unknown chaos knob ""/],
  ])('%j is a ChaosSyntaxError naming the knob', (spec, message) => {
    expect(() => parseChaos(spec)).toThrow(ChaosSyntaxError);
    expect(() => parseChaos(spec)).toThrow(message);
  });

  it('a bad knob anywhere rejects the whole spec without touching the base', () => {
    const base = parseChaos('reorder');
    expect(() => parseChaos('duplicate=3,explode', base)).toThrow(ChaosSyntaxError);
    expect(base).toEqual({ ...NO_CHAOS, reorder: true });
  });

  it('NO_CHAOS cannot be changed by accident', () => {
    expect(Object.isFrozen(NO_CHAOS)).toBe(true);
    parseChaos('duplicate=9,reject');
    expect(formatChaos(NO_CHAOS)).toBe('off');
  });
});

describe('pickSendFault', () => {
  it('no rates: never a fault', () => {
    const random = seeded(1);
    const faults = Array.from({ length: 1_000 }, () => pickSendFault(NO_CHAOS, random));
    expect(faults.filter((f) => f !== undefined)).toEqual([]);
  });

  it('reject (rate 1): always a refusal', () => {
    const random = seeded(2);
    const faults = Array.from({ length: 1_000 }, () => pickSendFault({ ...NO_CHAOS, rejectRate: 1, failRate: 1 }, random));
    expect(new Set(faults)).toEqual(new Set(['reject']));
  });

  it('fail_rate 1: 500, 503 and timeouts, each about a third', () => {
    const random = seeded(3);
    const counts: Record<string, number> = {};
    for (let i = 0; i < 9_000; i++) {
      const fault = pickSendFault({ ...NO_CHAOS, failRate: 1 }, random)!;
      counts[fault] = (counts[fault] ?? 0) + 1;
    }
    expect(Object.keys(counts).sort()).toEqual(['500', '503', 'timeout']);
    for (const n of Object.values(counts)) expect(Math.abs(n - 3_000)).toBeLessThan(300);
  });

  it('rates are shares of calls', () => {
    const random = seeded(4);
    const chaos = { ...NO_CHAOS, rejectRate: 0.2, failRate: 0.25 };
    let rejected = 0;
    let failed = 0;
    const N = 20_000;
    for (let i = 0; i < N; i++) {
      const fault = pickSendFault(chaos, random);
      if (fault === 'reject') rejected++;
      else if (fault) failed++;
    }
    expect(rejected / N).toBeCloseTo(0.2, 1);
    expect(failed / N).toBeCloseTo(0.8 * 0.25, 1);
  });
});

describe('shuffle', () => {
  it('returns a permutation and leaves its input alone', () => {
    fc.assert(
      fc.property(fc.array(fc.integer()), fc.integer(), (items, seed) => {
        const copy = [...items];
        const out = shuffle(items, seeded(seed));
        expect(items).toEqual(copy);
        expect([...out].sort((a, b) => a - b)).toEqual([...items].sort((a, b) => a - b));
      }),
    );
  });

  it('every order of three items is about equally likely (including the original one)', () => {
    const random = seeded(5);
    const counts = new Map<string, number>();
    for (let i = 0; i < 6_000; i++) {
      const key = shuffle(['a', 'b', 'c'], random).join('');
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    expect(counts.size).toBe(6);
    for (const n of counts.values()) expect(Math.abs(n - 1_000)).toBeLessThan(150);
  });
});
