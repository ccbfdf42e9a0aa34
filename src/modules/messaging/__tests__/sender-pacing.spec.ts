import { describe, expect, it } from '@jest/globals';
import { claimTooOld, SEND_CLAIM_MAX_AGE_MS } from '../sender-pacing.js';

describe('claimTooOld', () => {
  const now = 1_000_000;
  const past = (ms: number) => now - ms;

  it('gives a claim back only when both clocks see it held past SEND_CLAIM_MAX_AGE_MS', () => {
    expect(claimTooOld(past(1000), new Date(past(1000)), now)).toBe(true);
    expect(claimTooOld(past(SEND_CLAIM_MAX_AGE_MS + 1), new Date(past(SEND_CLAIM_MAX_AGE_MS + 1)), now)).toBe(true);
    expect(claimTooOld(past(SEND_CLAIM_MAX_AGE_MS), new Date(past(SEND_CLAIM_MAX_AGE_MS)), now)).toBe(false);
  });

  it('sends a claim that only waited for its number\'s row (asked long ago, decided just now)', () => {
    expect(claimTooOld(past(5000), new Date(past(10)), now)).toBe(false);
  });

  it('sends a claim whose database clock runs behind ours (decided "long ago" by our clock, asked just now)', () => {
    expect(claimTooOld(past(20), new Date(past(60_000)), now)).toBe(false);
  });
});
