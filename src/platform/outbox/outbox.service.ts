import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { assertInTransaction, exec, type Tx, queryRows } from '../database/tx.js';
import { afterCommit } from '../database/unit-of-work.js';
import { AfterCommitJobs } from './after-commit-jobs.js';
import type { CteStatement } from '../database/cte-statement.js';
import { RelayWakeup } from './relay-wakeup.js';
import { AppConfig } from '../config/app-config.js';
import { JOB_ID_PATTERN, type JobDefinition } from './job-definition.js';
import { StatementJobs } from './statement-jobs.js';

export interface EnqueueRequest<P = unknown> {
  /** The job's definition, as its module declares it. */
  job: JobDefinition<P>;
  data: P;
  /** Stable id: the same work enqueued twice is one job (and one BullMQ jobId). */
  jobId: string;
  runAt?: Date;
}

export interface OutboxStatus {
  pending: number;
  oldest_pending_seconds: number;
}

/** The only way to create a job: a row written in the transaction that earned it. */
@Injectable()
export class OutboxService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly wakeup: RelayWakeup,
    private readonly config: AppConfig,
    private readonly afterCommitJobs: AfterCommitJobs,
  ) {}

  /**
   * Inserts the job in the caller's transaction; relays are woken once it commits. A jobId
   * already in the outbox is the same job, so it is not inserted again. Returns whether it was new.
   */
  async enqueue<P>(tx: Tx, request: EnqueueRequest<P>): Promise<boolean> {
    return (await this.enqueueMany(tx, [request as EnqueueRequest])) > 0;
  }

  /**
   * Many jobs in one statement (a batch of ingested events, say), same rules as enqueue.
   * Returns how many were new.
   *
   * A job due now that may run after commit (JobSpec.runsAfterCommit: a call's commands) and for
   * which this process has a place (AfterCommitJobs.reserve) is run here from memory once the
   * transaction commits; its row is written a lease ahead (renewed while the run lasts), the
   * backstop if that run never ends.
   * A rollback gives the place back and runs nothing.
   */
  async enqueueMany(tx: Tx, requests: EnqueueRequest[]): Promise<number> {
    assertInTransaction(tx);
    if (requests.length === 0) return 0;
    for (const { jobId } of requests) {
      if (!JOB_ID_PATTERN.test(jobId)) throw new Error(`invalid jobId ${JSON.stringify(jobId)}`);
    }
    // Due now: may run here after commit (a place each); written a lease ahead when it has one.
    const candidates = requests.map((r) => (r.runAt === undefined ? { definition: r.job, run: { name: r.job.name, jobId: r.jobId, payload: r.data } } : undefined));
    let runHere: boolean[] = [];
    const inserted = await this.afterCommitJobs.aroundTransactionalWrite(tx, candidates, async (here) => {
      runHere = here;
      // outbox_job_twin (migration 0043): a job id already in the outbox, in any partition (or
      // twice in this list), is one job; the partition's UNIQUE (job_id) stays as a backstop.
      const { rows } = await exec<{ job_id: string }>(
        tx,
        `INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
         SELECT job_id, queue, name, data::jsonb, CASE WHEN here THEN now() + make_interval(secs => $7) ELSE coalesce(run_at, now()) END
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::boolean[]) AS j(job_id, queue, name, data, run_at, here)
          WHERE outbox_job_twin(job_id) IS NULL
         ON CONFLICT DO NOTHING
         RETURNING job_id`,
        [
          requests.map((r) => r.jobId),
          requests.map((r) => r.job.queue),
          requests.map((r) => r.job.name),
          requests.map((r) => JSON.stringify(r.data)),
          requests.map((r) => r.runAt ?? null),
          here,
          this.config.WORKER_AFTER_COMMIT_GRACE_SECONDS,
        ],
      );
      return new Set(rows.map((row) => row.job_id));
    });
    // Only a new job this process does not run itself needs a relay: one run here is leased ahead,
    // so a relay woken for it would find nothing due (a NOTIFY and a poll for nothing, per command).
    if (requests.some((r, i) => !runHere[i] && inserted.has(r.jobId))) afterCommit(tx, () => this.wakeup.hint());
    return inserted.size;
  }

  /**
   * The outbox's part of a statement assembled from fragments: a job `definition` for each row
   * of CTE `source`, with job id and payload (jsonb) as SQL expressions over its columns. Ids
   * already in the outbox are one job, as in enqueueMany. Counted by newJobsCount(stmt); call
   * jobsWritten() once the statement has run.
   *
   * `payload`: a job this process runs after the statement (an external one) starts from the
   * data written here (AfterCommitJob.payload), not a read of its row.
   *
   * `newIds`: every job id is made from a row this very statement created with a new id (an
   * event's processing job, named by the event): no stored job can hold it, so the look across
   * partitions (outbox_job_twin) is skipped; the partition's UNIQUE (job_id) still holds.
   *
   * `runAtLeastSeconds`: `runAt` is at least this far ahead. Beyond the relay's poll
   * (OUTBOX_POLL_MS, the longest it sleeps) a relay's poll reads the job before it falls due, so
   * its jobs are not counted by newJobsCount and wake no relay (a join timeout 30 s ahead, written
   * with every answer, otherwise cost a NOTIFY and a relay's poll for nothing).
   */
  jobsFromCte(
    stmt: CteStatement,
    cteName: string,
    source: string,
    definition: JobDefinition,
    job: { id: string; data: string; runAt?: string; runAtLeastSeconds?: number; newIds?: boolean; payload?: boolean },
  ): string {
    const jobs = StatementJobs.of(stmt);
    // A job due now that this process runs right after the statement (StatementJobs.runAfterCommit):
    // its row is leased (renewed while the run lasts) before the relay may take it, the backstop if that run never ends.
    const afterCommit = jobs.runAfterCommit.has(definition.name) && definition.runsAfterCommit === true && job.runAt === undefined;
    const runAt = afterCommit ? `now() + make_interval(secs => ${stmt.param(this.config.WORKER_AFTER_COMMIT_GRACE_SECONDS, 'int')})` : (job.runAt ?? 'now()');
    // queue and name are lowercase words and dashes (defineJob checks): safe literals.
    const cte = stmt.with(
      cteName,
      `INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT ${job.id}, '${definition.queue}', '${definition.name}', ${job.data}, ${runAt} FROM ${source}${job.newIds ? '' : `
        WHERE outbox_job_twin(${job.id}) IS NULL`}
       ON CONFLICT DO NOTHING RETURNING job_id, name${afterCommit && job.payload ? ', data' : ''}`,
    );
    const foundByPoll = job.runAt !== undefined && (job.runAtLeastSeconds ?? 0) * 1000 > this.config.OUTBOX_POLL_MS;
    if (afterCommit) jobs.afterCommitJobCtes.push(cte);
    else if (!foundByPoll) jobs.jobCtes.push(cte);
    if (afterCommit && job.payload) jobs.afterCommitPayloadCtes.add(cte);
    return cte;
  }

  /**
   * A statement with jobsFromCte fragments inserted `count` jobs: wakes the relays once it has
   * committed (at once for an autocommit statement, after the commit when it ran in `tx`).
   */
  jobsWritten(count: number, tx?: Tx): void {
    if (count <= 0) return;
    if (tx) afterCommit(tx, () => this.wakeup.hint());
    else this.wakeup.hint();
  }

  /** Jobs committed but not yet handed to Redis, and the age of the oldest due one. */
  async status(): Promise<OutboxStatus> {
    const [row] = await queryRows(this.dataSource.manager,
      `SELECT count(*)::int AS pending,
              coalesce(extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now())), 0)::float8 AS oldest
         FROM outbox_jobs WHERE relayed_at IS NULL`,
    );
    return { pending: row.pending, oldest_pending_seconds: Math.max(0, Math.round(row.oldest * 1000) / 1000) };
  }
}
