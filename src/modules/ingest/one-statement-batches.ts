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
import type { SetsHandling, StoredCarrierEvent } from './carrier-event-handlers.js';
import { isTransient, urgencyOf } from './carrier-event-processor.js';
import { inLane, mostUrgent } from '../../platform/database/connection-budget.js';
import { ProcessCarrierEventJob } from './ingest.jobs.js';
import { buildBatchStatement } from './one-statement-build.js';
import { afterCommitJobs, newJobsCount } from '../../platform/outbox/statement-jobs.js';
import { createdAtOfIds } from '../../platform/retention/id-partition-key.js';

/** One process-carrier-event job run waiting for a batch. */
interface BatchedRun {
  jobId: string;
  event: StoredCarrierEvent;
}

/** undefined: nothing written, the job goes down the general path (see OneStatementRuns.run). */
type BatchedOutcome = RunOutcome | undefined;

/** The jobs a batch's statement claimed, those of its events not ready, and what it wrote for after commit. */
interface BatchStatementResult {
  claimed: string[];
  /** Absent for a handler whose events are always ready. */
  unready?: string[];
  jobs: number;
  afterCommit: AfterCommitJob[];
}

/**
 * Most runs one statement takes, and statements in flight at once (each holds a pooled
 * connection). A batch reserves an after-commit place per run for its events' first webhook
 * attempts, so maxBatch stays well under WORKER_AFTER_COMMIT_JOBS.
 */
const BATCH = { maxBatch: 32, maxInFlight: 4 };

/**
 * Process-carrier-event jobs of a kind whose handler writes batches (inbound SMS, receipts,
 * ignored events), group committed: the runs that arrive together (an ingest batch's events run
 * after its commit, concurrent runs from Redis) are one statement and one commit. Each run keeps
 * its own guards: its job's claim and its event's consumption are rows of their own, a run whose
 * claim a twin won writes nothing, and a run whose event is not ready (a receipt before its
 * message) claims and writes nothing and goes down the general path, which retries it later. A
 * statement Postgres refuses for one run's values is retried run by run, so only that run goes
 * down the general path.
 */
@Injectable()
export class OneStatementBatches implements BeforeApplicationShutdown {
  private readonly committers = new Map<string, GroupCommitter<BatchedRun, BatchedOutcome>>();

  constructor(
    private readonly outbox: OutboxService,
    private readonly statements: Statements,
    private readonly afterCommit: AfterCommitJobs,
  ) {}

  /**
   * Resolves once the statement that holds this run has committed (or failed for a reason of its
   * own). `batch`: the runs of one batch share their handling (an event kind, or `ignored`).
   */
  run(batch: string, handling: SetsHandling, jobId: string, event: StoredCarrierEvent): Promise<BatchedOutcome> {
    let committer = this.committers.get(batch);
    if (!committer) {
      // The statement's connections come in the order of its most urgent run (a won answer's
      // before hand-offs, before new calls, before inbound SMS), whichever run started the batch.
      committer = new GroupCommitter(
        (runs) => inLane(ProcessCarrierEventJob.lane, () => this.runBatch(handling, runs), { urgency: mostUrgent(runs.map((run) => urgencyOf(run.event.normalized))) }),
        BATCH,
      );
      this.committers.set(batch, committer);
    }
    return committer.submit({ jobId, event });
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([...this.committers.values()].map((committer) => committer.drained()));
  }

  /**
   * A job or an event twice in one batch (a run from Redis beside the one after commit): the
   * repeats go in a statement of their own after this one, where their claims find the job taken.
   * So do events of a key already in this statement (the handler's BatchKey: two receipts of one
   * message), in arrival order: each then sees what the one before it committed.
   */
  private async runBatch(handling: SetsHandling, runs: BatchedRun[]): Promise<BatchOutcome<BatchedOutcome>[]> {
    const jobs = new Set<string>();
    const events = new Set<string>();
    const keys = new Set<string>();
    const [first, repeats]: number[][] = [[], []];
    runs.forEach((run, k) => {
      const key = handling.key?.(run.event.normalized as never);
      const repeated = jobs.has(run.jobId) || events.has(run.event.id) || (key !== undefined && keys.has(key));
      jobs.add(run.jobId);
      events.add(run.event.id);
      if (key !== undefined) keys.add(key);
      (repeated ? repeats : first).push(k);
    });
    const outcomes: BatchOutcome<BatchedOutcome>[] = new Array(runs.length);
    (await this.runDistinct(handling, first.map((k) => runs[k]))).forEach((outcome, n) => (outcomes[first[n]] = outcome));
    if (repeats.length > 0) (await this.runBatch(handling, repeats.map((k) => runs[k]))).forEach((outcome, n) => (outcomes[repeats[n]] = outcome));
    return outcomes;
  }

  private async runDistinct(handling: SetsHandling, runs: BatchedRun[]): Promise<BatchOutcome<BatchedOutcome>[]> {
    try {
      const { claimed, unready } = await retryingLockConflicts(() => this.write(handling, runs));
      // Not ready: nothing written, its job unclaimed; the general path retries it later.
      return runs.map((run) => ({ ok: true, value: claimed.has(run.jobId) ? 'completed' : unready.has(run.jobId) ? undefined : 'skipped' }));
    } catch (err) {
      // The database failed, not a run: every job of the batch is retried.
      if (isTransient(err)) throw err;
      // A value Postgres refuses spoils the statement for all: each alone, so only its own fails.
      if (runs.length === 1) return [{ ok: true, value: undefined }];
      return (await Promise.all(runs.map((run) => this.runDistinct(handling, [run])))).flat();
    }
  }

  /** The batch's statement; returns the jobs whose claims it won, and those of events not ready. */
  private async write(handling: SetsHandling, runs: BatchedRun[]): Promise<{ claimed: Set<string>; unready: Set<string> }> {
    const stmt = new CteStatement();
    // The first webhook attempts of the events' customer events, and the handler's own job (a
    // hand-off's dial), run here once the statement returns; a kind with too few places free is
    // written due now, for the relay.
    const jobs = handling.afterCommit ? [handling.afterCommit, WebhookDeliveryAttemptJob] : [WebhookDeliveryAttemptJob];
    const result = await this.afterCommit.aroundStatement(jobs, runs.length, stmt, () => this.writeStatement(stmt, handling, runs), (written) => written.afterCommit, { urgency: handling.afterCommit?.urgency });
    this.outbox.jobsWritten(result.jobs);
    return { claimed: new Set(result.claimed), unready: new Set(result.unready ?? []) };
  }

  /** Builds and runs the batch's statement (the claims, the events' consumption, the handler's writes). */
  private async writeStatement(stmt: CteStatement, handling: SetsHandling, runs: BatchedRun[]): Promise<BatchStatementResult> {
    const ids = runs.map((run) => ({ eventId: run.event.id, jobId: run.jobId }));
    const claimed = 'job_claimed';
    let unready = '';
    await buildBatchStatement(stmt, handling.handler, runs.map((run) => run.event.normalized), ids, ({ input, ready, note }) => {
      // Only the ready rows' jobs are locked and claimed: a run not ready leaves its job as it
      // was, for the general path (a twin that claims it meanwhile finds its outcome there).
      const jobIds = stmt.param(runs.map((run) => run.jobId), 'text[]');
      const locked = stmt.with('job_locked', lockJobsSql(ready === input ? jobIds : `ARRAY(SELECT job_id FROM ${ready} WHERE job_id = ANY (${jobIds}))`));
      if (ready !== input) unready = `, (SELECT coalesce(jsonb_agg(i.job_id), '[]'::jsonb) FROM ${input} i WHERE NOT EXISTS (SELECT FROM ${ready} r WHERE r.event_id = i.event_id)) AS unready`;
      stmt.with(claimed, claimLockedJobsSql(locked));
      // processed_at IS NULL: one run consumes an event (a replay may have); only its job's
      // claimant. c.id = ANY: the events by their key, whatever the planner makes of the recordset,
      // in the partitions their ids' times can be in.
      const eventIds = stmt.param(runs.map((run) => run.event.id), 'text[]');
      return stmt.with(
        'cev_consumed',
        `UPDATE carrier_events c SET processed_at = now(), error = NULL, note = ${note('i')}, attempts = c.attempts + 1, unhandled_since = NULL
             FROM ${input} i JOIN ${claimed} j ON j.job_id = i.job_id
            WHERE c.id = ANY (${eventIds}) AND ${createdAtOfIds(eventIds, 'c.created_at')} AND c.id = i.event_id AND c.processed_at IS NULL
           RETURNING c.id AS consumed_event_id`,
      );
    });
    const [result] = await this.statements.query<BatchStatementResult>(
      stmt.text(
        `SELECT (SELECT coalesce(jsonb_agg(job_id), '[]'::jsonb) FROM ${claimed}) AS claimed${unready},
                  (${newJobsCount(stmt)})::int AS jobs, ${afterCommitJobs(stmt)} AS "afterCommit"`,
      ),
      stmt.params,
    );
    return result;
  }
}
