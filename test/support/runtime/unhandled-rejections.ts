import { setImmediate } from 'node:timers';

/**
 * Promise rejections nobody handled, as jest's own runner treated them: a test may start work,
 * do something else, and attach its handler later (`const run = op(); await other(); await
 * expect(run).rejects...`), so a rejection handled after its tick is no error; one still unhandled
 * when its test or hook ends fails that test. Without these listeners Node (by default) ends the
 * worker process at the first one, failing the whole file ("Worker exited unexpectedly").
 */
const unhandled = new Map<Promise<unknown>, unknown>();
process.on('unhandledRejection', (reason, promise) => unhandled.set(promise, reason));
process.on('rejectionHandled', (promise) => unhandled.delete(promise));

/** The reasons of rejections still unhandled one turn of the event loop from now; forgets them. */
export async function takeUnhandledRejections(): Promise<unknown[]> {
  await new Promise((resolve) => setImmediate(resolve));
  const reasons = [...unhandled.values()];
  unhandled.clear();
  return reasons;
}
