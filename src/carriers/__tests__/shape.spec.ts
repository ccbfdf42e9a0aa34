import { describe, expect, it } from '@jest/globals';
import { MalformedWebhook } from '../carrier-adapter.js';
import { instant, isObject, object, optionalText, text, type Json } from '../shape.js';

/** The error a reader throws, for asserting its class and message together. */
function thrown(read: () => unknown): Error {
  try {
    read();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the reader to throw');
}

const WRONG_TYPES: Array<[string, unknown]> = [['a number', 42], ['a boolean', true], ['null', null], ['an array', ['x']], ['missing', undefined]];

describe('isObject', () => {
  it('is true only for plain non-null, non-array objects', () => {
    expect(isObject({})).toBe(true);
    expect(isObject({ a: 1 })).toBe(true);
    for (const v of [null, undefined, [], [{}], 'x', 0, true]) expect(isObject(v)).toBe(false);
  });
});

describe('object', () => {
  it('returns the nested object itself', () => {
    const payload = { to: '+1' };
    expect(object({ payload }, 'payload', 'data')).toBe(payload);
    expect(object({ payload: {} }, 'payload', 'data')).toEqual({});
  });

  it.each([...WRONG_TYPES, ['a string', 'x']])('refuses %s, naming the path', (_name, value) => {
    const err = thrown(() => object({ payload: value } as Json, 'payload', 'data'));
    expect(err).toBeInstanceOf(MalformedWebhook);
    expect(err.message).toBe('data.payload must be an object');
  });
});

describe('text', () => {
  it('returns the string as is (no trimming)', () => {
    expect(text({ id: 'abc' }, 'id', 'data')).toBe('abc');
    expect(text({ id: ' a ' }, 'id', 'data')).toBe(' a ');
  });

  it.each([...WRONG_TYPES, ['an object', { a: 1 }], ['empty', '']])('refuses %s, naming the path', (_name, value) => {
    const err = thrown(() => text({ id: value } as Json, 'id', 'data.payload'));
    expect(err).toBeInstanceOf(MalformedWebhook);
    expect(err.message).toBe('data.payload.id must be a non-empty string');
  });
});

describe('optionalText', () => {
  it('returns a non-empty string, else undefined (never throws)', () => {
    expect(optionalText({ a: 'x' }, 'a')).toBe('x');
    expect(optionalText({ a: '' }, 'a')).toBeUndefined();
    expect(optionalText({}, 'a')).toBeUndefined();
    for (const [, value] of WRONG_TYPES) expect(optionalText({ a: value } as Json, 'a')).toBeUndefined();
  });
});

describe('instant', () => {
  it('normalizes an ISO 8601 time to toISOString form (UTC, milliseconds)', () => {
    expect(instant({ at: '2026-11-29T20:16:07.588Z' }, 'at', 'data')).toBe('2026-11-29T20:16:07.588Z');
    expect(instant({ at: '2026-11-29T20:16:07Z' }, 'at', 'data')).toBe('2026-11-29T20:16:07.000Z');
    expect(instant({ at: '2026-11-29T21:16:07.588+01:00' }, 'at', 'data')).toBe('2026-11-29T20:16:07.588Z');
  });

  it.each(['yesterday', '2026-13-45T99:00:00Z', 'not a date'])('refuses %j as a time, naming the path', (value) => {
    const err = thrown(() => instant({ at: value }, 'at', 'data.payload'));
    expect(err).toBeInstanceOf(MalformedWebhook);
    expect(err.message).toBe('data.payload.at must be an ISO 8601 time');
  });

  it('refuses a missing or empty value as a string first', () => {
    for (const value of [undefined, '', 7]) {
      const err = thrown(() => instant({ at: value } as Json, 'at', 'data'));
      expect(err).toBeInstanceOf(MalformedWebhook);
      expect(err.message).toBe('data.at must be a non-empty string');
    }
  });
});
