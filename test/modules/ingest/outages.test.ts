import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { migrate } from '../../../src/platform/database/migrator.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { telnyxEvent, telnyxSigner } from '../../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { databaseUrl } from '../../support/env.js';
import { startPrivatePostgres, startPrivateRedis, type PrivatePostgres, type PrivateRedis } from '../../support/services.js';
import { waitFor } from '../../support/wait.js';

const signer = telnyxSigner();

async function deliver(app: TestApp, body = telnyxEvent('fax.received', {})): Promise<{ status: number; retryAfter: string | null; body: any }> {
  const res = await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
}

describe('Postgres unavailable', () => {
  let pg: PrivatePostgres;
  let app: TestApp;

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    const url = databaseUrl('onceline', pg.baseUrl);
    await migrate(url);
    app = await startTestApp({ databaseUrl: url, env: { TELNYX_PUBLIC_KEY: signer.publicKey } });
  });
  afterAll(async () => {
    await app.close().catch(() => undefined);
    pg.dispose();
  });

  it('answers 503 with Retry-After while the database is down (the carrier retries), and 200 once it is back', async () => {
    expect((await deliver(app)).body).toEqual({ status: 'accepted' });
    pg.stop();
    const down = await deliver(app, telnyxEvent('fax.received', {}, { id: randomUUID() }));
    expect(down.status).toBe(503);
    expect(down.retryAfter).toMatch(/^\d+$/);
    expect(down.body.errors[0]).toMatchObject({ code: 'service_unavailable' });
    await pg.start();
    const id = randomUUID();
    const back = await waitFor(() => deliver(app, telnyxEvent('fax.received', {}, { id })), (r) => r.status === 200, { what: 'ingest to recover' });
    expect(back.body).toEqual({ status: 'accepted' });
  });
});

describe('Redis unavailable', () => {
  let redis: PrivateRedis;
  let db: TestDatabase;
  let viaRedis: TestApp;
  let afterCommit: TestApp;
  let redisDown = false;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    db = await createTestDatabase();
    // No after-commit places: every processing job goes through the relay and Redis.
    viaRedis = await startTestApp({ databaseUrl: db.url, relay: true, worker: true, env: { TELNYX_PUBLIC_KEY: signer.publicKey, REDIS_URL: redis.url, WORKER_AFTER_COMMIT_JOBS: '0' } });
    // The default: the process that stores an event and works its queue processes it right after the commit.
    afterCommit = await startTestApp({ databaseUrl: db.url, worker: true, env: { TELNYX_PUBLIC_KEY: signer.publicKey, REDIS_URL: redis.url, QUEUE_PREFIX: viaRedis.config.QUEUE_PREFIX } });
  });
  afterAll(async () => {
    // A job a worker holds finishes (and so lets the worker close) only once Redis is back.
    if (redisDown) await redis.start();
    await Promise.all([viaRedis?.close(), afterCommit?.close()]);
    redis.dispose();
    await db.drop();
  });

  const processed = (id: string) => db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [id]);

  it('ingest still answers 200 with Redis down; the event is processed once Redis returns, or at once by a process that runs it after the commit', async () => {
    redis.stop();
    redisDown = true;
    const [queued, runHere] = [randomUUID(), randomUUID()];
    expect(await deliver(viaRedis, telnyxEvent('fax.received', {}, { id: queued }))).toMatchObject({ status: 200, body: { status: 'accepted' } });
    expect(await deliver(afterCommit, telnyxEvent('fax.received', {}, { id: runHere }))).toMatchObject({ status: 200, body: { status: 'accepted' } });
    // Run right after its commit, with no Redis in the path.
    await waitFor(() => processed(runHere), (n) => n === 1, { what: 'the event run after commit to be processed while Redis is down' });
    expect(await processed(queued)).toBe(0);
    await redis.start();
    redisDown = false;
    await waitFor(() => processed(queued), (n) => n === 1, { what: 'the event accepted during the outage to be processed', timeoutMs: 30000 });
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE completed_at IS NOT NULL AND name = 'process-carrier-event'`)).toBe(2);
  });
});

describe('A worker process stopping while Redis is down', () => {
  let redis: PrivateRedis;
  let db: TestDatabase;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    db = await createTestDatabase();
  });
  afterAll(async () => {
    redis.dispose();
    await db.drop();
  });

  it('closes: its BullMQ connections, waiting between reconnect attempts, end (taskforcesh/bullmq#4656)', async () => {
    const app = await startTestApp({ databaseUrl: db.url, relay: true, worker: true, env: { TELNYX_PUBLIC_KEY: signer.publicKey, REDIS_URL: redis.url } });
    redis.stop();
    // Refused at once, every connection spends the outage waiting for its next attempt.
    let deadline: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      app.close().then(() => 'closed'),
      new Promise((resolve) => (deadline = setTimeout(resolve, 20000, 'still closing after 20 s'))),
    ]);
    clearTimeout(deadline);
    expect(outcome).toBe('closed');
  });
});
