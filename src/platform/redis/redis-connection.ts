import { Redis, type RedisOptions } from 'ioredis';
// ioredis' own handler for a closed socket: it is what disconnect() runs for a client that has no socket yet.
import { closeHandler } from 'ioredis/built/redis/event_handler.js';

/** ioredis' options, with the reply mapping this project uses (its default). */
type Options = Omit<RedisOptions, 'replyMapping'>;

/**
 * ioredis 6 leaves a client that is disconnected between two reconnect attempts ('reconnecting':
 * no socket, a retry timer set) in that state forever: disconnect() clears the timer and waits
 * for the 'close' of a socket that is already gone, so 'end' never comes and the commands it
 * holds never settle. BullMQ's Worker.close() waits for that 'end' on its blocking connection, so
 * a worker that stops during a Redis outage, or within the reconnect backoff after one, never
 * closed (taskforcesh/bullmq#4656). This client finishes such a close as ioredis does for a client
 * that never connected; its duplicates (BullMQ's blocking connections) are of the same kind.
 */
export class ClosableRedis extends Redis {
  /** Its copies made by duplicate() that have not ended: a BullMQ worker's own connections. */
  private readonly copies = new Set<ClosableRedis>();

  override disconnect(reconnect = false): void {
    const betweenAttempts = !reconnect && this.status === 'reconnecting';
    super.disconnect(reconnect);
    if (betweenAttempts && this.status === 'reconnecting') closeHandler(this)();
  }

  override duplicate(override?: Partial<RedisOptions>): ReturnType<Redis['duplicate']> {
    // The same options as ioredis' own duplicate(); typed as it is (its reply-mapping generics).
    const options = { ...this.options, ...override } as Options;
    const copy = new ClosableRedis(options);
    this.copies.add(copy);
    copy.once('end', () => this.copies.delete(copy));
    return copy as Redis as ReturnType<Redis['duplicate']>;
  }

  /**
   * Shutdown: this connection and its copies close as soon as they are not connected (at once,
   * or when they lose Redis) instead of reconnecting. BullMQ's Worker.close() otherwise waits for
   * a connection that never became ready to become ready (taskforcesh/bullmq#4656), and for the
   * acknowledgement of its last jobs, which a Redis that is away never gives. Connected ones are
   * left to their owner's graceful close.
   */
  closeWhenDisconnected(): void {
    for (const client of [this, ...this.copies]) {
      // A connected one ends on its next close instead of reconnecting (ioredis ends a client whose
      // retryStrategy returns no delay). Calling disconnect() from its 'close' would instead arm
      // ioredis' 2 s destroy timer on the socket that already closed, holding the process open.
      if (client.status === 'ready') client.options.retryStrategy = () => null;
      else client.disconnect();
    }
  }
}

/**
 * A Redis connection. Producers (the relay's queue adds, the rate limiter, health checks) fail
 * within a reconnect or two when Redis is away; workers (BullMQ blocking reads) wait for it.
 */
export function redisConnection(url: string, role: 'producer' | 'worker'): ClosableRedis {
  const options: Options =
    role === 'producer'
      ? { maxRetriesPerRequest: 1, connectTimeout: 2000 }
      : { maxRetriesPerRequest: null };
  // disconnectTimeout: ioredis destroys a socket that has not closed this long after disconnect();
  // its timer (2 s by default) outlives a socket that had already closed, holding a stopping process open.
  const redis = new ClosableRedis(url, { ...options, lazyConnect: false, disconnectTimeout: 250, retryStrategy: (n) => Math.min(n * 200, 2000) });
  redis.on('error', () => undefined); // reconnects on its own; readiness and the relay report outages
  return redis;
}
