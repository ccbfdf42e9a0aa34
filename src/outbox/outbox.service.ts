import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { assertInTransaction, exec, type Tx } from '../database/tx.js';
import { afterCommit } from '../database/unit-of-work.js';
import { RelayWakeup } from './relay-wakeup.js';
import { JOB_ID_PATTERN, JobName, queueOf, type JobPayloads } from './job-catalogue.js';


export interface EnqueueRequest<N extends JobName> {
  name: N;
  data: JobPayloads[N];
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
  ) {}

  /**
   * Inserts the job in the caller's transaction; relays are woken once it commits. A jobId
   * already in the outbox is the same job, so it is not inserted again. Returns whether it was new.
   */
  async enqueue<N extends JobName>(tx: Tx, request: EnqueueRequest<N>): Promise<boolean> {
    assertInTransaction(tx);
    if (!JOB_ID_PATTERN.test(request.jobId)) throw new Error(`invalid jobId ${JSON.stringify(request.jobId)}`);
    const { affected } = await exec(
      tx,
      `INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       VALUES ($1, $2, $3, $4, coalesce($5::timestamptz, now()))
       ON CONFLICT (job_id) DO NOTHING`,
      [request.jobId, queueOf(request.name), request.name, JSON.stringify(request.data), request.runAt ?? null],
    );
    if (affected > 0) afterCommit(tx, () => this.wakeup.hint());
    return affected > 0;
  }

  /** Jobs committed but not yet handed to Redis, and the age of the oldest due one. */
  async status(): Promise<OutboxStatus> {
    const [row] = await this.dataSource.query(
      `SELECT count(*)::int AS pending,
              coalesce(extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now())), 0)::float8 AS oldest
         FROM outbox_jobs WHERE relayed_at IS NULL`,
    );
    return { pending: row.pending, oldest_pending_seconds: Math.max(0, Math.round(row.oldest * 1000) / 1000) };
  }
}
