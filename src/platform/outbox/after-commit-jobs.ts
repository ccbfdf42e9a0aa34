import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { queueOf, type JobName } from './job-catalogue.js';
import { JobRunner } from './job-runner.js';
import { OutboxMetrics } from './outbox-metrics.js';

/** A job the statement created for this process to run (CteStatement.afterCommitJobs()). */
export interface AfterCommitJob {
  name: JobName;
  jobId: string;
}

/** A reserved place for the jobs of one statement; exactly one of run() or release() is called. */
export interface AfterCommitSlot {
  /** The statement committed and returned these new jobs: runs them now, in the background. */
  run(jobs: AfterCommitJob[]): void;
  /** The statement failed or wrote no job: gives the place back. */
  release(): void;
}

/**
 * Jobs run by the worker whose autocommit statement created them, right after it returned: a
 * new event's first webhook attempt costs no relay batch, no Redis add and no BullMQ fetch and
 * completion. The outbox row stays the source of truth: it is written with run_at a grace period
 * ahead (WORKER_AFTER_COMMIT_GRACE_SECONDS), the run gives it its outcome through JobRunner (the
 * same guards as a run from Redis) and stamps it relayed, and a row whose run never ended (the
 * worker died) is taken by the relay when the grace is over. A run that threw is recorded and
 * handed to the relay at once, to be retried from Redis.
 *
 * A place is reserved before the statement is built, so a worker that already runs
 * WORKER_AFTER_COMMIT_JOBS statements' jobs writes the next ones due now, for the relay. Runs
 * are not awaited by the job that created them: a slow customer endpoint holds a place here,
 * never a processing slot.
 */
@Injectable()
export class AfterCommitJobs {
  private readonly logger = new Logger(AfterCommitJobs.name);
  private accepting = false;
  private reserved = 0;
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly runner: JobRunner,
    private readonly config: AppConfig,
    private readonly metrics: OutboxMetrics,
  ) {}

  /** The worker role turns this on; elsewhere every job goes through the relay. */
  start(): void {
    this.accepting = true;
  }

  /** A place for one statement's jobs, or undefined when all are taken (or this is no worker). */
  reserve(): AfterCommitSlot | undefined {
    if (!this.accepting || this.reserved >= this.config.WORKER_AFTER_COMMIT_JOBS) return undefined;
    this.reserved++;
    let settled = false;
    const settle = () => {
      if (settled) throw new Error('an after-commit slot is settled once');
      settled = true;
    };
    return {
      run: (jobs) => {
        settle();
        const done = Promise.all(jobs.map(({ name, jobId }) => this.runOne(name, jobId))).then(() => undefined);
        this.running.add(done);
        void done.finally(() => {
          this.running.delete(done);
          this.reserved--;
        });
      },
      release: () => {
        settle();
        this.reserved--;
      },
    };
  }

  /** Stops taking places and waits for the runs under way (called once the workers stopped). */
  async drain(): Promise<void> {
    this.accepting = false;
    while (this.running.size > 0) await Promise.all(this.running);
  }

  private async runOne(name: JobName, jobId: string): Promise<void> {
    const queue = queueOf(name);
    try {
      const outcome = await this.runner.run(name, jobId, 1);
      this.metrics.jobOutcomes.inc({ queue, name, outcome });
    } catch (err) {
      try {
        // Recorded on the row, which the same statement makes due now: the relay takes it at once.
        const outcome = await this.runner.recordFailure(name, jobId, err, this.runner.isPermanent(err));
        this.metrics.jobOutcomes.inc({ queue, name, outcome });
      } catch (e) {
        this.logger.warn(`job ${jobId} failed after commit (${(err as Error).message}) and could not be recorded: ${(e as Error).message}; the relay takes it after the grace period`);
      }
    }
  }
}
