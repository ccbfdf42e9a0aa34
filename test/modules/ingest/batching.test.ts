import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { startTestApp, type TestApp } from '../../support/app.js';
import { telnyxEvent, telnyxFixture, telnyxSigner } from '../../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { waitFor } from '../../support/wait.js';

const signer = telnyxSigner();
const GATE_LOCK = 4242;

interface Reply {
  status: number;
  body: any;
  retryAfter: string | null;
  /** Rows with this delivery's event id, counted the moment its answer arrived. */
  rowsAtAnswer: number;
}

/**
 * Group commit of carrier webhooks, made deterministic: one batch at a time
 * (INGEST_BATCH_CONCURRENCY=1), and a test trigger that holds a batch holding a `hold-` event on
 * an advisory lock this test owns. While that batch waits, the deliveries sent next queue up and
 * must all go into the following transaction. A `poison-` event makes its whole batch fail; a
 * `toolong-` or `toodeep-` event fails it as Postgres does for that row's data (SQLSTATE class 54).
 */
describe('ingest group commit', () => {
  let db: TestDatabase;
  let app: TestApp;
  let gate: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.pool.query(`
      CREATE FUNCTION test_ingest_gate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.carrier_event_id LIKE 'hold-%' THEN PERFORM pg_advisory_xact_lock(${GATE_LOCK}); END IF;
        IF NEW.carrier_event_id LIKE 'poison-%' THEN RAISE EXCEPTION 'poisoned batch' USING ERRCODE = 'XX000'; END IF;
        -- What Postgres answers for a key past its index's limit (a 4,000-character id) and for
        -- JSON nested past the stack depth: this row's data, not the batch's.
        IF NEW.carrier_event_id LIKE 'baddata-%' THEN RAISE EXCEPTION 'unsupported Unicode escape sequence' USING ERRCODE = '22P05'; END IF;
        IF NEW.carrier_event_id LIKE 'toolong-%' THEN RAISE EXCEPTION 'index row size exceeds maximum' USING ERRCODE = '54000'; END IF;
        IF NEW.carrier_event_id LIKE 'toodeep-%' THEN RAISE EXCEPTION 'stack depth limit exceeded' USING ERRCODE = '54001'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_ingest_gate BEFORE INSERT ON carrier_events FOR EACH ROW EXECUTE FUNCTION test_ingest_gate();
    `);
    gate = new pg.Client({ connectionString: db.url });
    await gate.connect();
    app = await startTestApp({ databaseUrl: db.url, env: { TELNYX_PUBLIC_KEY: signer.publicKey, INGEST_BATCH_CONCURRENCY: '1' } });
  });
  afterAll(async () => {
    await app.close();
    await gate.end();
    await db.drop();
  });

  async function post(body: string, to: TestApp = app): Promise<Reply> {
    const id = JSON.parse(body).data.id;
    const res = await fetch(`${to.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body });
    const rowsAtAnswer = await db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1`, [id]);
    return { status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after'), rowsAtAnswer };
  }

  async function metric(name: string, of: TestApp = app): Promise<number> {
    const text = await (await fetch(`${of.url}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  }
  const waitingDeliveries = (of: TestApp = app) => metric('onceline_ingest_waiting_deliveries', of);

  /**
   * Holds a batch that stores a `hold-` event on the gate; resolves once it waits there, with its
   * reply to come (wrapped: an async function's returned promise would be awaited).
   */
  async function holdABatch(to: TestApp = app): Promise<{ held: Promise<Reply> }> {
    await gate.query(`SELECT pg_advisory_lock($1)`, [GATE_LOCK]);
    const held = post(telnyxFixture('message.sent.json', { id: `hold-${randomUUID()}` }), to);
    await waitFor(() => db.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`, [GATE_LOCK]), (n) => n === 1, { what: 'the held batch to wait on the gate' });
    return { held };
  }

  /**
   * Sends `bodies` while a held batch occupies the only slot, waits until all of them are queued
   * in the app, then lets the held batch finish: the queued ones form the next batch together.
   */
  async function sendAsOneBatch(bodies: string[]): Promise<Reply[]> {
    const { held } = await holdABatch();
    const replies = Promise.all(bodies.map((body) => post(body)));
    await waitFor(waitingDeliveries, (n) => n === bodies.length, { what: `${bodies.length} deliveries queued behind the held batch` });
    await gate.query(`SELECT pg_advisory_unlock($1)`, [GATE_LOCK]);
    expect((await held).status).toBe(200);
    return replies;
  }

  const xminsOf = async (table: 'carrier_events' | 'outbox_jobs', column: string, values: string[]) =>
    (await db.pool.query(`SELECT DISTINCT xmin::text AS xmin FROM ${table} WHERE ${column} = ANY($1)`, [values])).rows.map((r) => r.xmin);

  it('deliveries that arrive while a batch runs share the next transaction, each answered after its commit', async () => {
    const ids = Array.from({ length: 20 }, () => randomUUID());
    const bodies = [...ids.map((id) => telnyxFixture('message.finalized.delivered.json', { id })), telnyxFixture('message.finalized.delivered.json', { id: ids[3], attempt: 2 })];
    const replies = await sendAsOneBatch(bodies);

    expect(replies.map((r) => r.status)).toEqual(Array(21).fill(200));
    const statuses = replies.map((r) => r.body.status);
    expect(statuses.filter((s) => s === 'accepted')).toHaveLength(20);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(1);
    // Every answer came after the commit that holds its row: the row was there when it arrived.
    expect(replies.map((r) => r.rowsAtAnswer)).toEqual(Array(21).fill(1));
    // One transaction wrote all 20 rows and their 20 jobs.
    const [eventTx, ...otherTx] = await xminsOf('carrier_events', 'carrier_event_id', ids);
    expect(otherTx).toEqual([]);
    const stored = (await db.pool.query(`SELECT id FROM carrier_events WHERE carrier_event_id = ANY($1)`, [ids])).rows.map((r) => r.id);
    expect(stored).toHaveLength(20);
    expect(await xminsOf('outbox_jobs', 'job_id', stored)).toEqual([eventTx]);
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = ANY($1)`, [stored])).toBe(20);
  });

  it('a batch that fails answers 503 with Retry-After to each of its deliveries and stores none; the retries are accepted', async () => {
    const good = Array.from({ length: 5 }, () => telnyxFixture('message.sent.json', { id: randomUUID() }));
    const poison = telnyxFixture('message.sent.json', { id: `poison-${randomUUID()}` });
    const replies = await sendAsOneBatch([...good, poison]);

    for (const reply of replies) {
      expect(reply).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/), rowsAtAnswer: 0 });
      expect(reply.body).toEqual({ errors: [expect.objectContaining({ code: 'service_unavailable' })] });
    }
    const goodIds = good.map((b) => JSON.parse(b).data.id);
    expect(await db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = ANY($1)`, [goodIds])).toBe(0);

    // The carrier retries: the same events, now in a batch without the poison.
    const retried = await Promise.all(good.map((body, i) => post(telnyxFixture('message.sent.json', { id: goodIds[i], attempt: 2 }))));
    expect(retried.map((r) => [r.status, r.body.status])).toEqual(Array(5).fill([200, 'accepted']));
    expect(await db.count(`SELECT count(*) FROM outbox_jobs o JOIN carrier_events e ON e.id = o.job_id WHERE e.carrier_event_id = ANY($1)`, [goodIds])).toBe(5);
  });

  it('a body Postgres cannot store does not spoil its batch: it alone is refused with 400', async () => {
    // A NUL in the body is refused at the edge now (issue 25), before any batch: the trigger
    // raises what jsonb raises for it (22P05), as for anything the edge bounds would miss.
    const good = Array.from({ length: 5 }, () => telnyxFixture('message.sent.json', { id: randomUUID() }));
    const bad = telnyxFixture('message.sent.json', { id: `baddata-${randomUUID()}` });
    const replies = await sendAsOneBatch([...good, bad]);

    expect(replies.slice(0, 5).map((r) => [r.status, r.body.status, r.rowsAtAnswer])).toEqual(Array(5).fill([200, 'accepted', 1]));
    expect(replies[5]).toMatchObject({ status: 400, rowsAtAnswer: 0 });
    expect(replies[5].body).toEqual({ errors: [expect.objectContaining({ code: 'invalid_event', detail: expect.stringMatching(/NUL character/) })] });
  });

  it('a NUL in a signed body is refused at the edge with 400 naming the field, before any batch', async () => {
    const bad = telnyxEvent('message.received', { id: 'm1', from: { phone_number: '+1' }, to: [{ phone_number: '+2' }], text: 'a\u0000b' });
    const reply = await post(bad);
    expect(reply).toMatchObject({ status: 400, rowsAtAnswer: 0 });
    expect(reply.body).toEqual({ errors: [expect.objectContaining({ code: 'invalid_event', detail: expect.stringMatching(/^data\.payload\.text holds a NUL/) })] });
    expect(await waitingDeliveries()).toBe(0);
  });

  it.each([
    ['toolong', /too long to store/],
    ['toodeep', /nested too deeply/],
  ])('a delivery whose row Postgres refuses past a limit (%s, SQLSTATE class 54) is refused alone with 400; its 30 neighbours are stored once', async (prefix, detail) => {
    const goodIds = Array.from({ length: 30 }, () => randomUUID());
    const good = goodIds.map((id) => telnyxFixture('message.sent.json', { id }));
    const bad = telnyxFixture('message.sent.json', { id: `${prefix}-${randomUUID()}` });
    const replies = await sendAsOneBatch([...good.slice(0, 15), bad, ...good.slice(15)]);

    const [refused] = replies.splice(15, 1);
    expect(replies.map((r) => [r.status, r.body.status, r.rowsAtAnswer])).toEqual(Array(30).fill([200, 'accepted', 1]));
    expect(refused).toMatchObject({ status: 400, rowsAtAnswer: 0 });
    expect(refused.body).toEqual({ errors: [{ code: 'invalid_event', title: 'Not a valid carrier event', detail: expect.stringMatching(detail) }] });
    expect(await db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = ANY($1)`, [goodIds])).toBe(30);
    expect(await db.count(`SELECT count(*) FROM outbox_jobs o JOIN carrier_events e ON e.id = o.job_id WHERE e.carrier_event_id = ANY($1)`, [goodIds])).toBe(30);
  });

  it('past INGEST_PENDING_MAX deliveries in hand, the next is answered 503 + Retry-After at once and nothing of it stored; the carrier’s retry is accepted', async () => {
    const bounded = await startTestApp({ databaseUrl: db.url, env: { TELNYX_PUBLIC_KEY: signer.publicKey, INGEST_BATCH_CONCURRENCY: '1', INGEST_PENDING_MAX: '3' } });
    try {
      // In hand: one batch held on the gate, two deliveries waiting behind it.
      const { held } = await holdABatch(bounded);
      const queued = Array.from({ length: 2 }, () => post(telnyxFixture('message.sent.json', { id: randomUUID() }), bounded));
      await waitFor(() => waitingDeliveries(bounded), (n) => n === 2, { what: 'two deliveries queued behind the held batch' });
      const id = randomUUID();
      const refused = await post(telnyxFixture('message.sent.json', { id }), bounded);
      expect(refused).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/), rowsAtAnswer: 0 });
      expect(refused.body).toEqual({ errors: [expect.objectContaining({ code: 'service_unavailable' })] });
      expect(await metric('onceline_ingest_refused_overloaded_total', bounded)).toBe(1);
      // Refused before any work: not even waiting for a batch.
      expect(await waitingDeliveries(bounded)).toBe(2);

      await gate.query(`SELECT pg_advisory_unlock($1)`, [GATE_LOCK]);
      expect((await Promise.all([held, ...queued])).map((r) => [r.status, r.rowsAtAnswer])).toEqual(Array(3).fill([200, 1]));
      const retried = await post(telnyxFixture('message.sent.json', { id, attempt: 2 }), bounded);
      expect([retried.status, retried.body.status, retried.rowsAtAnswer]).toEqual([200, 'accepted', 1]);
    } finally {
      await gate.query(`SELECT pg_advisory_unlock_all()`);
      await bounded.close();
    }
  });
});
