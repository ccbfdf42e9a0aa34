import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { GroupCommitter, type BatchOutcome } from '../../platform/database/group-commit.js';
import { retryingLockConflicts } from '../../platform/database/pg-errors.js';
import { Statements } from '../../platform/database/statements.js';
import { AfterCommitJobs, type AfterCommitJob } from '../../platform/outbox/after-commit-jobs.js';
import { WebhookDeliveryAttemptJob } from '../webhooks/webhooks.jobs.js';
import type { RunOutcome } from '../../platform/outbox/job-handler.js';
import { claimLockedJobsSql, lockJobsSql } from '../../platform/outbox/job-sql.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import type { BatchCarrierEventHandler, HandledKind } from './carrier-event-handlers.js';
import { isTransient } from './carrier-event-processor.js';
import { buildBatchStatement } from './one-statement-build.js';
import type { StoredCarrierEvent } from './one-statement-runs.js';
import { afterCommitJobs, newJobsCount } from '../../platform/outbox/statement-jobs.js';

/** One process-carrier-event job run waiting for a batch. */
interface BatchedRun {
  jobId: string;
  event: StoredCarrierEvent;
}

/** undefined: nothing written, the job goes down the general path (see OneStatementRuns.run). */
type BatchedOutcome = RunOutcome | undefined;

/**
 * Most runs one statement takes, and statements in flight at once (each holds a pooled
 * connection). A batch reserves an after-commit place per run for its events' first webhook
 * attempts, so maxBatch stays well under WORKER_AFTER_COMMIT_JOBS.
 */
const BATCH = { maxBatch: 32, maxInFlight: 4 };

/**
 * Process-carrier-event jobs of a kind whose handler writes batches (inbound SMS), group
 * committed: the runs that arrive together (an ingest batch's events run after its commit,
 * concurrent runs from Redis) are one statement and one commit. Each run keeps its own guards:
 * its job's claim and its event's consumption are rows of their own, and a run whose claim a twin
 * won writes nothing. A statement Postgres refuses for one run's values is retried run by run,
 * so only that run goes down the general path.
 */
@Injectable()
export class OneStatementBatches implements BeforeApplicationShutdown {
  private readonly committers = new Map<HandledKind, GroupCommitter<BatchedRun, BatchedOutcome>>();

  constructor(
    private readonly outbox: OutboxService,
    private readonly statements: Statements,
    private readonly afterCommit: AfterCommitJobs,
  ) {}

  /** Resolves once the statement that holds this run has committed (or failed for a reason of its own). */
  run(kind: HandledKind, handler: BatchCarrierEventHandler<HandledKind>, jobId: string, event: StoredCarrierEvent): Promise<BatchedOutcome> {
    let committer = this.committers.get(kind);
    if (!committer) {
      committer = new GroupCommitter((runs) => this.runBatch(handler, runs), BATCH);
      this.committers.set(kind, committer);
    }
    return committer.submit({ jobId, event });
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([...this.committers.values()].map((committer) => committer.drained()));
  }

  /**
   * A job or an event twice in one batch (a run from Redis beside the one after commit): the
   * repeats go in a statement of their own after this one, where their claims find the job taken.
   */
  private async runBatch(handler: BatchCarrierEventHandler<HandledKind>, runs: BatchedRun[]): Promise<BatchOutcome<BatchedOutcome>[]> {
    const jobs = new Set<string>();
    const events = new Set<string>();
    const [first, repeats]: number[][] = [[], []];
    runs.forEach((run, k) => {
      const repeated = jobs.has(run.jobId) || events.has(run.event.id);
      jobs.add(run.jobId);
      events.add(run.event.id);
      (repeated ? repeats : first).push(k);
    });
    const outcomes: BatchOutcome<BatchedOutcome>[] = new Array(runs.length);
    (await this.runDistinct(handler, first.map((k) => runs[k]))).forEach((outcome, n) => (outcomes[first[n]] = outcome));
    if (repeats.length > 0) (await this.runBatch(handler, repeats.map((k) => runs[k]))).forEach((outcome, n) => (outcomes[repeats[n]] = outcome));
    return outcomes;
  }

  private async runDistinct(handler: BatchCarrierEventHandler<HandledKind>, runs: BatchedRun[]): Promise<BatchOutcome<BatchedOutcome>[]> {
    try {
      const claimed = await retryingLockConflicts(() => this.write(handler, runs));
      return runs.map((run) => ({ ok: true, value: claimed.has(run.jobId) ? 'completed' : 'skipped' }));
    } catch (err) {
      // The database failed, not a run: every job of the batch is retried.
      if (isTransient(err)) throw err;
      // A value Postgres refuses spoils the statement for all: each alone, so only its own fails.
      if (runs.length === 1) return [{ ok: true, value: undefined }];
      return (await Promise.all(runs.map((run) => this.runDistinct(handler, [run])))).flat();
    }
  }

  /** The batch's statement; returns the jobs whose claims it won. */
  private async write(handler: BatchCarrierEventHandler<HandledKind>, runs: BatchedRun[]): Promise<Set<string>> {
    const stmt = new CteStatement();
    // The first webhook attempts of the events' customer events run here once the statement
    // returns; with too few places free they are written due now, for the relay.
    const result = await this.afterCommit.aroundStatement(WebhookDeliveryAttemptJob, runs.length, stmt, () => this.writeStatement(stmt, handler, runs), (written) => written.afterCommit);
    this.outbox.jobsWritten(result.jobs);
    return new Set(result.claimed);
  }

  /** Builds and runs the batch's statement (the claims, the events' consumption, the handler's writes). */
  private async writeStatement(stmt: CteStatement, handler: BatchCarrierEventHandler<HandledKind>, runs: BatchedRun[]): Promise<{ claimed: string[]; jobs: number; afterCommit: AfterCommitJob[] }> {
    const ids = runs.map((run) => ({ eventId: run.event.id, jobId: run.jobId }));
    const claimed = 'job_claimed';
    buildBatchStatement(stmt, handler, runs.map((run) => run.event.normalized), ids, (input, note) => {
      const locked = stmt.with('job_locked', lockJobsSql(stmt.param(runs.map((run) => run.jobId), 'text[]')));
      stmt.with(claimed, claimLockedJobsSql(locked));
      // processed_at IS NULL: one run consumes an event (a replay may have); only its job's
      // claimant. c.id = ANY: the events by their key, whatever the planner makes of the recordset.
      return stmt.with(
        'cev_consumed',
        `UPDATE carrier_events c SET processed_at = now(), error = NULL, note = ${note('i')}, attempts = c.attempts + 1, unhandled_since = NULL
             FROM ${input} i JOIN ${claimed} j ON j.job_id = i.job_id
            WHERE c.id = ANY (${stmt.param(runs.map((run) => run.event.id), 'text[]')}) AND c.id = i.event_id AND c.processed_at IS NULL
           RETURNING c.id AS consumed_event_id`,
      );
    });
    const [result] = await this.statements.query<{ claimed: string[]; jobs: number; afterCommit: AfterCommitJob[] }>(
      stmt.text(
        `SELECT (SELECT coalesce(jsonb_agg(job_id), '[]'::jsonb) FROM ${claimed}) AS claimed,
                  (${newJobsCount(stmt)})::int AS jobs, ${afterCommitJobs(stmt)} AS "afterCommit"`,
      ),
      stmt.params,
    );
    return result;
  }
}
