/** Thrown into every pending wait when the sandbox closes. */
export class SandboxClosed extends Error {
  constructor() {
    super('sandbox closed');
  }
}

/** The longest any single wait may last, whatever a knob or a caller asks. */
export const MAX_WAIT_MS = 30_000;

/**
 * Every timer the sandbox sets goes through here: each wait is capped at MAX_WAIT_MS, and close()
 * cancels all of them and aborts in-flight requests, so a stopped sandbox leaves nothing behind.
 */
export class BoundedTimers {
  private readonly pending = new Map<NodeJS.Timeout, (err: Error) => void>();
  private readonly scheduled = new Set<NodeJS.Timeout>();
  private readonly controller = new AbortController();

  get closed(): boolean {
    return this.controller.signal.aborted;
  }

  /** Aborted on close; combine it with a request's own timeout. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.reject(new SandboxClosed());
    const wait = Math.max(0, Math.min(ms, MAX_WAIT_MS));
    if (wait === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(timer);
        resolve();
      }, wait);
      this.pending.set(timer, reject);
    });
  }

  /**
   * Runs `fn` after `ms` (capped at `maxMs`) unless the returned cancel runs first or the sandbox
   * closes. For the timers of emulated calls, whose ring timeouts and time limits are longer than
   * MAX_WAIT_MS but still bounded.
   */
  after(ms: number, fn: () => void, maxMs: number = MAX_WAIT_MS): () => void {
    if (this.closed) return () => undefined;
    const timer = setTimeout(() => {
      this.scheduled.delete(timer);
      fn();
    }, Math.max(0, Math.min(ms, maxMs)));
    this.scheduled.add(timer);
    return () => {
      clearTimeout(timer);
      this.scheduled.delete(timer);
    };
  }

  close(): void {
    this.controller.abort(new SandboxClosed());
    for (const timer of this.scheduled) clearTimeout(timer);
    this.scheduled.clear();
    for (const [timer, reject] of this.pending) {
      clearTimeout(timer);
      reject(new SandboxClosed());
    }
    this.pending.clear();
  }
}
