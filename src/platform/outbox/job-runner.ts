import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ConnectionBudget, inLane, type Pace, type Urgency } from '../database/connection-budget.js';
import { storedMessage } from '../database/pg-errors.js';
import { exec, queryRows } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { PermanentJobError, RecordAfterRollbackError, type RunOutcome } from './job-handler.js';
import { JobRegistry } from './job-registry.js';
import { runUrgency } from './job-definition.js';
import { claimJobSql, completeJobSql, pendingJobSql } from './job-sql.js';


/** How one run starts (JobRunner.run). */
export interface RunOptions {
  prefetched?: unknown;
  payload?: unknown;
  /** How soon it gets its lane's connections (AfterCommitJob.urgency); default: the job's spec's, from `payload` where it has urgencyOf. */
  urgency?: Urgency;
  /** Raised by what waits for this run to end (AfterCommitJobs: a more urgent job of its turn). */
  pace?: Pace;
}

/**
 * Runs one job by its outbox row. The payload is read from Postgres, never trusted from Redis,
 * and the job's completion is recorded there, so a job Redis delivers twice runs once.
 */
@Injectable()
export class JobRunner {
  /** Aborted once this process stops running jobs (JobContext.signal). */
  private readonly stopping = new AbortController();

  constructor(
    private readonly registry: JobRegistry,
    private readonly uow: UnitOfWork,
    private readonly dataSource: DataSource,
    private readonly budget: ConnectionBudget,
  ) {}

  /**
   * `prefetched`: see JobContext.prefetched (a run right after the commit that created the job).
   * `payload`: the job's data as that commit wrote it (AfterCommitJob.payload), which spares an
   * external job the read of its row. The run's connections count against its job's lane budget
   * (ConnectionBudget), in the order its `urgency` (else its spec's) gives; new work (`new`: a new
   * call's first event) starts at its lane's pace (ConnectionBudget.admit).
   */
  async run(name: string, jobId: string, attempt: number, { prefetched, payload, urgency, pace }: RunOptions = {}): Promise<RunOutcome> {
    const spec = this.registry.spec(name);
    const urgencyOfRun = runUrgency(spec, payload, urgency) ?? 'later';
    await this.budget.admit(spec.lane, urgencyOfRun, pace);
    return inLane(spec.lane, () => this.runInLane(name, jobId, attempt, prefetched, payload), { urgency: urgencyOfRun, sends: spec.mode === 'external', pace });
  }

  private async runInLane(name: string, jobId: string, attempt: number, prefetched?: unknown, payload?: unknown): Promise<RunOutcome> {
    const handler = this.registry.get(name);
    // The fast path, where the handler has one: the whole job in one statement, or nothing
    // written and the general path below.
    const { signal } = this.stopping;
    const fast = await handler.runInOneStatement?.(jobId, { jobId, attempt, prefetched, signal });
    if (fast) return fast;
    if (this.registry.spec(name).mode === 'transactional') {
      try {
        return await this.uow.run(async (tx) => {
          // Claims the job: only one run can move completed_at off NULL, and a twin run blocks on
          // this row lock until the first commits, then finds nothing to claim. The handler's
          // withClaim rides in the same statement, evaluated only for the job claimed.
          const also = handler.withClaim?.('outbox_jobs.data');
          const { rows } = await exec<{ data: never; claimed?: unknown }>(tx, claimJobSql('$1', 'true', also && `(${also}) AS claimed`), [jobId]);
          if (rows.length === 0) return 'skipped';
          await handler.handle(rows[0].data, { jobId, attempt, tx, signal, claimed: rows[0].claimed });
          return 'completed';
        });
      } catch (err) {
        if (!(err instanceof RecordAfterRollbackError)) throw err;
        // The handler's transaction rolled back, its claim with it: the failure is the job's
        // outcome, recorded with a claim of its own (the same guard: a twin run that claimed the
        // job since has left nothing to record).
        return this.uow.run(async (tx) => {
          const { rows } = await exec(tx, claimJobSql('$1'), [jobId]);
          if (rows.length === 0) return 'skipped';
          await err.record(tx);
          return 'completed';
        });
      }
    }
    // External handlers are at least once and guard their own writes: this read only spares a job
    // that already has an outcome; a twin run that passes it too is stopped by the handler's guards.
    // A run right after the commit that wrote the job has its payload, and no outcome to find yet:
    // on the path of a call's next command, the read would be one more round trip before the send.
    const data = payload !== undefined ? payload : (await queryRows(this.dataSource.manager, pendingJobSql('$1'), [jobId]))[0]?.data;
    if (data === undefined) return 'skipped';
    // A handler that completed the job itself (in a statement it sent anyway) leaves nothing to send here.
    if ((await handler.handle(data as never, { jobId, attempt, signal, prefetched })) !== 'completed') await exec(this.dataSource.manager, completeJobSql('$1'), [jobId]);
    return 'completed';
  }

  /**
   * Records a failed attempt and returns what it recorded: 'failed' (final), 'retried', or
   * 'skipped' when the job already has an outcome. `final` is true or false, or 'when-spent':
   * final once the row's recorded attempts reach the job's `attempts`, counted by the same
   * statement. A final failure also runs the handler's onFinalFailure in the same transaction,
   * once: only the run that moves failed_at off NULL does.
   */
  async recordFailure(name: string, jobId: string, error: unknown, final: boolean | 'when-spent'): Promise<'failed' | 'retried' | 'skipped'> {
    const message = storedMessage(error);
    const spec = this.registry.spec(name);
    const attemptsAllowed = final === 'when-spent' ? spec.attempts : null;
    return inLane(spec.lane, () => this.uow.run(async (tx) => {
      // Only a job with no outcome yet; whether this failure is final is decided here, from the row it changed.
      // A row no relay has taken yet (a run after commit, AfterCommitJobs) becomes due now, so
      // the relay hands it to Redis for the retry instead of waiting out its lease.
      const { rows } = await exec<{ data: never; final: boolean }>(
        tx,
        `UPDATE outbox_jobs
            SET attempts = attempts + 1, last_error = $2,
                run_at = CASE WHEN relayed_at IS NULL THEN now() ELSE run_at END,
                failed_at = CASE WHEN $3 OR attempts + 1 >= $4::int THEN now() ELSE failed_at END
          WHERE job_id = $1 AND completed_at IS NULL AND failed_at IS NULL
          RETURNING data, failed_at IS NOT NULL AS final`,
        [jobId, message, final === true, attemptsAllowed],
      );
      if (rows.length === 0) return 'skipped';
      const handler = this.registry.get(name);
      if (rows[0].final && handler.onFinalFailure) await handler.onFinalFailure(rows[0].data, message, tx);
      return rows[0].final ? 'failed' : 'retried';
    }));
  }

  /** The process is stopping: runs still going are told (JobContext.signal), so none holds up the shutdown by waiting. */
  stop(): void {
    this.stopping.abort(new Error('the process is stopping: the job runs again from its retry'));
  }

  isPermanent(error: unknown): boolean {
    return error instanceof PermanentJobError;
  }
}
