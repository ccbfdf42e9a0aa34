// jest-light-runner's hand-over of jest's config to a child process, made per child (light-runner.mjs).

/** What a child process sends to ask for its worker data (jest-light-runner 0.8.2, worker-runner.js). */
export const ASK = 'jest-light-runner-get-worker-data';

/**
 * A channel for one dispatched file over the project's shared one: the worker's listener is
 * kept here, and put in the shared set only for the moment of this child's own ask, so the
 * answer (sent synchronously to the set's listeners, which it then empties) reaches this child
 * and no other.
 */
export function channelOfOne(shared) {
  let listener;
  return {
    onMessage(l) {
      listener = l;
    },
    postMessage(message) {
      if (message !== ASK || !listener) return;
      shared.onMessage(listener);
      shared.postMessage(message);
    },
  };
}
