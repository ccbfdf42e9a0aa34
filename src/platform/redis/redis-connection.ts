import { Redis, type RedisOptions } from 'ioredis';

/**
 * A Redis connection. Producers (the relay's queue adds, the rate limiter, health checks) fail
 * within a reconnect or two when Redis is away; workers (BullMQ blocking reads) wait for it.
 */
export function redisConnection(url: string, role: 'producer' | 'worker'): Redis {
  const options: RedisOptions =
    role === 'producer'
      ? { maxRetriesPerRequest: 1, connectTimeout: 2000 }
      : { maxRetriesPerRequest: null };
  const redis = new Redis(url, { ...options, lazyConnect: false, retryStrategy: (n) => Math.min(n * 200, 2000) });
  redis.on('error', () => undefined); // reconnects on its own; readiness and the relay report outages
  return redis;
}
