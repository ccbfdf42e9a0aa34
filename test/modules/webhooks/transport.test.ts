import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { JobWorkers } from '../../../src/platform/outbox/job-workers.js';
import { Queues } from '../../../src/platform/outbox/queues.js';
import { AddressPolicy } from '../../../src/modules/webhooks/address-policy.js';
import { CustomerEvents } from '../../../src/modules/webhooks/customer-events.js';
import { EXCERPT_CHARS } from '../../../src/modules/webhooks/delivery-attempt.handler.js';
import { attemptJobId } from '../../../src/modules/webhooks/delivery-scheduler.js';
import { EndpointAgents, MAX_RESPONSE_BYTES, postWebhook } from '../../../src/modules/webhooks/webhook-http.js';
import { ApiClient } from '../../support/api-client.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/services.js';
import { waitFor } from '../../support/wait.js';
import { startWebhookReceiver, type ScriptedResponse, type WebhookReceiver } from '../../support/webhook-receiver.js';

/**
 * The customer-facing HTTP transport of webhook delivery, against real local servers: Retry-After,
 * timeouts, large bodies, redirects, IPv6 loopback, and Redis losing a relayed attempt job.
 */

const MIB = 1024 * 1024;

interface Delivery {
  id: string;
  status: string;
  round: number;
  attempt_count: number;
  next_attempt_at: Date | null;
}

interface Attempt {
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  response_excerpt: string | null;
  at: Date;
}

/** One app on its own database, with the helpers every block below needs. */
async function startWebhookApp(env: Record<string, string>, roles = { relay: true, worker: true }) {
  const db = await createTestDatabase();
  const app = await startTestApp({ databaseUrl: db.url, ...roles, env });
  const client = await ApiClient.forNewAccount(app, 'transport');
  let current: string | undefined;
  return {
    db,
    app,
    client,
    /** The account's only endpoint from now on: the previous test's one is deleted (its deliveries fail). */
    async endpoint(url: string): Promise<{ id: string; secret: string }> {
      if (current) expect((await client.request('DELETE', `/v2/webhook_endpoints/${current}`)).status).toBe(200);
      const res = await client.post('/v2/webhook_endpoints', { url });
      expect(res.status).toBe(201);
      current = res.body.data.id;
      return res.body.data;
    },
    /** Commits one customer event; every endpoint of the account gets a delivery. */
    emit(data: object = { id: 'msg_transport' }): Promise<string> {
      return app.app.get(UnitOfWork).run((tx) => app.app.get(CustomerEvents).emit(tx, client.accountId, 'message.delivered', data));
    },
    delivery(eventId: string): Promise<Delivery | undefined> {
      return db.pool.query(`SELECT * FROM webhook_deliveries WHERE event_id = $1`, [eventId]).then((r) => r.rows[0]);
    },
    attempts(deliveryId: string): Promise<Attempt[]> {
      return db.pool.query(`SELECT * FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY attempt`, [deliveryId]).then((r) => r.rows);
    },
    /** The outbox row of attempt `attempt` (round 1) of a delivery. */
    job(deliveryId: string, attempt: number): Promise<{ run_at: Date; relayed_at: Date | null; completed_at: Date | null; redrives: number } | undefined> {
      return db.pool.query(`SELECT * FROM outbox_jobs WHERE job_id = $1`, [attemptJobId({ id: deliveryId, round: 1, attempt })]).then((r) => r.rows[0]);
    },
    waitForStatus(eventId: string, status: string, what = status): Promise<Delivery> {
      return waitFor(() => this.delivery(eventId), (d) => d?.status === status, { what: `delivery ${what}` }) as Promise<Delivery>;
    },
    async close() {
      await app.close();
      await db.drop();
    },
  };
}
type WebhookApp = Awaited<ReturnType<typeof startWebhookApp>>;

interface RawServer {
  url: string;
  /** Requests whose headers arrived, in order. */
  requests: http.IncomingMessage[];
  close(): Promise<void>;
}

/** A bare HTTP server for behaviours the scripted receiver cannot play (never answering, half a body). */
async function startRawServer(host: string, handler: (req: http.IncomingMessage, res: http.ServerResponse, index: number) => void): Promise<RawServer> {
  const requests: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req);
    handler(req, res, requests.length - 1);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Stored delay between an attempt and the next one it scheduled, with the slack the call itself took. */
function storedDelay(attempt: Attempt, next: Date): { delayMs: number; slackMs: number } {
  return { delayMs: next.getTime() - attempt.at.getTime(), slackMs: attempt.duration_ms + 1500 };
}

describe('Retry-After on 429 and 503: the stored next attempt is clamped to [scheduled, 2 x scheduled]', () => {
  // Second attempt scheduled 60 s ± 20% later: d in [48 s, 72 s], so 2d in [96 s, 144 s]. A
  // Retry-After of 90 s lies inside [d, 2d] whatever the jitter drew, and is honoured exactly.
  const SCHEDULE = '0,60,60';
  let w: WebhookApp;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    w = await startWebhookApp({ WEBHOOK_RETRY_SCHEDULE: SCHEDULE });
  });
  afterAll(async () => {
    await w.close();
    for (const r of receivers) await r.close();
  });

  /** A receiver of its own answering `answer` forever; returns the first attempt and the schedule it left. */
  async function firstAttemptAnswered(answer: ScriptedResponse) {
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    receiver.fallback = answer;
    await w.endpoint(`${receiver.url}/limited`);
    const eventId = await w.emit();
    const delivery = await waitFor(() => w.delivery(eventId), (d) => d?.attempt_count === 1, { what: 'first attempt recorded' });
    const [attempt] = await w.attempts(delivery!.id);
    const job = await w.job(delivery!.id, 2);
    expect(delivery!.status).toBe('pending');
    expect(job).toBeDefined();
    // The delivery and its outbox job carry the same schedule.
    expect(job!.run_at.getTime()).toBe(delivery!.next_attempt_at!.getTime());
    expect(receiver.requests).toHaveLength(1);
    return { attempt, ...storedDelay(attempt, job!.run_at) };
  }

  it('429 with Retry-After inside the range: honoured exactly (90 s)', async () => {
    const { attempt, delayMs, slackMs } = await firstAttemptAnswered({ status: 429, headers: { 'retry-after': '90' } });
    expect(attempt).toMatchObject({ status_code: 429, error: 'HTTP 429' });
    expect(delayMs).toBeGreaterThanOrEqual(90_000);
    expect(delayMs).toBeLessThanOrEqual(90_000 + slackMs);
  });

  it('429 with Retry-After of an hour: capped at twice the scheduled delay', async () => {
    const { delayMs, slackMs } = await firstAttemptAnswered({ status: 429, headers: { 'retry-after': '3600' } });
    expect(delayMs).toBeGreaterThanOrEqual(96_000);
    expect(delayMs).toBeLessThanOrEqual(144_000 + slackMs);
  });

  it('503 with Retry-After of 1 s: not sooner than the scheduled delay', async () => {
    const { attempt, delayMs, slackMs } = await firstAttemptAnswered({ status: 503, headers: { 'retry-after': '1' } });
    expect(attempt).toMatchObject({ status_code: 503, error: 'HTTP 503' });
    expect(delayMs).toBeGreaterThanOrEqual(48_000);
    expect(delayMs).toBeLessThanOrEqual(72_000 + slackMs);
  });

  it('503 with Retry-After as an HTTP date 90 s ahead: honoured (to the second the date carries)', async () => {
    const asked = new Date(Date.now() + 90_000);
    const { delayMs, slackMs } = await firstAttemptAnswered({ status: 503, headers: { 'retry-after': asked.toUTCString() } });
    // The date (whole seconds) was written before the attempt: it asks for a little less than 90 s.
    expect(delayMs).toBeGreaterThanOrEqual(85_000);
    expect(delayMs).toBeLessThanOrEqual(90_000 + slackMs);
  });

  it('Retry-After on any other status (500) is ignored: the schedule alone decides', async () => {
    const { delayMs, slackMs } = await firstAttemptAnswered({ status: 500, headers: { 'retry-after': '3600' } });
    expect(delayMs).toBeGreaterThanOrEqual(48_000);
    expect(delayMs).toBeLessThanOrEqual(72_000 + slackMs);
  });
});

describe('delivery transport: timeout, large bodies, redirects, IPv6 loopback', () => {
  const TIMEOUT_MS = 1000;
  let w: WebhookApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    w = await startWebhookApp({ WEBHOOK_RETRY_SCHEDULE: '0,1,1', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128' });
  });
  afterAll(async () => {
    await w.close();
    await receiver.close();
  });

  it('a receiver that never answers: the attempt is recorded as a timeout and retried', async () => {
    // The first request is left hanging (its socket stays open); the retry is answered 200.
    const server = await startRawServer('127.0.0.1', (_req, res, index) => {
      if (index > 0) res.end('ok');
    });
    try {
      await w.endpoint(`${server.url}/slow`);
      const eventId = await w.emit();
      const delivery = await w.waitForStatus(eventId, 'delivered');
      const attempts = await w.attempts(delivery.id);
      expect(attempts.map((a) => a.status_code)).toEqual([null, 200]);
      expect(attempts[0].error).toBe(`timed out after ${TIMEOUT_MS} ms`);
      expect(attempts[1].error).toBeNull();
      expect(server.requests).toHaveLength(2);
      expect(server.requests.map((r) => r.headers['webhook-id'])).toEqual([eventId, eventId]);
    } finally {
      await server.close();
    }
  });

  it(`a 200 with a 1 MiB body: delivered, and the stored excerpt is cut to ${EXCERPT_CHARS} characters`, async () => {
    receiver.script({ status: 200, body: 'x'.repeat(MIB) });
    await w.endpoint(`${receiver.url}/big`);
    const eventId = await w.emit();
    const delivery = await w.waitForStatus(eventId, 'delivered');
    const [attempt, ...more] = await w.attempts(delivery.id);
    expect(more).toHaveLength(0);
    expect(attempt.status_code).toBe(200);
    expect(attempt.response_excerpt).toBe('x'.repeat(EXCERPT_CHARS));
  });

  it('a 200 whose body holds a NUL byte (text PostgreSQL cannot store): delivered with one request, the NUL kept visible in the excerpt as U+FFFD', async () => {
    receiver.script({ status: 200, body: 'ok\u0000done' });
    await w.endpoint(`${receiver.url}/nul`);
    const eventId = await w.emit();
    const delivery = await w.waitForStatus(eventId, 'delivered');
    const [attempt, ...more] = await w.attempts(delivery.id);
    expect(more).toHaveLength(0);
    expect(attempt.response_excerpt).toBe('ok\uFFFDdone');
    expect(receiver.requestsFor(eventId)).toHaveLength(1);
  });

  it(`the client stops reading at ${MAX_RESPONSE_BYTES} bytes and hangs up without waiting for the rest of the body`, async () => {
    // Announces 1 MiB, sends 80 KiB, then sends nothing more until the client goes away. A client
    // that waited for the whole body would only return at its (here two minutes) deadline, after jest's.
    let bytesSent = 0;
    let finishedSending: boolean | undefined;
    const server = await startRawServer('127.0.0.1', (_req, res) => {
      res.writeHead(200, { 'content-length': String(MIB) });
      const part = Buffer.alloc(80 * 1024, 'y');
      bytesSent = part.length;
      res.write(part);
      res.on('close', () => (finishedSending = res.writableFinished));
    });
    try {
      const url = new URL(`${server.url}/partial`);
      const result = await postWebhook({ url, address: { address: '127.0.0.1', family: 4 }, headers: {}, body: '{}', timeoutMs: 120_000 });
      expect(result).toMatchObject({ statusCode: 200, error: undefined });
      expect(Buffer.byteLength(result.body)).toBe(MAX_RESPONSE_BYTES);
      await waitFor(() => finishedSending, (f) => f !== undefined, { what: 'the client to close the connection' });
      expect(finishedSending).toBe(false);
      expect(bytesSent).toBeLessThan(MIB);
    } finally {
      await server.close();
    }
  });

  it('attempts to one endpoint share a kept connection per vetted address; a kept one the server dropped is retried once on a new one', async () => {
    const sockets = new Set<unknown>();
    const server = await startRawServer('127.0.0.1', (req, res, index) => {
      const reused = sockets.has(req.socket);
      sockets.add(req.socket);
      // the fourth request (on the kept connection) finds it closed under it, before any answer
      if (index === 3 && reused) return void req.socket.destroy();
      res.writeHead(200).end('ok');
    });
    const agents = new EndpointAgents();
    try {
      const url = new URL(`${server.url}/kept`);
      const address = { address: '127.0.0.1', family: 4 as const };
      const post = () => postWebhook({ url, address, headers: {}, body: '{}', timeoutMs: 10_000 }, agents.for(url, address));
      for (let i = 0; i < 3; i++) expect(await post()).toMatchObject({ statusCode: 200, error: undefined });
      expect(sockets.size).toBe(1);
      expect(await post()).toMatchObject({ statusCode: 200, error: undefined });
      expect(server.requests).toHaveLength(5);
      expect(sockets.size).toBe(2);
      // another vetted address is another agent: a socket never crosses addresses
      expect(agents.for(url, { address: '127.0.0.2', family: 4 })).not.toBe(agents.for(url, address));
    } finally {
      agents.destroy();
      await server.close();
    }
  });

  it('301 and 302 are not followed: each is a failed attempt, retried per schedule; the Location gets no request', async () => {
    receiver.script(
      { status: 301, headers: { location: `${receiver.url}/elsewhere` } },
      { status: 302, headers: { location: '/elsewhere' } },
    );
    await w.endpoint(`${receiver.url}/moved`);
    const eventId = await w.emit();
    const delivery = await w.waitForStatus(eventId, 'delivered');
    const attempts = await w.attempts(delivery.id);
    expect(attempts.map((a) => [a.status_code, a.error])).toEqual([[301, 'HTTP 301'], [302, 'HTTP 302'], [200, null]]);
    expect(receiver.requests.filter((r) => r.path === '/elsewhere')).toHaveLength(0);
    expect(receiver.requestsFor(eventId).map((r) => r.path)).toEqual(['/moved', '/moved', '/moved']);
    // Each retry was scheduled by the failure before it, on the schedule (1 s ± 20%).
    for (const n of [2, 3]) {
      const job = await w.job(delivery.id, n);
      const { delayMs, slackMs } = storedDelay(attempts[n - 2], job!.run_at);
      expect(delayMs).toBeGreaterThanOrEqual(800);
      expect(delayMs).toBeLessThanOrEqual(1200 + slackMs);
    }
  });

  it('[::1] is reached when WEBHOOK_ALLOWED_CIDRS includes ::1/128 (and refused when it does not)', async () => {
    let server: RawServer | undefined;
    const received: Array<{ from?: string; headers: Record<string, string>; body: string }> = [];
    try {
      server = await startRawServer('::1', (req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
          received.push({ from: req.socket.remoteAddress, headers, body: Buffer.concat(chunks).toString('utf8') });
          res.end('ok');
        });
      });
    } catch (err) {
      // No IPv6 loopback on this machine: only the refusal path can be shown.
      expect((err as { code?: string }).code).toMatch(/EADDRNOTAVAIL|EAFNOSUPPORT/);
    }
    // Without ::1/128 in the allowlist the same address is refused before any connection.
    await expect(new AddressPolicy('127.0.0.0/8').vet('[::1]')).rejects.toThrow(/loopback range ::1\/128 and not in WEBHOOK_ALLOWED_CIDRS/);
    if (!server) return;
    try {
      const ep = await w.endpoint(`${server.url}/v6`);
      const eventId = await w.emit({ id: 'msg_v6' });
      const delivery = await w.waitForStatus(eventId, 'delivered');
      expect(await w.attempts(delivery.id)).toHaveLength(1);
      expect(received).toHaveLength(1);
      expect(received[0].from).toBe('::1');
      expect(received[0].headers['webhook-id']).toBe(eventId);
      expect(new Webhook(ep.secret).verify(received[0].body, received[0].headers)).toMatchObject({ data: { id: 'msg_v6' } });
    } finally {
      await server.close();
    }
  });
});

describe('Redis loses a relayed delivery job before any worker runs it', () => {
  let redis: PrivateRedis;
  let w: WebhookApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    receiver = await startWebhookReceiver();
    // Relay only: no worker takes the job before Redis is flushed.
    w = await startWebhookApp(
      { REDIS_URL: redis.url, OUTBOX_REDRIVE_AFTER_SECONDS: '1', WEBHOOK_RETRY_SCHEDULE: '0,1,1' },
      { relay: true, worker: false },
    );
  });
  afterAll(async () => {
    await w.close();
    await receiver.close();
    redis.dispose();
  });

  it('FLUSHALL after the relay: recovery re-drives the attempt; one request per attempt, same webhook-id, delivered once', async () => {
    // The first attempt fails, so the retry job also has to travel through the recovered queue.
    receiver.script({ status: 500, body: 'not yet' });
    const ep = await w.endpoint(`${receiver.url}/flushed`);
    const eventId = await w.emit();
    const { id: deliveryId } = (await w.delivery(eventId))!;
    await waitFor(() => w.job(deliveryId, 1), (j) => Boolean(j?.relayed_at), { what: 'the first attempt job relayed' });
    const queue = w.app.app.get(Queues).all().find((q) => q.name === 'webhooks')!;
    expect(await queue.getJobCountByTypes('waiting', 'delayed', 'prioritized')).toBe(1);

    const { Redis } = await import('ioredis');
    const admin = new Redis(redis.url);
    await admin.flushall();
    admin.disconnect();
    expect(await queue.getJobCountByTypes('waiting', 'delayed', 'prioritized')).toBe(0);

    w.app.app.get(JobWorkers).start();
    const delivery = await w.waitForStatus(eventId, 'delivered');
    expect(delivery.attempt_count).toBe(2);
    const attempts = await w.attempts(deliveryId);
    expect(attempts.map((a) => a.status_code)).toEqual([500, 200]);
    const requests = receiver.requestsFor(eventId);
    expect(requests).toHaveLength(attempts.length);
    for (const r of requests) expect(() => new Webhook(ep.secret).verify(r.body, r.headers)).not.toThrow();
    const first = await w.job(deliveryId, 1);
    expect(first!.redrives).toBeGreaterThanOrEqual(1);
    // Both jobs are complete in Postgres: recovery will never publish either again.
    expect(first!.completed_at).not.toBeNull();
    await waitFor(() => w.job(deliveryId, 2), (j) => Boolean(j?.completed_at), { what: 'the retry job completed' });
    expect(receiver.requests).toHaveLength(2);
  });
});
