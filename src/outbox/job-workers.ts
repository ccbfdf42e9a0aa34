import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { AppConfig } from '../config/app-config.js';
import { JobName, QueueName } from './job-catalogue.js';
import { JobRunner } from './job-runner.js';
import { OutboxMetrics } from './outbox-metrics.js';
import { redisConnection } from './queues.js';

/** The worker role: one BullMQ Worker per queue, each job run through JobRunner. */
@Injectable()
export class JobWorkers implements BeforeApplicationShutdown {
  private readonly logger = new Logger(JobWorkers.name);
  private workers: Worker[] = [];
  /** BullMQ does not close a connection it was handed, so these are closed after the workers. */
  private connections: Redis[] = [];

  constructor(
    private readonly runner: JobRunner,
    private readonly config: AppConfig,
    private readonly metrics: OutboxMetrics,
  ) {}

  start(queues: QueueName[] = Object.values(QueueName)): void {
    if (this.workers.length > 0) return;
    for (const queue of queues) {
      const connection = redisConnection(this.config.REDIS_URL, 'worker');
      this.connections.push(connection);
      const worker = new Worker(queue, (job) => this.process(queue, job), {
        connection,
        prefix: this.config.QUEUE_PREFIX,
        concurrency: this.config.WORKER_CONCURRENCY,
        lockDuration: this.config.WORKER_LOCK_DURATION_MS,
        stalledInterval: this.config.WORKER_LOCK_DURATION_MS,
      });
      worker.on('error', (err) => this.logger.warn(`worker ${queue}: ${err.message}`));
      this.workers.push(worker);
    }
  }

  /** Graceful stop: no new jobs are taken, in-flight ones finish. */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
    this.workers = [];
    for (const connection of this.connections) connection.disconnect();
    this.connections = [];
  }

  private async process(queue: QueueName, job: Job): Promise<void> {
    const name = job.name as JobName;
    const jobId = job.id as string;
    try {
      const outcome = await this.runner.run(name, jobId, job.attemptsMade + 1);
      this.metrics.jobOutcomes.inc({ queue, name, outcome });
    } catch (err) {
      const permanent = this.runner.isPermanent(err);
      const final = permanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      await this.runner.recordFailure(name, jobId, err, final);
      this.metrics.jobOutcomes.inc({ queue, name, outcome: final ? 'failed' : 'retried' });
      if (permanent) throw new UnrecoverableError((err as Error).message);
      throw err;
    }
  }
}
