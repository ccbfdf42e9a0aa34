import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { ApiClient } from '../support/api-client.js';
import { carrierFixture, telnyxReceipt } from '../support/carrier-signing.js';
import { expectVerified, startCluster, type Cluster } from '../support/cluster.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { FakeCarrier } from '../support/fake-carrier.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { waitFor } from '../support/wait.js';

/**
 * Several processes of each role on ONE database and ONE Redis: two apis, two relays, two
 * workers (the built program). A burst of signed Telnyx webhooks, every event delivered three
 * times (the same bytes twice to one api, then re-signed with a later attempt to the other, all at
 * once), inbound SMS and receipts of our own outbound messages; one worker and one relay
 * SIGKILLed mid-burst and NOT restarted: their peers must finish everything, which is the point of
 * running several. Every assertion is a count, in Postgres and at a local customer endpoint.
 */

const INBOUND = 150;
const OUTBOUND = 30;
const COPIES = 3;
const OUR_NUMBER = '+17735550301';
const INBOUND_PAYLOAD = JSON.parse(carrierFixture('telnyx/message.received.json')).data.payload;

interface CarrierEvent {
  id: string;
  /** The body for delivery `attempt` (a carrier's retry changes meta.attempt, hence the signature). */
  body(attempt: number): string;
}

function inboundEvent(index: number): CarrierEvent {
  const id = randomUUID();
  const occurredAt = new Date().toISOString();
  return {
    id,
    body: (attempt) =>
      JSON.stringify({
        data: {
          event_type: 'message.received',
          id,
          occurred_at: occurredAt,
          record_type: 'event',
          payload: { ...INBOUND_PAYLOAD, id: `multi-msg-${index}`, text: `multi ${index}`, to: [{ phone_number: OUR_NUMBER, status: 'webhook_delivered' }] },
        },
        meta: { attempt, delivered_to: 'http://127.0.0.1/webhooks/telnyx' },
      }),
  };
}

function receiptEvent(carrierMessageId: string): CarrierEvent {
  const id = randomUUID();
  const first = JSON.parse(telnyxReceipt(carrierMessageId, 'delivered', { id }));
  return { id, body: (attempt) => JSON.stringify({ ...first, meta: { ...first.meta, attempt } }) };
}

/** Like a carrier: posts one signed delivery, retrying until answered 200; returns the answer's status word. */
async function deliverUntilAnswered(cluster: Cluster, url: string, body: string): Promise<string> {
  const deadline = Date.now() + 60_000;
  for (let attempt = 1; Date.now() < deadline; attempt++) {
    // Signed now: a re-send after a failure is signed again, as a carrier's retry is.
    const res = await fetch(`${url}/webhooks/telnyx`, { method: 'POST', headers: cluster.telnyx.headers(body), body }).catch(() => undefined);
    if (res?.status === 200) return ((await res.json()) as { status: string }).status;
    await new Promise((r) => setTimeout(r, Math.min(100 * attempt, 1000)));
  }
  throw new Error(`a delivery to ${url} was never answered 200`);
}

/**
 * All copies of one event at once: the same bytes twice to one api, a later attempt (re-signed,
 * new body) to the other. Which api gets the pair alternates with the event.
 */
async function deliverCopies(cluster: Cluster, event: CarrierEvent, index: number): Promise<string[]> {
  const [a, b] = index % 2 === 0 ? cluster.urls : [...cluster.urls].reverse();
  const first = event.body(1);
  return Promise.all([deliverUntilAnswered(cluster, a, first), deliverUntilAnswered(cluster, a, first), deliverUntilAnswered(cluster, b, event.body(2))]);
}

describe('several processes of each role: two apis, two relays, two workers on one database and one Redis', () => {
  let db: TestDatabase;
  let carrier: FakeCarrier;
  let receiver: WebhookReceiver;
  let cluster: Cluster;

  beforeAll(async () => {
    db = await createTestDatabase();
    carrier = await new FakeCarrier().start();
    receiver = await startWebhookReceiver();
    cluster = await startCluster(
      db.url,
      TEST_REDIS_URL,
      { ...carrier.env(), QUEUE_PREFIX: `multi_${randomBytes(4).toString('hex')}` },
      { numbers: [OUR_NUMBER], apis: 2, relays: 2, workers: 2, cli: true },
    );
  }, 120_000);
  afterAll(async () => {
    await cluster?.stopAll();
    // No process of the cluster may outlive the file (CI once kept a relay and a worker running).
    const processes = cluster ? [...cluster.apis, ...cluster.relays, ...cluster.workers] : [];
    expect(processes.filter((p) => p.running || (p.pid !== undefined && processExists(p.pid))).map((p) => `${p.role} ${p.pid}`)).toEqual([]);
    await receiver?.close();
    await carrier?.stop();
    await db?.drop();
  });

  it(`${INBOUND} inbound SMS and ${OUTBOUND} receipts, each sent ${COPIES}× across both apis, a worker and a relay SIGKILLed: everything once`, async () => {
    const endpoint = await cluster.customer.post('/v2/webhook_endpoints', { url: `${receiver.url}/hooks` });
    expect(endpoint.status).toBe(201);

    // Outbound messages, half through each api, so the burst can carry their receipts.
    const created = await Promise.all(
      Array.from({ length: OUTBOUND }, (_, i) => {
        const client = new ApiClient(cluster.urls[i % 2], cluster.customer.accountId, cluster.customer.apiKey);
        return client.post('/v2/messages', { from: OUR_NUMBER, to: `+1312555${String(2000 + i)}`, text: `outbound ${i}` });
      }),
    );
    expect(created.map((r) => r.status)).toEqual(Array(OUTBOUND).fill(202));
    const sent = await waitFor(
      () => db.pool.query<{ carrier_message_id: string }>(`SELECT carrier_message_id FROM messages WHERE direction = 'outbound' AND status = 'sent'`).then((r) => r.rows),
      (rows) => rows.length === OUTBOUND,
      { timeoutMs: 30_000, intervalMs: 200, what: `${OUTBOUND} outbound messages sent` },
    );

    const events = [...Array.from({ length: INBOUND }, (_, i) => inboundEvent(i)), ...sent.map((m) => receiptEvent(m.carrier_message_id))];
    // Receipts mixed into the inbound ones, so both kinds are in flight when the processes die.
    events.sort(() => Math.random() - 0.5);
    const killAt = Math.floor(events.length * 0.4);
    let workerKilledAt = Infinity;
    const kills: Promise<void>[] = [];
    const answers: string[][] = new Array(events.length);
    let next = 0;
    let done = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < events.length) {
          const i = next++;
          answers[i] = await deliverCopies(cluster, events[i], i);
          if (++done === killAt) {
            workerKilledAt = Date.now();
            kills.push(cluster.workers[0].kill('SIGKILL'), cluster.relays[0].kill('SIGKILL'));
          }
        }
      }),
    );
    await Promise.all(kills);
    expect([cluster.workers[0].running, cluster.relays[0].running]).toEqual([false, false]);

    // Ingest: exactly one of the three copies of each event was accepted, whichever api it reached.
    expect(answers.map((a) => a.filter((s) => s === 'accepted').length)).toEqual(Array(events.length).fill(1));
    expect(answers.flat().filter((s) => s !== 'accepted' && s !== 'duplicate')).toEqual([]);

    await waitFor(
      async () => ({
        unprocessed: await db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL`),
        delivered: await db.count(`SELECT count(*) FROM messages WHERE direction = 'outbound' AND status = 'delivered'`),
        pending: await db.count(`SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered'`),
        events: await db.count(`SELECT count(*) FROM outbound_events`),
        deliveries: await db.count(`SELECT count(*) FROM webhook_deliveries`),
      }),
      (s) => s.unprocessed === 0 && s.delivered === OUTBOUND && s.pending === 0 && s.events > 0 && s.deliveries === s.events,
      { timeoutMs: 60_000, intervalMs: 250, what: 'every carrier event processed and every customer event delivered' },
    );

    // Postgres: each carrier event stored and processed once, each effect once.
    expect(await db.count(`SELECT count(*) FROM carrier_events`)).toBe(events.length);
    expect(await db.count(`SELECT count(*) FROM carrier_events WHERE error IS NOT NULL`)).toBe(0);
    expect(await db.count(`SELECT count(*) FROM messages WHERE direction = 'inbound'`)).toBe(INBOUND);
    expect(await db.count(`SELECT count(DISTINCT carrier_message_id) FROM messages WHERE direction = 'inbound'`)).toBe(INBOUND);
    expect(await db.count(`SELECT count(*) FROM messages WHERE direction = 'outbound'`)).toBe(OUTBOUND);
    expect(await db.count(`SELECT count(*) FROM message_status_history WHERE status = 'delivered'`)).toBe(OUTBOUND);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE kind = 'sms_inbound_segments'`)).toBe(INBOUND);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE kind = 'sms_outbound_segments'`)).toBe(OUTBOUND);
    const byType = await db.pool.query<{ type: string; n: string; subjects: string }>(
      `SELECT type, count(*) AS n, count(DISTINCT payload->>'id') AS subjects FROM outbound_events GROUP BY type`,
    );
    const types = Object.fromEntries(byType.rows.map((r) => [r.type, [Number(r.n), Number(r.subjects)]]));
    expect(types).toEqual({ 'message.received': [INBOUND, INBOUND], 'message.sent': [OUTBOUND, OUTBOUND], 'message.delivered': [OUTBOUND, OUTBOUND] });
    const customerEvents = INBOUND + 2 * OUTBOUND;
    // One delivery per event (the one endpoint), delivered at its first recorded attempt (the receiver always answers 200).
    expect(await db.count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered' AND attempt_count = 1`)).toBe(customerEvents);
    expect(await db.count(`SELECT count(*) FROM webhook_delivery_attempts`)).toBe(customerEvents);
    // Nothing left owed in the outbox by the dead relay or worker.
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE completed_at IS NULL`)).toBe(0);

    // The customer's endpoint: every event arrived, under its own webhook-id.
    const eventIds = new Set((await db.pool.query<{ id: string }>(`SELECT id FROM outbound_events`)).rows.map((r) => r.id));
    const received = receiver.requests.filter((r) => r.path === '/hooks');
    const ids = new Set(received.map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(customerEvents);
    expect([...ids].filter((id) => !eventIds.has(id))).toEqual([]);
    // At-least-once: an id may arrive twice when the attempt that first sent it was cut off before
    // it could record the 200: its worker was SIGKILLed. Each delivery has exactly one recorded
    // attempt (above); for a repeated id the copies' webhook-timestamp (stamped by the sender as
    // the attempt starts, so free of this process's event-loop lag) shows the unrecorded copy sent
    // no later than the kill's second and the recorded one after the kill, by the surviving
    // worker once the dead one's lock expired (or, for a first attempt the dead worker ran right
    // after its commit, once the row's grace was over and the relay took it). At most as many ids
    // as the dead worker had attempts in flight (WORKER_CONCURRENCY from Redis, 20, plus
    // WORKER_AFTER_COMMIT_JOBS run after commit, 32 in test/support/cluster.ts), each at most twice. Any other repeat is a double delivery.
    const recordedAt = new Map(
      (await db.pool.query<{ event_id: string; at: Date }>(`SELECT d.event_id, a.at FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id`)).rows.map((r) => [r.event_id, r.at.getTime()]),
    );
    const killSecond = Math.floor(workerKilledAt / 1000);
    const repeated = [...ids].filter((id) => receiver.requestsFor(id!).length > 1) as string[];
    const explained = (id: string) => {
      const [unrecorded, recorded, ...more] = receiver.requestsFor(id).map((r) => Number(r.headers['webhook-timestamp'])).sort((x, y) => x - y);
      return more.length === 0 && unrecorded <= killSecond && recordedAt.get(id)! > workerKilledAt && recorded === Math.floor(recordedAt.get(id)! / 1000);
    };
    expect(repeated.length).toBeLessThanOrEqual(20 + 32);
    expect(repeated.filter((id) => !explained(id))).toEqual([]);

    await expectVerified(cluster);
  }, 180_000);
});

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
