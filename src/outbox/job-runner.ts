import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { storedMessage } from '../database/pg-errors.js';
import { exec } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { JOB_SPECS, JobName } from './job-catalogue.js';
import { PermanentJobError } from './job-handler.js';
import { JobRegistry } from './job-registry.js';

export type RunOutcome = 'completed' | 'skipped';

/**
 * Runs one job by its outbox row. The payload is read from Postgres, never trusted from Redis,
 * and the job's completion is recorded there, so a job Redis delivers twice runs once.
 */
@Injectable()
export class JobRunner {
  constructor(
    private readonly registry: JobRegistry,
    private readonly uow: UnitOfWork,
    private readonly dataSource: DataSource,
  ) {}

  async run(name: JobName, jobId: string, attempt: number): Promise<RunOutcome> {
    const handler = this.registry.get(name);
    if (JOB_SPECS[name].mode === 'transactional') {
      return this.uow.run(async (tx) => {
        // Claims the job: only one run can move completed_at off NULL, and a twin run blocks on
        // this row lock until the first commits, then finds nothing to claim.
        const { rows } = await exec<{ data: never }>(
          tx,
          `UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1
            WHERE job_id = $1 AND completed_at IS NULL AND failed_at IS NULL
            RETURNING data`,
          [jobId],
        );
        if (rows.length === 0) return 'skipped';
        await handler.handle(rows[0].data, { jobId, attempt, tx });
        return 'completed';
      });
    }
    const [row] = await this.dataSource.query(
      `SELECT data FROM outbox_jobs WHERE job_id = $1 AND completed_at IS NULL AND failed_at IS NULL`,
      [jobId],
    );
    if (!row) return 'skipped';
    await handler.handle(row.data, { jobId, attempt });
    await this.dataSource.query(
      `UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1 WHERE job_id = $1 AND completed_at IS NULL`,
      [jobId],
    );
    return 'completed';
  }

  /**
   * Records a failed attempt; final when retries are exhausted or the error is permanent. A final
   * failure also runs the handler's onFinalFailure in the same transaction, once: only the run
   * that moves failed_at off NULL does.
   */
  async recordFailure(name: JobName, jobId: string, error: unknown, final: boolean): Promise<void> {
    const message = storedMessage(error);
    await this.uow.run(async (tx) => {
      const { rows } = await exec<{ data: never }>(
        tx,
        `UPDATE outbox_jobs
            SET attempts = attempts + 1, last_error = $2,
                failed_at = CASE WHEN $3 THEN now() ELSE failed_at END
          WHERE job_id = $1 AND completed_at IS NULL AND failed_at IS NULL
          RETURNING data`,
        [jobId, message, final],
      );
      const handler = this.registry.get(name);
      if (final && rows.length > 0 && handler.onFinalFailure) await handler.onFinalFailure(rows[0].data, message, tx);
    });
  }

  isPermanent(error: unknown): boolean {
    return error instanceof PermanentJobError;
  }
}
