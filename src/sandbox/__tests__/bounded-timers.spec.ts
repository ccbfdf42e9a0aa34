import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { BoundedTimers, MAX_WAIT_MS } from '../bounded-timers.js';

describe('BoundedTimers.after', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('runs once after the wait, not when cancelled, never after close', () => {
    const timers = new BoundedTimers();
    const ran: string[] = [];
    timers.after(100, () => ran.push('a'));
    const cancel = timers.after(100, () => ran.push('cancelled'));
    timers.after(200, () => ran.push('closed'));
    cancel();
    jest.advanceTimersByTime(150);
    expect(ran).toEqual(['a']);
    timers.close();
    jest.advanceTimersByTime(1000);
    expect(ran).toEqual(['a']);
    timers.after(0, () => ran.push('after close'));
    jest.advanceTimersByTime(10);
    expect(ran).toEqual(['a']);
  });

  it('caps the wait at MAX_WAIT_MS unless given a longer bound', () => {
    const timers = new BoundedTimers();
    const ran: string[] = [];
    timers.after(10 * MAX_WAIT_MS, () => ran.push('capped'));
    timers.after(2 * MAX_WAIT_MS, () => ran.push('long'), 10 * MAX_WAIT_MS);
    jest.advanceTimersByTime(MAX_WAIT_MS);
    expect(ran).toEqual(['capped']);
    jest.advanceTimersByTime(MAX_WAIT_MS);
    expect(ran).toEqual(['capped', 'long']);
    timers.close();
  });
});
