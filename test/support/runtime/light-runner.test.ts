import { describe, expect, it } from '@jest/globals';
import { ASK, channelOfOne } from './channel-of-one.mjs';

type Listener = (message: unknown) => void;

/** jest-light-runner 0.8.2's channel for a project's child processes (src/index.js), as it is: one set of listeners, every ask answers all. */
function sharedChannel(workerData: unknown) {
  const listeners = new Set<Listener>();
  return {
    onMessage(listener: Listener) {
      listeners.add(listener);
    },
    postMessage(message: unknown) {
      if (message !== ASK) return;
      for (const listener of listeners) {
        listener({ type: 'jest-light-runner-worker-data', workerData });
        listeners.delete(listener);
      }
    },
  };
}

/**
 * Two children of one pool, each dispatched a file (tinypool's setChannel registers the worker's
 * listener); child A asks first, while child B's file has not started (B drops what comes before
 * it listens, as a child process does); then B asks.
 */
function twoChildrenStarting(channelFor: () => { onMessage(l: Listener): void; postMessage(m: unknown): void }) {
  const received = { a: [] as unknown[], b: [] as unknown[] };
  let bListening = false;
  const a = channelFor();
  const b = channelFor();
  a.onMessage((m) => received.a.push(m));
  b.onMessage((m) => bListening && received.b.push(m));
  a.postMessage(ASK);
  bListening = true;
  b.postMessage(ASK);
  return received;
}

describe("the test runner's hand-over of jest's config to its child processes", () => {
  it('shared, as jest-light-runner has it: the child that asks second is never answered (its file never starts)', () => {
    const shared = sharedChannel({ project: 'integration' });
    const received = twoChildrenStarting(() => shared);
    expect(received.a).toHaveLength(1);
    expect(received.b).toHaveLength(0);
  });

  it('a channel per dispatched file (light-runner.mjs): each child is answered once, when it asks', () => {
    const shared = sharedChannel({ project: 'integration' });
    const received = twoChildrenStarting(() => channelOfOne(shared));
    expect(received.a).toEqual([{ type: 'jest-light-runner-worker-data', workerData: { project: 'integration' } }]);
    expect(received.b).toEqual([{ type: 'jest-light-runner-worker-data', workerData: { project: 'integration' } }]);
  });

  it('messages other than the ask are not answered', () => {
    const shared = sharedChannel({});
    const channel = channelOfOne(shared);
    const received: unknown[] = [];
    channel.onMessage((m) => received.push(m));
    channel.postMessage('something else');
    expect(received).toEqual([]);
  });
});
