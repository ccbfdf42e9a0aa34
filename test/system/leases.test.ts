import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { carrierFixture } from '../support/carrier-signing.js';
import { startCluster, type Cluster } from '../support/cluster.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { RoleProcess } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const OUR_NUMBER = '+17735550411';
/** Renewed every third of it: 4 s lets a loaded machine's worker stall 2.6 s without losing its lease (at 2 s, a full run beside other work lost it now and then). */
const LEASE_SECONDS = 4;
const INBOUND_PAYLOAD = JSON.parse(carrierFixture('telnyx/message.received.json')).data.payload;

/** A customer endpoint that holds every answer while `holding` (a slow server), then answers 200. */
async function slowEndpoint() {
  const requests: { id: string; at: number }[] = [];
  const held: http.ServerResponse[] = [];
  let holding = true;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push({ id: String(req.headers['webhook-id']), at: Date.now() });
      if (holding) held.push(res);
      else res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    requests,
    answerFromNowOn: () => {
      holding = false;
      for (const res of held.splice(0)) if (!res.destroyed) res.writeHead(200).end('ok');
    },
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/**
 * Leases on work run after commit (issue #27): the worker running a first webhook attempt renews
 * its outbox row's lease while the customer's endpoint keeps it waiting, so no twin run starts;
 * once that worker is SIGKILLed the lease runs out and the relay hands the job to another worker,
 * which delivers it. In effect once: one delivery, delivered, one customer event.
 */
describe('leases: a SIGKILLed worker\'s after-commit run resumes elsewhere', () => {
  let db: TestDatabase;
  let cluster: Cluster;
  let endpoint: Awaited<ReturnType<typeof slowEndpoint>>;
  let spare: RoleProcess | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    endpoint = await slowEndpoint();
    cluster = await startCluster(db.url, TEST_REDIS_URL, { WORKER_AFTER_COMMIT_GRACE_SECONDS: String(LEASE_SECONDS), WEBHOOK_TIMEOUT_MS: '120000' }, { numbers: [OUR_NUMBER], workers: 1 });
    expect((await cluster.customer.post('/v2/webhook_endpoints', { url: endpoint.url, event_types: ['message.received'] })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await spare?.stop();
    await cluster?.stopAll();
    await endpoint?.close();
    await db?.drop();
  });

  it('renewed while the endpoint is slow (no twin), taken over after the kill, delivered once', async () => {
    const body = JSON.stringify({
      data: { event_type: 'message.received', id: randomUUID(), occurred_at: new Date().toISOString(), record_type: 'event', payload: { ...INBOUND_PAYLOAD, id: `lease-msg-${randomUUID()}`, to: [{ phone_number: OUR_NUMBER, status: 'webhook_delivered' }] } },
      meta: { attempt: 1, delivered_to: `${cluster.url}/webhooks/telnyx` },
    });
    expect((await fetch(`${cluster.url}/webhooks/telnyx`, { method: 'POST', headers: cluster.telnyx.headers(body), body })).status).toBe(200);
    await waitFor(() => endpoint.requests.length, (n) => n === 1, { what: 'the first attempt at the endpoint', timeoutMs: 60_000 });
    const attemptJob = `SELECT job_id, relayed_at, redrive_at, completed_at, extract(epoch FROM run_at - created_at)::float8 AS lease_s FROM outbox_jobs WHERE name = 'webhook-delivery-attempt'`;
    // Run after commit by the worker that processed the event, and renewed past several leases.
    const renewed = await waitFor(() => db.pool.query(attemptJob).then((r) => r.rows[0]), (job) => job?.lease_s > 2 * LEASE_SECONDS, { what: 'the lease renewed past two leases', timeoutMs: 30_000 });
    expect(renewed.relayed_at).toBeNull();
    expect(endpoint.requests).toHaveLength(1);

    await cluster.workers[0].kill('SIGKILL');
    endpoint.answerFromNowOn();
    spare = new RoleProcess('worker', cluster.env).start();
    const again = await waitFor(() => endpoint.requests.length, (n) => n >= 2, { what: 'the attempt resumed by another worker', timeoutMs: 60_000 });
    expect(again).toBe(2);
    expect(endpoint.requests[1].id).toBe(endpoint.requests[0].id);
    await waitFor(() => db.count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'`), (n) => n === 1, { what: 'the delivery delivered', timeoutMs: 30_000 });
    const job = (await db.pool.query(attemptJob)).rows[0];
    expect(job.completed_at).not.toBeNull();
    expect(job.redrive_at).not.toBeNull(); // taken by the relay once the lease ran out
    expect(await db.count(`SELECT count(*) FROM webhook_deliveries`)).toBe(1);
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'message.received'`)).toBe(1);
  }, 180_000);
});
