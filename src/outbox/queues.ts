import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Queue, type JobsOptions } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { AppConfig } from '../config/app-config.js';
import { JOB_SPECS, JobName, QueueName } from './job-catalogue.js';

/** A Redis connection for BullMQ. Producers fail within a reconnect or two when Redis is away; workers wait for it. */
export function redisConnection(url: string, role: 'producer' | 'worker'): Redis {
  const options: RedisOptions =
    role === 'producer'
      ? { maxRetriesPerRequest: 1, connectTimeout: 2000 }
      : { maxRetriesPerRequest: null };
  const redis = new Redis(url, { ...options, lazyConnect: false, retryStrategy: (n) => Math.min(n * 200, 2000) });
  redis.on('error', () => undefined); // reconnects on its own; readiness and the relay report outages
  return redis;
}

export interface RelayedJob {
  jobId: string;
  queue: QueueName;
  name: JobName;
}

/** One BullMQ Queue per catalogue queue, created on first use, closed at shutdown. */
@Injectable()
export class Queues implements OnApplicationShutdown {
  private readonly queues = new Map<QueueName, Queue>();
  private connection?: Redis;

  constructor(private readonly config: AppConfig) {}

  get(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      this.connection ??= redisConnection(this.config.REDIS_URL, 'producer');
      queue = new Queue(name, { connection: this.connection, prefix: this.config.QUEUE_PREFIX, skipWaitingForReady: true });
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
    }
    return queue;
  }

  all(): Queue[] {
    return Object.values(QueueName).map((name) => this.get(name));
  }

  /**
   * Hands jobs to Redis under their stable jobIds. BullMQ ignores an add whose jobId it still
   * holds, so publishing twice (two relays, a crash before commit, recovery) adds once.
   * The payload stays in Postgres; Redis carries only the id.
   */
  async publish(jobs: RelayedJob[]): Promise<void> {
    const byQueue = new Map<QueueName, RelayedJob[]>();
    for (const job of jobs) byQueue.set(job.queue, [...(byQueue.get(job.queue) ?? []), job]);
    await Promise.all(
      [...byQueue].map(([queue, group]) =>
        this.get(queue).addBulk(group.map((job) => ({ name: job.name, data: {}, opts: jobOptions(job) }))),
      ),
    );
  }

  async ping(): Promise<boolean> {
    this.connection ??= redisConnection(this.config.REDIS_URL, 'producer');
    return (await this.connection.ping()) === 'PONG';
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => undefined)));
    this.connection?.disconnect();
  }
}

function jobOptions(job: RelayedJob): JobsOptions {
  const spec = JOB_SPECS[job.name];
  return {
    jobId: job.jobId,
    attempts: spec.attempts,
    backoff: { type: 'exponential', delay: spec.backoffMs, jitter: 0.5 },
    // Completed jobs leave Redis: a re-publish of a finished job is then a no-op thanks to
    // the completed_at guard in Postgres, not to Redis remembering it.
    removeOnComplete: true,
    removeOnFail: { age: 7 * 24 * 3600 },
  };
}
