import { createHmac, timingSafeEqual } from 'node:crypto';

export type FormFields = Record<string, string | string[]>;

/**
 * Twilio's request signature: base64 HMAC-SHA1(auth token, full URL + every POST field as
 * name+value, names sorted; a repeated name contributes each of its distinct values, sorted, as
 * the official `twilio` package computes it).
 */
export function twilioSignature(authToken: string, url: string, fields: FormFields): string {
  let signed = url;
  for (const name of Object.keys(fields).sort()) {
    const value = fields[name];
    for (const v of Array.isArray(value) ? [...new Set(value)].sort() : [value]) signed += name + v;
  }
  return createHmac('sha1', authToken).update(signed, 'utf8').digest('base64');
}

/** Constant-time comparison, so the time taken says nothing about how much of a guess was right. */
export function twilioSignatureMatches(authToken: string, url: string, fields: FormFields, given: string | undefined): boolean {
  if (!given) return false;
  const expected = Buffer.from(twilioSignature(authToken, url, fields));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
