import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { twilioSignature, twilioSignatureMatches } from '../twilio-signature.js';

// The `twilio` package is not installed here, so no cross-check against its validateRequest:
// Twilio's documented example (https://www.twilio.com/docs/usage/security) is the reference.
const TOKEN = '12345';
const URL = 'https://mycompany.com/myapp.php?foo=1&bar=2';
const FIELDS = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
const SIGNATURE = '0/KCTR6DLpKmkAf8muzZqo1nDgQ=';

describe('twilioSignature', () => {
  it("matches Twilio's documented example", () => {
    expect(twilioSignature(TOKEN, URL, FIELDS)).toBe(SIGNATURE);
  });

  it('is HMAC-SHA1 over the URL then each name+value, names sorted (the documented recipe)', () => {
    const signed = URL + 'CallSidCA1234567890ABCDECaller+12349013030Digits1234From+12349013030To+18005551212';
    expect(twilioSignature(TOKEN, URL, FIELDS)).toBe(createHmac('sha1', TOKEN).update(signed).digest('base64'));
  });

  it('does not depend on the order the fields arrived in', () => {
    const reversed = Object.fromEntries(Object.entries(FIELDS).reverse());
    expect(twilioSignature(TOKEN, URL, reversed)).toBe(SIGNATURE);
  });

  it('sorts names case-sensitively (Unix order: upper case first)', () => {
    const signed = 'https://x.test/hZa1ab2';
    expect(twilioSignature(TOKEN, 'https://x.test/h', { ab: '2', Za: '1' })).toBe(createHmac('sha1', TOKEN).update(signed).digest('base64'));
  });

  it('a repeated name contributes each value, values sorted', () => {
    const signed = 'https://x.test/hMediaUrla.jpgMediaUrlb.jpgTo+1';
    const expected = createHmac('sha1', TOKEN).update(signed).digest('base64');
    expect(twilioSignature(TOKEN, 'https://x.test/h', { To: '+1', MediaUrl: ['b.jpg', 'a.jpg'] })).toBe(expected);
    expect(twilioSignature(TOKEN, 'https://x.test/h', { MediaUrl: ['a.jpg', 'b.jpg'], To: '+1' })).toBe(expected);
  });

  it('does not reorder the caller’s array', () => {
    const media = ['b.jpg', 'a.jpg'];
    twilioSignature(TOKEN, 'https://x.test/h', { MediaUrl: media });
    expect(media).toEqual(['b.jpg', 'a.jpg']);
  });

  it('signs UTF-8 text', () => {
    const fields = { Body: 'héllo 😀' };
    expect(twilioSignature(TOKEN, 'https://x.test/h', fields)).toBe(createHmac('sha1', TOKEN).update(Buffer.from('https://x.test/hBodyhéllo 😀', 'utf8')).digest('base64'));
  });

  it('changes with the token, the URL (query included) and any field', () => {
    expect(twilioSignature('12346', URL, FIELDS)).not.toBe(SIGNATURE);
    expect(twilioSignature(TOKEN, URL.replace('foo=1', 'foo=2'), FIELDS)).not.toBe(SIGNATURE);
    expect(twilioSignature(TOKEN, 'https://mycompany.com/myapp.php', FIELDS)).not.toBe(SIGNATURE);
    expect(twilioSignature(TOKEN, URL, { ...FIELDS, Digits: '1235' })).not.toBe(SIGNATURE);
    expect(twilioSignature(TOKEN, URL, { ...FIELDS, Extra: '' })).not.toBe(SIGNATURE);
  });
});

describe('twilioSignatureMatches', () => {
  it('accepts the documented signature', () => {
    expect(twilioSignatureMatches(TOKEN, URL, FIELDS, SIGNATURE)).toBe(true);
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['truncated', SIGNATURE.slice(0, -1)],
    ['extended', SIGNATURE + '='],
    ['one character changed', 'X' + SIGNATURE.slice(1)],
    ['another case', SIGNATURE.toLowerCase()],
    ['multi-byte text of the same byte length', 'é'.repeat(14)],
    ['multi-byte text of the same character length', 'é'.repeat(28)],
  ])('refuses a signature: %s', (_name, given) => {
    expect(twilioSignatureMatches(TOKEN, URL, FIELDS, given)).toBe(false);
  });

  it('accepts exactly what twilioSignature produces, for any token, URL and fields', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.webUrl({ withQueryParameters: true }), fc.dictionary(fc.string({ minLength: 1 }), fc.string()), (token, url, fields) => {
        const signature = twilioSignature(token, url, fields);
        expect(twilioSignatureMatches(token, url, fields, signature)).toBe(true);
        expect(twilioSignatureMatches(token + 'x', url, fields, signature)).toBe(false);
      }),
    );
  });
});
