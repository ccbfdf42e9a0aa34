import { Injectable } from '@nestjs/common';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { Statements } from '../../platform/database/statements.js';
import type { RunOutcome } from '../../platform/outbox/job-handler.js';
import { WebhookDeliveryAttemptJob } from '../webhooks/webhooks.jobs.js';
import { claimJobSql, pendingJobSql } from '../../platform/outbox/job-sql.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { AfterCommitJobs, type AfterCommitJob } from '../../platform/outbox/after-commit-jobs.js';
import type { NormalizedEvent } from '../../carriers/normalized-event.js';
import { CarrierEventHandlers, type HandledKind, type OneStatementCarrierEventHandler } from './carrier-event-handlers.js';
import { isTransient } from './carrier-event-processor.js';
import { buildOneStatement } from './one-statement-build.js';
import { OneStatementBatches } from './one-statement-batches.js';
import { afterCommitJobs, newJobsCount } from '../../platform/outbox/statement-jobs.js';

/** An event no module acts on: consumed with the reason (`note`). */
const ignoring = (note: string): OneStatementCarrierEventHandler<HandledKind> => (_event, { stmt, consume }) => void consume({ note: stmt.param(note, 'text') });

/**
 * The process-carrier-event job in one statement, for an event whose handler is a one-statement
 * one (inbound SMS, receipts) or that is ignored: one read of the event (no lock: a stored event
 * never changes), then the job's claim, the event's consumption and the handler's writes in one
 * autocommit statement: no BEGIN, no COMMIT, no separate claim.
 */
/** A carrier event as stored: its row id and normalized form. */
export interface StoredCarrierEvent {
  id: string;
  normalized: NormalizedEvent;
}

@Injectable()
export class OneStatementRuns {
  constructor(
    private readonly handlers: CarrierEventHandlers,
    private readonly outbox: OutboxService,
    private readonly statements: Statements,
    private readonly afterCommit: AfterCommitJobs,
    private readonly batches: OneStatementBatches,
  ) {}

  /**
   * Undefined (nothing written) sends the job down the general path: a processed or missing
   * event, a call event (arrival order and row locks need a transaction), an event not ready (a
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
    if (handling.shape === 'batch') return this.batches.run(event.kind as HandledKind, handling.handler, jobId, row);
    if (handling.shape !== 'one-statement' && handling.shape !== 'ignored') return undefined;
    const handler = handling.shape === 'ignored' ? ignoring(handling.note) : handling.handler;
    const stmt = new CteStatement();
    // The jobs this statement creates that may run here once it returns (a new event's first
    // webhook attempts); with no place free they are written due now, for the relay.
    const result = await this.afterCommit.aroundStatement(
      WebhookDeliveryAttemptJob,
      1,
      stmt,
      () => this.runStatement(stmt, handler, event, jobId, row.id),
      (written) => (written?.ready ? written.afterCommit : []),
    );
    if (!result?.ready) return undefined;
    this.outbox.jobsWritten(result.jobs);
    return result.claimed ? 'completed' : 'skipped';
  }

  private async readPending(jobId: string): Promise<StoredCarrierEvent | undefined> {
    const [row] = await this.statements.query<StoredCarrierEvent>(
      `WITH job AS (${pendingJobSql('$1')})
       SELECT e.id, e.normalized FROM job JOIN carrier_events e ON e.id = job.data->>'carrierEventId' WHERE e.processed_at IS NULL`,
      [jobId],
    );
    return row;
  }

  private async runStatement(stmt: CteStatement, handler: OneStatementCarrierEventHandler<HandledKind>, event: NormalizedEvent, jobId: string, eventId: string) {
    const [job, id] = [stmt.param(jobId, 'text'), stmt.param(eventId, 'text')];
    const consumption = buildOneStatement(stmt, handler, event, (given) => {
      // The job runner's claim, held back unless the handler is ready: a twin run waits on the
      // job row, then claims nothing and so writes nothing.
      stmt.with('job_claimed', claimJobSql(job, given.ready ?? 'true'));
      // processed_at IS NULL: one run consumes the event (a replay may have); only the claimant.
      return stmt.with(
        'cev_consumed',
        `UPDATE carrier_events SET processed_at = now(), error = NULL, note = ${given.note ?? 'NULL'}, attempts = attempts + 1, unhandled_since = NULL
          WHERE id = ${id} AND processed_at IS NULL AND EXISTS (SELECT FROM job_claimed) RETURNING id AS consumed_event_id`,
      );
    });
    try {
      const [result] = await this.statements.query<{ ready: boolean; claimed: boolean; jobs: number; afterCommit: AfterCommitJob[] }>(
        stmt.text(
          `SELECT (${consumption.ready ?? 'true'}) AS ready, EXISTS (SELECT FROM job_claimed) AS claimed,
                  (${newJobsCount(stmt)})::int AS jobs, ${afterCommitJobs(stmt)} AS "afterCommit"`,
        ),
        stmt.params,
      );
      return result;
    } catch (err) {
      if (isTransient(err)) throw err;
      return undefined;
    }
  }
}
