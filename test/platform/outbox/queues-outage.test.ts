import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { ProbeJob } from '../../../src/platform/outbox/probe.handler.js';
import { Queues, type RelayedJob } from '../../../src/platform/outbox/queues.js';
import { RedisService } from '../../../src/platform/redis/redis.service.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/services.js';
import { waitFor } from '../../support/wait.js';

describe('a queue first used while Redis is away', () => {
  let redis: PrivateRedis;
  let db: TestDatabase;
  let app: TestApp;
  let redisDown = false;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url, http: false, env: { REDIS_URL: redis.url } });
  });
  afterAll(async () => {
    if (redisDown) await redis.start();
    await app.close();
    redis.dispose();
    await db.drop();
  });

  it('publishes once Redis is back (BullMQ keeps a Queue’s first failed version check for good)', async () => {
    const queues = app.app.get(Queues);
    const shared = app.app.get(RedisService).shared();
    await waitFor(() => shared.status, (s) => s === 'ready', { what: 'the shared connection to connect' });
    redis.stop();
    redisDown = true;
    const job: RelayedJob = { jobId: `probe-${randomUUID()}`, queue: ProbeJob.queue, name: ProbeJob.name };
    // The relay's first publish of the outage makes the Queue, whose version check then fails.
    await expect(queues.publish([job])).rejects.toThrow();
    await redis.start();
    redisDown = false;
    const outcome = () => queues.publish([job]).then(() => 'published', (err: Error) => err.message);
    await waitFor(outcome, (o) => o === 'published', { what: 'a publish to succeed after Redis returned', timeoutMs: 15000 });
    expect(await queues.get(ProbeJob.queue).getJobState(job.jobId)).toBe('waiting');
  });
});
