import { describe, expect, it } from '@jest/globals';
import { DEFAULT_RETRY_AFTER_SECONDS, MAX_RETRY_AFTER_SECONDS, retryAfterSeconds } from '../message-sender.js';

describe('retryAfterSeconds (a carrier 429)', () => {
  const now = Date.parse('2026-12-03T10:00:00Z');
  it.each([
    ['2', 2],
    [' 0.5 ', 0.5],
    ['Thu, 03 Dec 2026 10:00:30 GMT', 30],
    ['Thu, 03 Dec 2026 09:59:00 GMT', 0],
    ['999999', MAX_RETRY_AFTER_SECONDS],
    ['soon', DEFAULT_RETRY_AFTER_SECONDS],
    ['', DEFAULT_RETRY_AFTER_SECONDS],
    [null, DEFAULT_RETRY_AFTER_SECONDS],
  ])('%p → %p s', (header, seconds) => {
    expect(retryAfterSeconds(header, now)).toBe(seconds);
  });
});
