import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { countSegments } from '../segments.js';

/**
 * Properties only: the worked examples live in test/segments.test.ts. Here random texts check the
 * length rules (GSM-7: 160 in one segment, else 153 per part; UCS-2: 70, else 67) and that a part
 * never ends in the middle of an escape pair or a surrogate pair.
 */
const BASIC = [...'@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà'];
const EXTENSION = [...'^{}\\[~]|€\f'];
const BMP_NON_GSM = [...'çжЖ中文한αβ✓ÀÈÌÒÙ’“”–—'];
const ASTRAL = [...'😀🎉👍🏽𝄞𠜎'];

const gsmBasicText = (max: number) => fc.array(fc.constantFrom(...BASIC), { maxLength: max }).map((a) => a.join(''));
const gsmText = (max: number) => fc.array(fc.constantFrom(...BASIC, ...EXTENSION), { minLength: 1, maxLength: max });
const ucs2Text = (max: number) =>
  fc.tuple(fc.array(fc.constantFrom(...BASIC, ...EXTENSION, ...BMP_NON_GSM, ...ASTRAL), { maxLength: max }), fc.constantFrom(...BMP_NON_GSM, ...ASTRAL), fc.nat())
    .map(([chars, foreign, at]) => { const i = at % (chars.length + 1); return [...chars.slice(0, i), foreign, ...chars.slice(i)]; });

const septets = (chars: string[]): number => chars.reduce((n, c) => n + (EXTENSION.includes(c) ? 2 : 1), 0);
const codeUnits = (chars: string[]): number => chars.join('').length;

/** The fewest parts of at most `part` units, packing `units` in order without splitting any item. */
function referencePacking(units: number[], part: number): number {
  let parts = 1;
  let used = 0;
  for (const u of units) {
    if (used + u > part) [parts, used] = [parts + 1, 0];
    used += u;
  }
  return parts;
}

describe('countSegments, properties', () => {
  it('GSM-7 basic text: 1 segment up to 160 characters, else ceil(length / 153)', () => {
    fc.assert(
      fc.property(gsmBasicText(700), (text) => {
        const n = [...text].length;
        expect(countSegments(text)).toEqual({ encoding: 'GSM-7', segments: n <= 160 ? 1 : Math.ceil(n / 153) });
      }),
    );
  });

  it('BMP-only UCS-2 text: 1 segment up to 70 code units, else ceil(units / 67)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...BASIC, ...BMP_NON_GSM), { maxLength: 300 }), fc.constantFrom(...BMP_NON_GSM), (chars, foreign) => {
        const text = foreign + chars.join('');
        const n = text.length;
        expect(countSegments(text)).toEqual({ encoding: 'UCS-2', segments: n <= 70 ? 1 : Math.ceil(n / 67) });
      }),
    );
  });

  it('GSM-7 with extension characters: single up to 160 septets, else between ceil(septets/153) and ceil(septets/152)', () => {
    fc.assert(
      fc.property(gsmText(400), (chars) => {
        const s = septets(chars);
        const { encoding, segments } = countSegments(chars.join(''));
        expect(encoding).toBe('GSM-7');
        if (s <= 160) expect(segments).toBe(1);
        else {
          expect(segments).toBeGreaterThanOrEqual(Math.ceil(s / 153));
          expect(segments).toBeLessThanOrEqual(Math.ceil(s / 152));
        }
      }),
    );
  });

  it('any non-GSM character makes the whole text UCS-2, counted in UTF-16 code units', () => {
    fc.assert(
      fc.property(ucs2Text(300), (chars) => {
        const n = codeUnits(chars);
        const { encoding, segments } = countSegments(chars.join(''));
        expect(encoding).toBe('UCS-2');
        if (n <= 70) expect(segments).toBe(1);
        else {
          expect(segments).toBeGreaterThanOrEqual(Math.ceil(n / 67));
          expect(segments).toBeLessThanOrEqual(Math.ceil(n / 66));
        }
      }),
    );
  });

  it('a surrogate pair is never split: k emoji past the single limit take ceil(k / 33) parts', () => {
    fc.assert(
      fc.property(fc.integer({ min: 36, max: 400 }), fc.constantFrom(...ASTRAL.filter((e) => e.length === 2)), (k, emoji) => {
        expect(countSegments(emoji.repeat(k))).toEqual({ encoding: 'UCS-2', segments: Math.ceil(k / 33) });
      }),
    );
  });

  it('an escape pair is never split: k extension characters past the single limit take ceil(k / 76) parts', () => {
    fc.assert(
      fc.property(fc.integer({ min: 81, max: 800 }), fc.constantFrom(...EXTENSION), (k, c) => {
        expect(countSegments(c.repeat(k))).toEqual({ encoding: 'GSM-7', segments: Math.ceil(k / 76) });
      }),
    );
  });

  it('multi-part texts pack greedily without splitting a pair (GSM-7 and UCS-2 alike)', () => {
    fc.assert(
      fc.property(fc.oneof(gsmText(500), ucs2Text(300)), (chars) => {
        const { encoding, segments } = countSegments(chars.join(''));
        const units = encoding === 'GSM-7' ? chars.map((c) => (EXTENSION.includes(c) ? 2 : 1)) : chars.map((c) => c.length);
        const total = units.reduce((a, b) => a + b, 0);
        const [single, part] = encoding === 'GSM-7' ? [160, 153] : [70, 67];
        expect(segments).toBe(total <= single ? 1 : referencePacking(units, part));
      }),
    );
  });

  it('appending a character never lowers the count within one encoding', () => {
    fc.assert(
      fc.property(fc.oneof(gsmText(400), ucs2Text(250)), fc.constantFrom(...BASIC, ...EXTENSION), (chars, extra) => {
        const before = countSegments(chars.join(''));
        const after = countSegments(chars.join('') + extra);
        expect(after.encoding).toBe(before.encoding);
        expect(after.segments).toBeGreaterThanOrEqual(before.segments);
      }),
    );
  });

  it('the empty text is one GSM-7 segment', () => {
    expect(countSegments('')).toEqual({ encoding: 'GSM-7', segments: 1 });
  });
});
