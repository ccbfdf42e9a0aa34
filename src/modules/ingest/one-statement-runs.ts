import { Injectable } from '@nestjs/common';
import { Statements } from '../../platform/database/statements.js';
import type { RunOutcome } from '../../platform/outbox/job-handler.js';
import { pendingJobSql } from '../../platform/outbox/job-sql.js';
import type { IgnoredEvent, NormalizedEvent } from '../../carriers/normalized-event.js';
import { CarrierEventHandlers, ignoredNote, type BatchHandling, type StoredCarrierEvent } from './carrier-event-handlers.js';
import { OneStatementBatches } from './one-statement-batches.js';
import { createdAtOfId } from '../../platform/retention/id-partition-key.js';

/**
 * Events no module acts on, as a batch handler of the engine's own (no module registers it):
 * each consumed with the reason it was ignored, and nothing else written.
 */
const IGNORING: BatchHandling = {
  // Only events handlingOf found ignored are batched here.
  handler: (events, run) => {
    run.input('ignored_note text', (events as unknown as IgnoredEvent[]).map((event) => ({ ignored_note: ignoredNote(event) })));
    run.consume({ note: (row) => `${row}.ignored_note` });
  },
};

/**
 * The process-carrier-event job in one statement, for an event whose handler is a batch one
 * (inbound SMS, receipts) or that is ignored: one read of the event (no lock: a stored event
 * never changes), then the job's claim, the event's consumption and the handler's writes in one
 * autocommit statement (OneStatementBatches, shared with the runs that arrive together): no
 * BEGIN, no COMMIT, no separate claim.
 */
@Injectable()
export class OneStatementRuns {
  constructor(
    private readonly handlers: CarrierEventHandlers,
    private readonly statements: Statements,
    private readonly batches: OneStatementBatches,
  ) {}

  /**
   * Undefined (nothing written) sends the job down the general path: a processed or missing
   * event, a call event other than the cases decided in sets (arrival order and row locks need a
   * transaction), an event not ready (a
   * receipt before its message), or a statement that failed for a reason of its own (the general
   * path runs the handler again and records the failure).
   */
  async run(jobId: string, prefetched?: StoredCarrierEvent): Promise<RunOutcome | undefined> {
    // Prefetched (ingest committed it a moment ago in this process): no read. The read spares a
    // finished job or a processed event a statement; the statement's guards (the job's claim, the
    // event's processed_at IS NULL) are what decide, with or without it.
    const row = prefetched ?? (await this.readPending(jobId));
    if (!row) return undefined;
    const event = row.normalized as NormalizedEvent;
    const handling = this.handlers.handlingOf(event);
    if (handling.shape === 'batch') return this.batches.run(event.kind, handling, jobId, row);
    if (handling.shape === 'ignored') return this.batches.run('ignored', IGNORING, jobId, row);
    // A call event of a case decided in sets (a leg's report, a repeat): one statement for many
    // calls' events; one it leaves (not ready) goes down the general path, to the transaction.
    // Several set handlers of a kind (a leg's call.initiated, a caller's) batch apart, by name.
    const sets = this.handlers.setsFor(handling, event);
    if (sets) return this.batches.run(`sets:${event.kind}:${sets.name}`, sets, jobId, row);
    return undefined;
  }

  private async readPending(jobId: string): Promise<StoredCarrierEvent | undefined> {
    const [row] = await this.statements.query<StoredCarrierEvent>(
      `WITH job AS (${pendingJobSql('$1')})
       SELECT e.id, e.normalized FROM job JOIN carrier_events e ON e.id = job.data->>'carrierEventId' AND ${createdAtOfId(`job.data->>'carrierEventId'`, 'e.created_at')}
        WHERE e.processed_at IS NULL`,
      [jobId],
    );
    return row;
  }
}
