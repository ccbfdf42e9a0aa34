import { describe, expect, it } from '@jest/globals';
import { countSegments } from '../segments.js';

describe('SMS segments', () => {
  it.each([
    ['empty-ish single char', 'a', 'GSM-7', 1],
    ['GSM basic at the single limit', 'a'.repeat(160), 'GSM-7', 1],
    ['GSM basic one over the single limit', 'a'.repeat(161), 'GSM-7', 2],
    ['GSM basic two full parts', 'a'.repeat(306), 'GSM-7', 2],
    ['GSM basic one over two parts', 'a'.repeat(307), 'GSM-7', 3],
    ['GSM accented letters of the basic table', 'èéùìòÇØøÅåÆæßÉÄÖÑÜäöñüà£¥§¿¡', 'GSM-7', 1],
    ['extension characters count two septets', '€'.repeat(80), 'GSM-7', 1],
    ['extension characters over the single limit', '€'.repeat(81), 'GSM-7', 2],
    ['an escape pair is never split across parts (306 septets, yet 3 parts)', 'a'.repeat(152) + '€' + 'a'.repeat(152), 'GSM-7', 3],
    ['all extension characters', '^{}\\[~]|€', 'GSM-7', 1],
    ['UCS-2 at the single limit', 'ж'.repeat(70), 'UCS-2', 1],
    ['UCS-2 one over', 'ж'.repeat(71), 'UCS-2', 2],
    ['UCS-2 two full parts', 'ж'.repeat(134), 'UCS-2', 2],
    ['UCS-2 one over two parts', 'ж'.repeat(135), 'UCS-2', 3],
    ['one non-GSM character makes it all UCS-2', 'a'.repeat(69) + 'ç', 'UCS-2', 1],
    ['emoji are two UTF-16 code units', '😀'.repeat(35), 'UCS-2', 1],
    ['emoji over the single limit', '😀'.repeat(36), 'UCS-2', 2],
    ['a surrogate pair is never split across parts (134 units, yet 3 parts)', 'ж'.repeat(66) + '😀' + 'ж'.repeat(66), 'UCS-2', 3],
  ])('%s', (_name, text, encoding, segments) => {
    expect(countSegments(text)).toEqual({ encoding, segments });
  });
});
