// node:timers, not the globals: a test's fake timers (jest.useFakeTimers) replace the globals,
// and its jest.advanceTimersByTime would then fire the deadline of the test that advanced them.
import { clearTimeout, setTimeout } from 'node:timers';
import { takeUnhandledRejections } from './unhandled-rejections.js';

/** How long a test or hook may take unless it says otherwise (what jest's `testTimeout` was). */
export const TEST_TIMEOUT_MS = 60_000;

type Body = ((done: (err?: unknown) => void) => unknown) | (() => unknown);

/**
 * `fn` (a test or hook body, async or taking jest's `done` callback) as a function that fails with
 * jest's own message once `timeout` ms (default `TEST_TIMEOUT_MS`) pass without it settling, and
 * fails when a promise rejection is left unhandled as it ends (unhandled-rejections.ts).
 */
export function withDeadline(fn: Body, timeout: number | undefined, what: string): () => Promise<unknown> {
  const ms = timeout ?? TEST_TIMEOUT_MS;
  const run = fn.length >= 1
    ? () => new Promise((resolve, reject) => (fn as (done: (err?: unknown) => void) => unknown)((err) => (err ? reject(err) : resolve(undefined))))
    : () => (fn as () => unknown)();
  return function deadlined() {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Exceeded timeout of ${ms} ms for ${what}.`)), ms);
    });
    // Taken whether the body passed or failed, so a failing test's leftovers never blame the next one.
    return Promise.race([Promise.resolve().then(run), deadline])
      .finally(() => clearTimeout(timer))
      .then(
        async (value) => {
          const reasons = await takeUnhandledRejections();
          if (reasons.length > 0) throw new AggregateError(reasons, `${what} left ${reasons.length} promise rejection(s) unhandled: ${reasons.map(String).join('; ')}`);
          return value;
        },
        async (err) => {
          await takeUnhandledRejections();
          throw err;
        },
      );
  };
}
