import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { AppConfig } from '../config/app-config.js';
import { AfterCommitJobs } from './after-commit-jobs.js';
import { JobRegistry } from './job-registry.js';
import { JobRunner } from './job-runner.js';
import { OutboxMetrics } from './outbox-metrics.js';
import { redisConnection, type ClosableRedis } from '../redis/redis-connection.js';

/** The worker role: one BullMQ Worker per queue, each job run through JobRunner. */
@Injectable()
export class JobWorkers implements BeforeApplicationShutdown {
  private readonly logger = new Logger(JobWorkers.name);
  private workers: Worker[] = [];
  /** BullMQ does not close a connection it was handed, so these are closed after the workers. */
  private connections: ClosableRedis[] = [];
  /** Errors our processor threw after recording the failure: BullMQ's 'failed' event for them is already in Postgres. */
  private readonly recordedFailures = new WeakSet<Error>();
  /** Recordings of failures our processor never saw, awaited at shutdown. */
  private readonly unseenRecordings = new Set<Promise<void>>();

  constructor(
    private readonly runner: JobRunner,
    private readonly config: AppConfig,
    private readonly metrics: OutboxMetrics,
    private readonly afterCommit: AfterCommitJobs,
    private readonly registry: JobRegistry,
  ) {}

  /** `queues`: every queue the app's modules declared a job for, unless told. */
  start(queues: string[] = this.registry.queues()): void {
    if (this.workers.length > 0) return;
    this.afterCommit.start(queues);
    for (const queue of queues) {
      const connection = redisConnection(this.config.REDIS_URL, 'worker');
      this.connections.push(connection);
      const worker = new Worker(queue, (job) => this.process(queue, job), {
        connection,
        prefix: this.config.QUEUE_PREFIX,
        concurrency: this.config.WORKER_CONCURRENCY,
        lockDuration: this.config.WORKER_LOCK_DURATION_MS,
        // Checked every half lock: a dead worker's job is taken again within 1.5 locks.
        stalledInterval: Math.ceil(this.config.WORKER_LOCK_DURATION_MS / 2),
      });
      worker.on('error', (err) => this.logger.warn(`worker ${queue}: ${err.message}`));
      worker.on('failed', (job, err) => this.recordUnseenFailure(queue, job, err));
      this.workers.push(worker);
    }
  }

  /**
   * Graceful stop: no new jobs are taken, in-flight ones finish. A connection that is not
   * connected, or loses Redis meanwhile, is closed rather than waited for: a job's outcome is in
   * Postgres when our processor returns, and what Redis did not hear of is redriven to a no-op.
   */
  async beforeApplicationShutdown(): Promise<void> {
    // Handlers waiting between attempts stop now (their jobs retry elsewhere) rather than hold the close.
    this.runner.stop();
    const closing = this.workers.map((w) => w.close());
    for (const connection of this.connections) connection.closeWhenDisconnected();
    await Promise.all(closing);
    this.workers = [];
    // Jobs the last runs started after their commits finish too (their rows are relayed otherwise).
    await this.afterCommit.drain();
    await Promise.all(this.unseenRecordings);
    for (const connection of this.connections) connection.disconnect();
    this.connections = [];
  }

  private async process(queue: string, job: Job): Promise<void> {
    const name = job.name;
    const jobId = job.id as string;
    try {
      const outcome = await this.runner.run(name, jobId, job.attemptsMade + 1);
      this.metrics.jobOutcomes.inc({ queue, name, outcome });
    } catch (err) {
      const permanent = this.runner.isPermanent(err);
      const final = permanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      const outcome = await this.runner.recordFailure(name, jobId, err, final);
      this.metrics.jobOutcomes.inc({ queue, name, outcome });
      const thrown = permanent ? new UnrecoverableError((err as Error).message) : err instanceof Error ? err : new Error(String(err));
      this.recordedFailures.add(thrown);
      throw thrown;
    }
  }

  /**
   * BullMQ fails some jobs without our processor recording it: a job that stalled more than
   * allowed (its worker died, or stopped renewing its lock, twice) is failed by the next worker
   * that fetches it, without running the processor; and a failure whose recording threw
   * (Postgres away) is in Redis only. Recorded here so the row shows last_error. Not final until
   * the row's attempts are spent: a stalled run may have died before doing anything, and the
   * redrive re-adds a job BullMQ holds as failed; a job that kills its worker every time still ends.
   */
  private recordUnseenFailure(queue: string, job: Job | undefined, err: Error): void {
    if (!job?.id || this.recordedFailures.has(err)) return;
    const name = job.name;
    const recording = this.runner
      .recordFailure(name, job.id, err, 'when-spent')
      .then((outcome) => void this.metrics.jobOutcomes.inc({ queue, name, outcome }))
      .catch((e: Error) => this.logger.warn(`job ${job.id} failed in Redis (${err.message}) and could not be recorded: ${e.message}; the redrive runs it again`))
      .finally(() => this.unseenRecordings.delete(recording));
    this.unseenRecordings.add(recording);
  }
}
