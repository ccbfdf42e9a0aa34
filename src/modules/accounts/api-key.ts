import { createHash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'olk_';

/** A new key: 32 random bytes, base64url, behind the visible `olk_` prefix. */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** Keys are stored and looked up only by this hash. */
export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** What a human sees to recognise a key: its first characters. */
export function displayPrefix(key: string): string {
  return key.slice(0, API_KEY_PREFIX.length + 6);
}
