import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import type { Redis } from 'ioredis';
import { redisConnection } from '../../../src/platform/redis/redis-connection.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/services.js';
import { waitFor } from '../../support/wait.js';

/** Resolves 'end' once the client has ended, or 'still open' after the deadline. */
function endedWithin(client: Redis, ms: number): Promise<'end' | 'still open'> {
  if (client.status === 'end') return Promise.resolve('end');
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('still open'), ms);
    client.once('end', () => {
      clearTimeout(timer);
      resolve('end');
    });
  });
}

describe('a Redis connection disconnected between two reconnect attempts', () => {
  let redis: PrivateRedis;
  beforeAll(async () => {
    redis = await startPrivateRedis();
  });
  afterAll(() => redis.dispose());

  it('ends, and so do its duplicates (BullMQ blocking connections), rejecting the command they held', async () => {
    const client = redisConnection(redis.url, 'worker');
    const blocking = client.duplicate();
    blocking.on('error', () => undefined);
    await Promise.all([once(client, 'ready'), once(blocking, 'ready')]);
    // What a BullMQ worker holds on its blocking connection while it waits for jobs.
    const waitingForJob = blocking.bzpopmin('onceline-test-empty', 0).then(
      () => 'answered',
      (err: Error) => err.message,
    );
    redis.stop();
    // No socket and a retry timer set: the state ioredis' own disconnect() never ends.
    await waitFor(() => [client.status, blocking.status], (s) => s.every((status) => status === 'reconnecting'), { what: 'both clients to wait between reconnect attempts' });
    client.disconnect();
    blocking.disconnect();
    expect(await Promise.all([endedWithin(client, 5000), endedWithin(blocking, 5000)])).toEqual(['end', 'end']);
    expect(await waitingForJob).toBe('Connection is closed.');
  });
});
