import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

export const OUTBOX_CHANNEL = 'onceline_outbox';

/**
 * Wakes the relays after a commit that enqueued jobs. The NOTIFY is sent after the producer's
 * commit, in its own statement, and coalesced to at most one in flight per process: PostgreSQL
 * serializes the commits of notifying transactions, which inside every producer transaction cut
 * the ingest SQL from 2,692 to 1,173 transactions/s at 32 clients (pgbench; the run is in the git history of docs/benchmarks-method.md).
 * A lost hint only costs one relay poll (OUTBOX_POLL_MS).
 */
@Injectable()
export class RelayWakeup {
  private inFlight = false;
  private again = false;

  constructor(private readonly dataSource: DataSource) {}

  hint(): void {
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.inFlight = true;
    this.dataSource
      .query(`SELECT pg_notify($1, '')`, [OUTBOX_CHANNEL])
      .catch(() => undefined) // a hint: the relay's poll finds the rows anyway
      .finally(() => {
        this.inFlight = false;
        if (this.again) {
          this.again = false;
          this.hint();
        }
      });
  }
}
