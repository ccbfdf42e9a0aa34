/** Polls a condition until it holds or the deadline passes (never a fixed sleep). */
export async function waitFor<T>(
  probe: () => Promise<T> | T,
  accept: (value: T) => boolean = Boolean,
  { timeoutMs = 15000, intervalMs = 50, what = 'condition' } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      last = await probe();
      if (accept(last)) return last;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value ${JSON.stringify(last)}${lastError ? `, last error ${(lastError as Error).message}` : ''}`);
}
