import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { ProbeJob } from '../../../src/platform/outbox/probe.handler.js';
import { OutboxService } from '../../../src/platform/outbox/outbox.service.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { databaseUrl } from '../../support/env.js';
import { startPrivatePostgres, startPrivateRedis, type PrivatePostgres, type PrivateRedis } from '../../support/services.js';
import { waitFor } from '../../support/wait.js';

const status = async (app: TestApp, path: string) => (await fetch(`${app.url}${path}`)).status;

describe('health and metrics', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url, relay: true, worker: true });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('/health/live and /health/ready answer 200 without an API key when Postgres and Redis answer', async () => {
    const live = await fetch(`${app.url}/health/live`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${app.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } });
  });

  it('/metrics has HTTP latency per route, outbox pending, relay lag, queue depths and job outcomes', async () => {
    await app.app.get(UnitOfWork).run((tx) => app.app.get(OutboxService).enqueue(tx, { job: ProbeJob, data: { label: 'metrics' }, jobId: 'metrics-probe-1' }));
    await waitFor(() => db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = 'metrics-probe-1' AND completed_at IS NOT NULL`), (n) => n === 1, { what: 'the probe job to complete' });
    await fetch(`${app.url}/health/live`);

    const res = await fetch(`${app.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(/^# TYPE onceline_http_request_duration_seconds histogram$/m);
    expect(text).toMatch(/^onceline_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/health\/live",status="200"\} \d+$/m);
    expect(text).toMatch(/^onceline_outbox_pending 0$/m);
    expect(text).toMatch(/^onceline_outbox_oldest_pending_seconds 0$/m);
    expect(text).toMatch(/^onceline_outbox_relay_lag_seconds_count [1-9]\d*$/m);
    expect(text).toMatch(/^onceline_queue_jobs\{queue="system",state="waiting"\} \d+$/m);
    expect(text).toMatch(/^onceline_queue_jobs\{queue="system",state="failed"\} \d+$/m);
    expect(text).toMatch(/^onceline_job_outcomes_total\{queue="system",name="probe",outcome="completed"\} 1$/m);
    expect(text).toMatch(/^onceline_process_resident_memory_bytes \d+/m);
  });
});

describe('readiness follows the services', () => {
  let db: TestDatabase;
  let redis: PrivateRedis;
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await startPrivateRedis();
    app = await startTestApp({ databaseUrl: db.url, env: { REDIS_URL: redis.url } });
  });
  afterAll(async () => {
    await app?.close();
    redis?.dispose();
    await db?.drop();
  });

  it('Redis down: /health/ready is 503 with errors[], live and metrics still answer; back to 200 when Redis returns', async () => {
    expect(await status(app, '/health/ready')).toBe(200);
    redis.stop();
    await waitFor(() => status(app, '/health/ready'), (s) => s === 503, { what: 'readiness to report Redis down' });
    const ready = await fetch(`${app.url}/health/ready`);
    const body: any = await ready.json();
    expect(body.errors[0]).toEqual(expect.objectContaining({ code: 'not_ready' }));
    expect(body.errors[0].detail).toContain('"redis":"unavailable"');
    expect(body.errors[0].detail).toContain('"postgres":"ok"');
    expect(await status(app, '/health/live')).toBe(200);
    const metrics = await fetch(`${app.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^onceline_outbox_pending \d+$/m);

    await redis.start();
    await waitFor(() => status(app, '/health/ready'), (s) => s === 200, { what: 'readiness to recover with Redis' });
  });
});

describe('readiness without Postgres', () => {
  let pgServer: PrivatePostgres;
  let app: TestApp;

  beforeAll(async () => {
    pgServer = await startPrivatePostgres();
    app = await startTestApp({ databaseUrl: databaseUrl('postgres', pgServer.baseUrl) });
  });
  afterAll(async () => {
    await app?.close();
    pgServer?.dispose();
  });

  it('Postgres down: /health/ready is 503, /health/live stays 200', async () => {
    expect(await status(app, '/health/ready')).toBe(200);
    pgServer.stop();
    await waitFor(() => status(app, '/health/ready'), (s) => s === 503, { what: 'readiness to report Postgres down' });
    const body: any = await (await fetch(`${app.url}/health/ready`)).json();
    expect(body.errors[0].detail).toContain('"postgres":"unavailable"');
    expect(await status(app, '/health/live')).toBe(200);
  });
});
