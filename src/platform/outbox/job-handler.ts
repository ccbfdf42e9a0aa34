import { SetMetadata } from '@nestjs/common';
import type { Tx } from '../database/tx.js';
import type { JobDefinition, PayloadOf } from './job-definition.js';

export const JOB_HANDLER_METADATA = 'onceline:job-handler';

export interface JobContext {
  jobId: string;
  /** 1 on the first run. */
  attempt: number;
  /**
   * Aborted when this process starts to stop (JobWorkers' shutdown): a handler that waits (a
   * backoff between resends) stops waiting and throws, so its job is retried by a worker that
   * runs on, through the same guards, instead of holding the shutdown for as long as it waits.
   */
  signal?: AbortSignal;
  /** Present for transactional jobs: the transaction that also marks the job completed. */
  tx?: Tx;
  /**
   * For runInOneStatement, and handle of an external job, in a run right after the commit that
   * created the job (AfterCommitJobs): what its creator already held about the job's subject (a new
   * carrier event), or already did for it (a call command's first send, recorded), so the run need
   * not read or write it again. A hint, never a guard: the statement's own guards decide.
   */
  prefetched?: unknown;
  /** For a transactional job whose handler has withClaim: its value, computed by the claim's statement. */
  claimed?: unknown;
}

export type RunOutcome = 'completed' | 'skipped';

/** The one provider that runs job `J` (a JobDefinition of its module). */
export interface JobHandler<J extends JobDefinition> {
  /**
   * An external job's handler may give the job its outcome itself and return `completed`: its
   * completion rides in a statement it sends anyway once its work is done (completeJobsSql, with
   * other jobs' or with its last write), and the runner sends none. Otherwise (and for a
   * transactional job, always) the runner completes the job.
   */
  handle(data: PayloadOf<J>, context: JobContext): Promise<void | 'completed'>;
  /**
   * Optional fast path, tried first: the whole job (reads aside) as ONE autocommit statement that
   * also gives the job its outcome (the fragments of job-sql.ts), so the common case costs no
   * BEGIN, no COMMIT and no separate claim. Returns the outcome, or undefined when this run needs
   * the general path (`handle` in its transaction); it must then have written nothing.
   */
  runInOneStatement?(jobId: string, context: JobContext): Promise<RunOutcome | undefined>;
  /**
   * Optional, transactional jobs: an SQL expression that the statement claiming the job evaluates
   * once it has claimed it (its row locked), `data` being the claimed row's payload (jsonb). Its
   * value reaches `handle` as JobContext.claimed: what the handler would otherwise ask in a round
   * trip of its own right after the claim (a lock it takes first). It must only read and lock:
   * the claim's snapshot is the statement's, taken before any wait it makes.
   */
  withClaim?(data: string): string;
  /**
   * Optional: the job failed for good (a permanent error, or its attempts ran out). Runs in the
   * transaction that records the failure on the outbox row, so the owning module's record of it
   * (an event's `error`, say) commits with it.
   */
  onFinalFailure?(data: PayloadOf<J>, error: string, tx: Tx): Promise<void>;
}

/** Marks a provider as the one handler of `job`, which its module declares (declareJobs). */
export const HandlesJob = (job: JobDefinition) => SetMetadata(JOB_HANDLER_METADATA, job.name);

/** Thrown by a handler for an error that no retry will fix: the job is failed at once. */
export class PermanentJobError extends Error {}

/**
 * Thrown by a transactional job's handler whose work failed in a way that is the job's outcome
 * (recorded, not retried) while it ran without a savepoint: its transaction cannot keep the job's
 * claim and that record, so it must roll back whole (the handler's writes and the claim with it).
 * JobRunner then claims the job again in a second transaction and runs `record` in it; a twin run
 * that claimed the job in between leaves it nothing to record. A caller that runs the handler's
 * work outside a job (a replay) runs `record` in a second transaction of its own. The success
 * path so costs no SAVEPOINT round trip; only a failure pays for its second transaction.
 */
export class RecordAfterRollbackError<T = unknown> extends Error {
  constructor(
    message: string,
    /** Writes the outcome in the second transaction `tx`, which holds nothing of the first. */
    readonly record: (tx: Tx) => Promise<T>,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
