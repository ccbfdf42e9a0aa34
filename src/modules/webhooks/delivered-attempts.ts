import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { GroupCommitter, type BatchOutcome } from '../../platform/database/group-commit.js';
import { isDataError, retryingLockConflicts } from '../../platform/database/pg-errors.js';
import { Statements } from '../../platform/database/statements.js';
import { completeJobsSql } from '../../platform/outbox/job-sql.js';
import { recordAttemptsCtes, type AttemptOutcome } from './attempt-records.js';
import { EndpointHealth } from './endpoint-health.js';

/** A successful attempt to record, with the job that made it. */
export interface DeliveredAttempt {
  outcome: AttemptOutcome;
  jobId: string;
}

/** Most successes one statement records, and statements in flight at once (each holds a pooled connection). */
const BATCH = { maxBatch: 128, maxInFlight: 2 };

/**
 * Successful attempts, the common outcome, recorded together: the attempts that finish while a
 * recording statement runs go in the next one, so N successes cost one statement and one commit
 * (group commit, as ingest does). Each keeps its own guard (recordAttemptsCtes' WHERE), and a
 * caller's promise resolves once the statement that holds its record has committed.
 */
@Injectable()
export class DeliveredAttempts implements BeforeApplicationShutdown {
  private readonly batches: GroupCommitter<DeliveredAttempt, void>;

  constructor(
    private readonly statements: Statements,
    private readonly health: EndpointHealth,
  ) {
    this.batches = new GroupCommitter((items) => this.recordBatch(items), BATCH);
  }

  /** The delivery delivered, its attempt row, the endpoint's health and the job's completion, committed together. */
  record(attempt: DeliveredAttempt): Promise<void> {
    return this.batches.submit(attempt);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.batches.drained();
  }

  private async recordBatch(items: DeliveredAttempt[]): Promise<BatchOutcome<void>[]> {
    try {
      await retryingLockConflicts(() => this.write(items));
      return items.map(() => ({ ok: true, value: undefined }));
    } catch (err) {
      // A value Postgres refuses spoils the statement for all: each alone, so only its own fails.
      if (!isDataError(err) || items.length === 1) throw err;
      return Promise.all(items.map((item) => this.recordBatch([item]).then(([outcome]) => outcome, (error: unknown) => ({ ok: false as const, error }))));
    }
  }

  private async write(items: DeliveredAttempt[]): Promise<void> {
    // In delivery order, so two statements that share a delivery (twin runs) lock it in one order.
    const sorted = [...items].sort((a, b) => (a.outcome.ref.id < b.outcome.ref.id ? -1 : a.outcome.ref.id > b.outcome.ref.id ? 1 : 0));
    const stmt = new CteStatement();
    const recorded = recordAttemptsCtes(stmt, sorted.map((item) => item.outcome));
    this.health.recordSuccessesCte(stmt, recorded);
    stmt.with('jobs_done', completeJobsSql(stmt.param(sorted.map((item) => item.jobId), 'text[]')));
    await this.statements.query(stmt.text('SELECT 1'), stmt.params);
  }
}
