import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { carrierFixture, telnyxReceipt } from '../support/carrier-signing.js';
import { clusterReport, expectVerified, startCluster, type Cluster } from '../support/cluster.js';
import { RoleProcess } from '../support/processes.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { startCarrierCluster, type CarrierCluster } from '../support/carrier-cluster.js';
import { startPrivatePostgres, startPrivateRedis, type PrivatePostgres, type PrivateRedis } from '../support/services.js';
import { waitFor } from '../support/wait.js';

/**
 * Chaos suite: the built program as real processes (api, relay, workers), a carrier-like client
 * that retries until it gets a 200, and faults injected mid-burst. Every assertion is a count.
 */

const BURST = 150;
const OUR_NUMBER = '+17735550002';
const INBOUND_PAYLOAD = JSON.parse(carrierFixture('telnyx/message.received.json')).data.payload;

/** Like a carrier: delivers one signed inbound SMS webhook, retrying until it is answered 200. */
async function deliverUntilAccepted(cluster: Cluster, index: number, statuses: number[]): Promise<void> {
  const eventId = randomUUID();
  const deadline = Date.now() + 90_000;
  for (let attempt = 1; Date.now() < deadline; attempt++) {
    const body = JSON.stringify({
      data: {
        event_type: 'message.received',
        id: eventId,
        occurred_at: new Date().toISOString(),
        record_type: 'event',
        payload: { ...INBOUND_PAYLOAD, id: `chaos-msg-${index}`, text: `burst ${index}`, to: [{ phone_number: OUR_NUMBER, status: 'webhook_delivered' }] },
      },
      meta: { attempt, delivered_to: `${cluster.url}/webhooks/telnyx` },
    });
    const status = await fetch(`${cluster.url}/webhooks/telnyx`, { method: 'POST', headers: cluster.telnyx.headers(body), body }).then(
      (r) => r.status,
      () => 0,
    );
    statuses.push(status);
    if (status === 200) return;
    await new Promise((r) => setTimeout(r, Math.min(100 * attempt, 1000)));
  }
  throw new Error(`inbound ${index} never accepted`);
}

/** Sends the burst with bounded concurrency, calling `fault` once when `faultAt` deliveries are in. */
async function burst(cluster: Cluster, faults: { at: number; run: () => Promise<void> }[]): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  let done = 0;
  const pendingFaults = [...faults].sort((a, b) => a.at - b.at);
  const faultRuns: Promise<void>[] = [];
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (next < BURST) {
        const i = next++;
        await deliverUntilAccepted(cluster, i, statuses);
        done++;
        while (pendingFaults.length && done >= pendingFaults[0].at) faultRuns.push(pendingFaults.shift()!.run());
      }
    }),
  );
  await Promise.all(faultRuns);
  return statuses;
}

/** A test that waits for the burst (up to 2 min) is given longer, so a stall reports its counts, not jest's timeout. */
const WAIT_TEST_MS = 180_000;

async function expectExactlyOnce(db: { count(sql: string, p?: unknown[]): Promise<number> }): Promise<void> {
  // The counts themselves, so a wait that times out says which of them stalled.
  const progress = async () => ({
    inbound: await db.count(`SELECT count(*) FROM messages WHERE direction = 'inbound'`),
    unprocessed: await db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL`),
    received: await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'message.received'`),
    // Why a stall stalled: events tried and failed, and the processing jobs still without an outcome.
    withError: await db.count(`SELECT count(*) FROM carrier_events WHERE error IS NOT NULL`),
    jobsOpen: await db.count(`SELECT count(*) FROM outbox_jobs WHERE completed_at IS NULL AND failed_at IS NULL`),
  });
  await waitFor(progress, (p) => p.inbound === BURST && p.unprocessed === 0 && p.received === BURST, {
    timeoutMs: 120_000,
    intervalMs: 250,
    what: `${BURST} inbound messages processed`,
  });
  expect(await db.count(`SELECT count(*) FROM carrier_events`)).toBe(BURST);
  expect(await db.count(`SELECT count(*) FROM messages WHERE direction = 'inbound'`)).toBe(BURST);
  expect(await db.count(`SELECT count(DISTINCT carrier_message_id) FROM messages WHERE direction = 'inbound'`)).toBe(BURST);
  expect(await db.count(`SELECT count(*) FROM usage_records WHERE kind = 'sms_inbound_segments'`)).toBe(BURST);
  expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'message.received'`)).toBe(BURST);
  expect(await db.count(`SELECT count(DISTINCT payload->>'id') FROM outbound_events WHERE type = 'message.received'`)).toBe(BURST);
  expect(await db.count(`SELECT count(*) FROM carrier_events WHERE error IS NOT NULL`)).toBe(0);
}


describe('chaos: SIGKILL of workers and the relay mid-burst', () => {
  let db: TestDatabase;
  let cluster: Cluster;

  beforeAll(async () => {
    db = await createTestDatabase();
    cluster = await startCluster(db.url, TEST_REDIS_URL, {}, { numbers: [OUR_NUMBER], cli: true });
  });
  afterAll(async () => {
    await cluster?.stopAll();
    await db.drop();
  });

  it(`${BURST} inbound messages, processes killed at random moments: ${BURST} messages, usage rows and customer events`, async () => {
    const killAndRestart = (p: RoleProcess) => () => p.restart();
    const at = () => Math.floor(Math.random() * (BURST - 20)) + 10;
    await burst(cluster, [
      { at: at(), run: killAndRestart(cluster.workers[0]) },
      { at: at(), run: killAndRestart(cluster.relay) },
      { at: at(), run: killAndRestart(cluster.workers[1]) },
      { at: at(), run: killAndRestart(cluster.workers[0]) },
      { at: at(), run: killAndRestart(cluster.relay) },
    ]);
    expect(cluster.workers[0].starts + cluster.workers[1].starts + cluster.relay.starts).toBe(8);
    await expectExactlyOnce(db);
    await expectVerified(cluster);
  }, WAIT_TEST_MS);
});

describe('chaos: Redis killed and restarted empty mid-burst', () => {
  let db: TestDatabase;
  let redis: PrivateRedis;
  let cluster: Cluster;

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await startPrivateRedis();
    cluster = await startCluster(db.url, redis.url, {}, { numbers: [OUR_NUMBER], cli: true });
  });
  afterAll(async () => {
    await cluster?.stopAll();
    redis?.dispose();
    await db.drop();
  });

  it('nothing is lost and nothing doubles; ingest keeps answering 200 while Redis is away', async () => {
    const statuses = await burst(cluster, [
      {
        at: 50,
        run: async () => {
          redis.stop();
          await new Promise((r) => setTimeout(r, 1500)); // the burst goes on against a Redis-less system
          await redis.start();
        },
      },
    ]);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    await expectExactlyOnce(db);
    await expectVerified(cluster);
  }, WAIT_TEST_MS);
});

describe('chaos: Postgres stopped mid-burst', () => {
  let pgServer: PrivatePostgres;
  let cluster: Cluster;
  let counter: { count(sql: string, p?: unknown[]): Promise<number> };

  beforeAll(async () => {
    pgServer = await startPrivatePostgres();
    const url = new URL(pgServer.baseUrl);
    url.pathname = '/onceline_chaos';
    cluster = await startCluster(url.toString(), TEST_REDIS_URL, {}, { numbers: [OUR_NUMBER], cli: true });
    const pg = (await import('pg')).default;
    counter = {
      async count(sql, params = []) {
        const client = new pg.Client({ connectionString: url.toString() });
        await client.connect();
        try {
          const { rows } = await client.query(sql, params);
          return Number(Object.values(rows[0])[0]);
        } finally {
          await client.end();
        }
      },
    };
  });
  afterAll(async () => {
    await cluster?.stopAll();
    pgServer?.dispose();
  });

  it('ingest answers 503 while it is down, the carrier retries, and nothing is lost or doubled', async () => {
    const statuses = await burst(cluster, [
      {
        at: 50,
        run: async () => {
          pgServer.stop();
          await waitFor(() => fetch(`${cluster.url}/health/ready`).then((r) => r.status), (s) => s === 503, { what: 'readiness to report Postgres down' });
          await new Promise((r) => setTimeout(r, 1500));
          await pgServer.start();
        },
      },
    ]);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    await expectExactlyOnce(counter).catch((err: Error) => {
      throw new Error(`${err.message}\n${clusterReport(cluster)}`);
    });
    await expectVerified(cluster);
  }, WAIT_TEST_MS);
});

describe('chaos: 50 concurrent duplicates of one receipt', () => {
  let started: CarrierCluster;
  let db: TestDatabase;
  let cluster: Cluster;

  beforeAll(async () => {
    started = await startCarrierCluster({}, { numbers: [OUR_NUMBER], cli: true });
    ({ db, cluster } = started);
  });
  afterAll(() => started?.stop());

  it('25 copies and 25 re-signed copies at once: one delivered transition, one message.delivered', async () => {
    const { body } = await cluster.customer.post('/v2/messages', { from: OUR_NUMBER, to: '+13125550009', text: 'one receipt, fifty times' });
    const sent = await waitFor(() => cluster.customer.get(`/v2/messages/${body.data.id}`), (r) => r.body.data.status === 'sent', { what: 'the message to be sent' });
    const carrierId = sent.body.data.carrier_message_id;
    const original = telnyxReceipt(carrierId, 'delivered');
    const copies = Array.from({ length: 50 }, (_, i) => (i < 25 ? JSON.stringify({ ...JSON.parse(original), meta: { attempt: i + 1 } }) : telnyxReceipt(carrierId, 'delivered')));
    const answers = await Promise.all(copies.map((b) => fetch(`${cluster.url}/webhooks/telnyx`, { method: 'POST', headers: cluster.telnyx.headers(b), body: b }).then((r) => r.json() as Promise<{ status: string }>)));
    expect(answers.filter((a) => a.status === 'accepted')).toHaveLength(26);
    expect(answers.filter((a) => a.status === 'duplicate')).toHaveLength(24);
    await waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL`), (c) => c === 0, { what: 'all receipts processed' });
    expect(await db.count(`SELECT count(*) FROM message_status_history WHERE message_id = $1 AND status = 'delivered'`, [body.data.id])).toBe(1);
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'message.delivered'`)).toBe(1);
    expect(await db.count(`SELECT count(*) FROM usage_records`)).toBe(1);
    await expectVerified(cluster);
  });
});
