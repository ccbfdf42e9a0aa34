import { describe, expect, it } from '@jest/globals';
import { Gate, type Urgency } from '../connection-budget.js';

describe('Gate (a lane budget)', () => {
  /** Acquires with `urgency` and records the order the places are given in. */
  function waitFor(gate: Gate, name: string, given: string[], urgency: Urgency = 'later'): Promise<void> {
    return gate.acquire(urgency).then(() => void given.push(name));
  }

  it('gives a freed place to the most urgent waiter (now, soon, next, new, then later), each urgency in arrival order', async () => {
    const gate = new Gate(1);
    await gate.acquire();
    const given: string[] = [];
    const all = [
      waitFor(gate, 'sms-1', given),
      waitFor(gate, 'new-call-1', given, 'new'),
      waitFor(gate, 'first-dial-1', given, 'next'),
      waitFor(gate, 'event-1', given, 'soon'),
      waitFor(gate, 'sms-2', given),
      waitFor(gate, 'command-1', given, 'now'),
      waitFor(gate, 'event-2', given, 'soon'),
      waitFor(gate, 'new-call-2', given, 'new'),
      waitFor(gate, 'command-2', given, 'now'),
    ];
    expect(gate.waiting).toBe(9);
    expect([gate.waitingAhead('now'), gate.waitingAhead('soon'), gate.waitingAhead('next'), gate.waitingAhead('new'), gate.waitingAhead('later')]).toEqual([2, 4, 5, 7, 9]);
    for (let i = 0; i < all.length; i++) {
      gate.release();
      await Promise.resolve();
      await Promise.resolve();
    }
    await Promise.all(all);
    expect(given).toEqual(['command-1', 'command-2', 'event-1', 'event-2', 'first-dial-1', 'new-call-1', 'new-call-2', 'sms-1', 'sms-2']);
    expect(gate.held).toBe(1);
  });

  it('within an urgency, gives a freed place to what sends a decision (the commands a call sends to its carrier) before what decides, each in arrival order', async () => {
    const gate = new Gate(1);
    await gate.acquire();
    const given: string[] = [];
    const waitAs = (name: string, urgency: Urgency, sends = false) => gate.acquire(urgency, { sends }).then(() => void given.push(name));
    const all = [waitAs('answer-1', 'now'), waitAs('hangup-1', 'soon'), waitAs('join-1', 'now', true), waitAs('answer-2', 'now'), waitAs('hand-off-dial', 'soon', true), waitAs('join-2', 'now', true)];
    expect([gate.waitingAhead('now'), gate.waitingAhead('soon')]).toEqual([4, 6]);
    for (let i = 0; i < all.length; i++) {
      gate.release();
      await Promise.resolve();
      await Promise.resolve();
    }
    await Promise.all(all);
    expect(given).toEqual(['join-1', 'join-2', 'answer-1', 'answer-2', 'hand-off-dial', 'hangup-1']);
  });

  it('takes a free place at once, whatever its urgency, up to its limit', async () => {
    const gate = new Gate(2);
    await gate.acquire();
    await gate.acquire('now');
    expect(gate.held).toBe(2);
    expect(gate.waiting).toBe(0);
    gate.release();
    gate.release();
    expect(gate.held).toBe(0);
  });
});
