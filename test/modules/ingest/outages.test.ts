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

async function deliver(app: TestApp, body = telnyxEvent('number_order.complete', {})): Promise<{ status: number; retryAfter: string | null; body: any }> {
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
    const down = await deliver(app, telnyxEvent('number_order.complete', {}, { id: randomUUID() }));
    expect(down.status).toBe(503);
    expect(down.retryAfter).toMatch(/^\d+$/);
    expect(down.body.errors[0]).toMatchObject({ code: 'service_unavailable' });
    await pg.start();
    const id = randomUUID();
    const back = await waitFor(() => deliver(app, telnyxEvent('number_order.complete', {}, { id })), (r) => r.status === 200, { what: 'ingest to recover' });
    expect(back.body).toEqual({ status: 'accepted' });
  });
});

describe('Redis unavailable', () => {
  let redis: PrivateRedis;
  let db: TestDatabase;
  let app: TestApp;
  let redisDown = false;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url, relay: true, worker: true, env: { TELNYX_PUBLIC_KEY: signer.publicKey, REDIS_URL: redis.url } });
  });
  afterAll(async () => {
    // A worker closes only once it can reach Redis again.
    if (redisDown) await redis.start();
    await app.close();
    redis.dispose();
    await db.drop();
  });

  it('ingest still answers 200 with Redis down, and the event is processed once Redis returns', async () => {
    redis.stop();
    redisDown = true;
    const id = randomUUID();
    const reply = await deliver(app, telnyxEvent('number_order.complete', {}, { id }));
    expect(reply).toMatchObject({ status: 200, body: { status: 'accepted' } });
    expect(await db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NULL`, [id])).toBe(1);
    await redis.start();
    redisDown = false;
    await waitFor(
      () => db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [id]),
      (n) => n === 1,
      { what: 'the event accepted during the outage to be processed', timeoutMs: 30000 },
    );
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE completed_at IS NOT NULL AND name = 'process-carrier-event'`)).toBe(1);
  });
});
