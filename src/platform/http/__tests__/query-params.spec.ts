import { describe, expect, it } from '@jest/globals';
import { UnprocessableEntityException } from '@nestjs/common';
import { invalidParameter, optionalDate, optionalEnum } from '../query-params.js';

function problem(read: () => unknown): unknown {
  try {
    read();
  } catch (err) {
    expect(err).toBeInstanceOf(UnprocessableEntityException);
    return (err as UnprocessableEntityException).getResponse();
  }
  throw new Error('expected a 422');
}

const DIRECTIONS = ['inbound', 'outbound'] as const;

describe('invalidParameter', () => {
  it('is a 422 in the contract shape, pointing at the parameter', () => {
    const err = invalidParameter('status', 'status must be one of a, b');
    expect(err.getStatus()).toBe(422);
    expect(err.getResponse()).toEqual({
      errors: [{ code: 'validation_failed', title: 'Validation failed', detail: 'status must be one of a, b', source: { parameter: 'status' } }],
    });
  });
});

describe('optionalEnum', () => {
  it('absent or empty: undefined', () => {
    expect(optionalEnum({}, 'direction', DIRECTIONS)).toBeUndefined();
    expect(optionalEnum({ direction: '' }, 'direction', DIRECTIONS)).toBeUndefined();
  });

  it('returns an allowed value', () => {
    expect(optionalEnum({ direction: 'inbound' }, 'direction', DIRECTIONS)).toBe('inbound');
  });

  it.each([['an unknown value', 'sideways'], ['another case', 'INBOUND'], ['padding', ' inbound'], ['a repeat', ['inbound', 'outbound']], ['an object', { a: 1 }], ['a prototype key', 'toString']])(
    'refuses %s with a 422 listing the allowed values',
    (_name, value) => {
      expect(problem(() => optionalEnum({ direction: value }, 'direction', DIRECTIONS))).toEqual({
        errors: [{ code: 'validation_failed', title: 'Validation failed', detail: 'direction must be one of inbound, outbound', source: { parameter: 'direction' } }],
      });
    },
  );
});

describe('optionalDate', () => {
  it('absent or empty: undefined', () => {
    expect(optionalDate({}, 'since')).toBeUndefined();
    expect(optionalDate({ since: '' }, 'since')).toBeUndefined();
  });

  it('reads an ISO 8601 date-time, offsets included', () => {
    expect(optionalDate({ since: '2030-01-15T12:00:00Z' }, 'since')?.toISOString()).toBe('2030-01-15T12:00:00.000Z');
    expect(optionalDate({ since: '2030-01-15T13:00:00+01:00' }, 'since')?.toISOString()).toBe('2030-01-15T12:00:00.000Z');
  });

  it.each(['yesterday', '2030-13-01T00:00:00Z', 'NaN', '2030-01-15T25:00:00Z'])('refuses %j with a 422 naming the parameter', (since) => {
    expect(problem(() => optionalDate({ since }, 'since'))).toEqual({
      errors: [{ code: 'validation_failed', title: 'Validation failed', detail: 'since must be an ISO 8601 date-time', source: { parameter: 'since' } }],
    });
  });
});
