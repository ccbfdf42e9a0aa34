/** What one item of a batch came to: its value, or the error that is its alone. */
export type BatchOutcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

export interface GroupCommitOptions {
  /** Most items one batch takes. */
  maxBatch: number;
  /** Most batches running at once (each holds one pooled connection while it runs). */
  maxInFlight: number;
}

interface Waiting<I, R> {
  item: I;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: concurrent callers are gathered into batches, each handed to one function that
 * writes them in one transaction, so N requests cost one commit instead of N. A batch starts as
 * soon as a slot is free, with everything that arrived meanwhile (no timer, so an idle system
 * adds no latency). Each caller's promise settles only after its batch has settled: a value means
 * the batch committed; a batch that throws rejects every caller in it with that error.
 */
export class GroupCommitter<I, R> {
  private queue: Waiting<I, R>[] = [];
  private inFlight = 0;
  private scheduled = false;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly runBatch: (items: I[]) => Promise<BatchOutcome<R>[]>,
    private readonly options: GroupCommitOptions,
  ) {}

  submit(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Items waiting for a batch to take them. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Resolves once nothing is queued or running (shutdown waits on it). */
  drained(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Starts batches on the next turn of the event loop, so every request whose body was read in
   * this I/O phase joins the same batch.
   */
  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.inFlight >= this.options.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
        void this.run(this.queue.splice(0, this.options.maxBatch));
      }
    });
  }

  private async run(batch: Waiting<I, R>[]): Promise<void> {
    this.inFlight++;
    try {
      const outcomes = await this.runBatch(batch.map((w) => w.item));
      if (outcomes.length !== batch.length) throw new Error(`batch of ${batch.length} answered ${outcomes.length} outcomes`);
      outcomes.forEach((outcome, i) => (outcome.ok ? batch[i].resolve(outcome.value) : batch[i].reject(outcome.error)));
    } catch (err) {
      for (const waiting of batch) waiting.reject(err);
    } finally {
      this.inFlight--;
      this.schedule();
      if (this.queue.length === 0 && this.inFlight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }
}
