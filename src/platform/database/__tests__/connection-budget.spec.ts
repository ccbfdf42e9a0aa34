import { describe, expect, it } from '@jest/globals';
import { Gate } from '../connection-budget.js';

describe('Gate (a lane budget)', () => {
  /** Acquires with `urgent` and records the order the places are given in. */
  function waitFor(gate: Gate, name: string, given: string[], urgent = false): Promise<void> {
    return gate.acquire(urgent).then(() => void given.push(name));
  }

  it('gives a freed place to an urgent waiter before any earlier ordinary one, each kind in arrival order', async () => {
    const gate = new Gate(1);
    await gate.acquire();
    const given: string[] = [];
    const all = [
      waitFor(gate, 'sms-1', given),
      waitFor(gate, 'sms-2', given),
      waitFor(gate, 'call-1', given, true),
      waitFor(gate, 'call-2', given, true),
    ];
    expect(gate.waiting).toBe(4);
    for (let i = 0; i < 4; i++) {
      gate.release();
      await Promise.resolve();
      await Promise.resolve();
    }
    await Promise.all(all);
    expect(given).toEqual(['call-1', 'call-2', 'sms-1', 'sms-2']);
    expect(gate.held).toBe(1);
  });

  it('takes a free place at once, urgent or not, up to its limit', async () => {
    const gate = new Gate(2);
    await gate.acquire();
    await gate.acquire(true);
    expect(gate.held).toBe(2);
    expect(gate.waiting).toBe(0);
    gate.release();
    gate.release();
    expect(gate.held).toBe(0);
  });
});
