import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Queue, type JobsOptions } from 'bullmq';
import { AppConfig } from '../config/app-config.js';
import { dropFinishedCopies } from './finished-copies.js';
import { RedisService } from '../redis/redis.service.js';
import { JobRegistry } from './job-registry.js';

export interface RelayedJob {
  jobId: string;
  queue: string;
  /** The job's stored name (JobDefinition.name). */
  name: string;
}

/** One BullMQ Queue per declared queue, created on first use, closed at shutdown. */
@Injectable()
export class Queues implements OnApplicationShutdown {
  private readonly queues = new Map<string, Queue>();
  constructor(
    private readonly config: AppConfig,
    private readonly redis: RedisService,
    private readonly registry: JobRegistry,
  ) {}

  get(name: string): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: this.redis.shared(), prefix: this.config.QUEUE_PREFIX, skipWaitingForReady: true });
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
      this.forgetIfNeverReady(name, queue);
    }
    return queue;
  }

  /**
   * BullMQ asks Redis its version once, when a Queue is made, and every later call on that
   * Queue awaits that one answer: a Queue made while Redis is away (the first publish of a
   * relay that started, or first had work, during an outage) fails every call with that first
   * error for the life of the process, long after Redis is back. Such a Queue is dropped, so
   * the next call makes a new one. Registered first, this runs before any caller sees the error.
   */
  private forgetIfNeverReady(name: string, queue: Queue): void {
    queue.waitUntilReady().catch(() => {
      if (this.queues.get(name) === queue) this.queues.delete(name);
      // The connection is shared: closing the Queue only detaches it.
      void queue.close().catch(() => undefined);
    });
  }

  all(): Queue[] {
    return this.registry.queues().map((name) => this.get(name));
  }

  /**
   * Hands jobs to Redis under their stable jobIds. BullMQ ignores an add whose jobId it still
   * holds, so publishing twice (two relays, a crash before commit) adds once.
   * The payload stays in Postgres; Redis carries only the id.
   */
  async publish(jobs: RelayedJob[]): Promise<void> {
    await Promise.all(
      [...byQueue(jobs)].map(([queue, group]) =>
        this.get(queue).addBulk(group.map((job) => ({ name: job.name, data: {}, opts: this.jobOptions(job) }))),
      ),
    );
  }

  /**
   * Publishes again jobs that Postgres shows unfinished (recovery). An add under a jobId BullMQ
   * still holds is ignored, and a copy it holds as failed (failed for stalling, or by a worker
   * that could not record it) is kept for days: such a finished copy is deleted first, so the job
   * is added again. A copy waiting, delayed or running stays as it is. Returns the ids re-added
   * that way. Called with the rows locked, so no outcome can be recorded meanwhile.
   */
  async republish(jobs: RelayedJob[]): Promise<string[]> {
    const dropped = await Promise.all([...byQueue(jobs)].map(([queue, group]) => dropFinishedCopies(this.redis.shared(), this.get(queue), group.map((j) => j.jobId))));
    await this.publish(jobs);
    return dropped.flat();
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => undefined)));
  }

  private jobOptions(job: RelayedJob): JobsOptions {
    const spec = this.registry.spec(job.name);
    return {
      jobId: job.jobId,
      attempts: spec.attempts,
      backoff: { type: 'exponential', delay: spec.backoffMs, jitter: 0.5 },
      // Completed jobs leave Redis: a re-publish of a finished job is then a no-op thanks to
      // the completed_at guard in Postgres, not to Redis remembering it.
      removeOnComplete: true,
      // Kept for inspection; the redrive deletes a failed copy whose job Postgres shows unfinished.
      removeOnFail: { age: 7 * 24 * 3600 },
    };
  }
}

function byQueue(jobs: RelayedJob[]): Map<string, RelayedJob[]> {
  const groups = new Map<string, RelayedJob[]>();
  for (const job of jobs) groups.set(job.queue, [...(groups.get(job.queue) ?? []), job]);
  return groups;
}
