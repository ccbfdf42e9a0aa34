import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { E164_MESSAGE, E164_PATTERN } from '../e164.js';

const valid = (s: string): boolean => E164_PATTERN.test(s);

describe('E.164 pattern', () => {
  it.each(['+15550001111', '+4915112345678', '+442071838750', '+1234567', '+123456789012345'])('accepts %s', (n) => {
    expect(valid(n)).toBe(true);
  });

  it.each([
    ['no plus', '15550001111'],
    ['country code 0', '+05550001111'],
    ['6 digits (too short)', '+123456'],
    ['16 digits (too long)', '+1234567890123456'],
    ['spaces', '+1 555 000 1111'],
    ['dashes', '+1-555-000-1111'],
    ['parentheses', '+1(555)0001111'],
    ['letters', '+1555000111a'],
    ['two pluses', '++15550001111'],
    ['a trailing newline', '+15550001111\n'],
    ['a leading space', ' +15550001111'],
    ['full-width digits', '+１５５５０００１１１１'],
    ['Arabic-Indic digits', '+١٥٥٥٠٠٠١١١١'],
    ['empty', ''],
    ['a lone plus', '+'],
  ])('refuses %s', (_name, n) => {
    expect(valid(n)).toBe(false);
  });

  it('accepts exactly: plus, a digit 1-9, then 6 to 14 more ASCII digits', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9 }), fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 0, maxLength: 20 }), (first, rest) => {
        const number = `+${first}${rest}`;
        expect(valid(number)).toBe(rest.length >= 6 && rest.length <= 14);
      }),
    );
  });

  it('the example in the error message is itself valid', () => {
    const example = /\+\d+/.exec(E164_MESSAGE)?.[0];
    expect(example).toBeDefined();
    expect(valid(example!)).toBe(true);
  });
});
