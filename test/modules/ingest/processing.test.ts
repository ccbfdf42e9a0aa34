import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { exec } from '../../../src/platform/database/tx.js';
import { CarrierEventHandlers, RetryLaterError } from '../../../src/modules/ingest/carrier-event-handlers.js';
import { CarrierEventsService } from '../../../src/modules/ingest/carrier-events.service.js';
import { ProcessCarrierEventJob } from '../../../src/modules/ingest/ingest.jobs.js';
import { JobRunner } from '../../../src/platform/outbox/job-runner.js';
import { CarrierEventWriter } from '../../../src/modules/ingest/carrier-event-writer.js';
import type { CallEvent } from '../../../src/carriers/normalized-event.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { telnyxEvent, telnyxFixture, telnyxReceipt, telnyxSigner } from '../../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { waitFor } from '../../support/wait.js';
import { runCliHere } from '../../support/run-cli.js';

const signer = telnyxSigner();

async function deliver(app: TestApp, body: string): Promise<string> {
  const res = await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: 'accepted' });
  return JSON.parse(body).data.id;
}

interface EventRow {
  id: string;
  processed_at: Date | null;
  error: string | null;
  note: string | null;
  attempts: number;
}

async function eventRow(db: TestDatabase, carrierEventId: string): Promise<EventRow> {
  const { rows } = await db.pool.query(`SELECT id, processed_at, error, note, attempts FROM carrier_events WHERE carrier_event_id = $1`, [carrierEventId]);
  return rows[0];
}

function settled(db: TestDatabase, carrierEventId: string, what: string): Promise<EventRow> {
  return waitFor(() => eventRow(db, carrierEventId), (r) => Boolean(r && (r.processed_at || r.error)), { what, timeoutMs: 20000 });
}

describe('carrier event processing', () => {
  let db: TestDatabase;
  let app: TestApp;
  let handlers: CarrierEventHandlers;
  let undo: (() => void)[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    // Retries every ~50-100 ms and a 3 s deadline, so the out-of-order story plays out in seconds.
    app = await startTestApp({
      databaseUrl: db.url,
      relay: true,
      worker: true,
      env: { TELNYX_PUBLIC_KEY: signer.publicKey, CARRIER_EVENT_RETRY_BASE_MS: '50', CARRIER_EVENT_RETRY_MAX_DELAY_SECONDS: '1', CARRIER_EVENT_RETRY_DEADLINE_SECONDS: '3' },
    });
    handlers = app.app.get(CarrierEventHandlers);
    // The test's own "resource" table: a receipt's message that may not exist yet.
    await db.pool.query(`CREATE TABLE test_resources (carrier_message_id text PRIMARY KEY)`);
    await db.pool.query(`CREATE TABLE test_effects (carrier_event_id text NOT NULL, carrier_message_id text NOT NULL)`);
  });
  afterEach(() => {
    for (const u of undo.reverse()) u();
    undo = [];
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  /** A message.status handler that needs its resource row and records one effect per run. */
  function useResourceHandler(): void {
    undo.push(
      handlers.override('message.status', async (event, tx, { carrierEventId }) => {
        const { rows } = await exec(tx, `SELECT 1 FROM test_resources WHERE carrier_message_id = $1`, [event.carrierMessageId]);
        if (rows.length === 0) throw new RetryLaterError(`message ${event.carrierMessageId} not there yet`);
        await exec(tx, `INSERT INTO test_effects VALUES ($1, $2)`, [carrierEventId, event.carrierMessageId]);
      }),
    );
  }

  it("a call's events stored in one batch run in the order they arrived, not their carrier ids' order", async () => {
    const ran: string[] = [];
    undo.push(handlers.override('call.status', async () => 'recorded'));
    const runner = app.app.get(JobRunner);
    const run = runner.run.bind(runner);
    runner.run = (name, jobId, ...rest) => {
      if (name === ProcessCarrierEventJob.name) ran.push(jobId);
      return run(name, jobId, ...rest);
    };
    undo.push(() => (runner.run = run));
    const session = `v3:session-${randomUUID()}`;
    const status = (carrierEventId: string): CallEvent => ({
      kind: 'call.status', carrier: 'telnyx', carrierEventId, occurredAt: new Date().toISOString(), carrierCallId: `v3:caller-${session}`, callSessionId: session,
      direction: 'inbound', progress: 'ringing', carrierStatus: 'ringing',
    });
    const writer = app.app.get(CarrierEventWriter);
    // One batch (both queued before it starts); the one that arrived first has the larger key.
    const [later, earlier] = [`zz-${randomUUID()}`, `aa-${randomUUID()}`];
    const written = [writer.write({ event: status(later), carrierEventType: 'call.progress', payloadJson: '{}' }), writer.write({ event: status(earlier), carrierEventType: 'call.progress', payloadJson: '{}' })];
    expect(await Promise.all(written)).toEqual(['accepted', 'accepted']);
    const ids = await Promise.all([later, earlier].map(async (id) => (await settled(db, id, 'the call event processed')) && (await eventRow(db, id)).id));
    // Each ran as its own job (none as an earlier event of the other's run), in arrival order.
    expect(ran.filter((jobId) => ids.includes(jobId))).toEqual(ids);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM carrier_events WHERE id = ANY ($1) AND attempts = 1`, [ids])).rows[0].n).toBe(2);
  });

  it('an unknown event type is stored and marked processed as ignored', async () => {
    const id = await deliver(app, telnyxEvent('fax.received', { id: 'no_1' }));
    const row = await settled(db, id, 'the ignored event to be processed');
    expect(row).toMatchObject({ error: null, note: 'ignored: carrier event type fax.received' });
    expect(row.processed_at).not.toBeNull();
  });

  it('out of order: a receipt that outruns its message is retried until the message exists, then applied once', async () => {
    useResourceHandler();
    const messageId = `m-${randomUUID()}`;
    const id = await deliver(app, telnyxReceipt(messageId, 'delivered'));
    // At least one retry happened while the message did not exist.
    await waitFor(() => eventRow(db, id), (r) => r.attempts >= 2, { what: 'a retry of the early receipt' });
    expect((await eventRow(db, id)).processed_at).toBeNull();
    await db.pool.query(`INSERT INTO test_resources VALUES ($1)`, [messageId]);
    const row = await waitFor(() => eventRow(db, id), (r) => r.processed_at !== null, { what: 'the receipt to apply after its message appeared' });
    expect(row).toMatchObject({ error: null, note: null });
    expect(await db.count(`SELECT count(*) FROM test_effects WHERE carrier_message_id = $1`, [messageId])).toBe(1);
    // Every retry was its own outbox job; none left unfinished, none failed.
    const jobs = await db.pool.query(`SELECT job_id, completed_at, failed_at FROM outbox_jobs WHERE data->>'carrierEventId' = $1 ORDER BY id`, [row.id]);
    expect(jobs.rows.length).toBeGreaterThanOrEqual(2);
    expect(jobs.rows[0].job_id).toBe(row.id);
    expect(jobs.rows[1].job_id).toMatch(new RegExp(`^${row.id}-r\\d+$`));
    await waitFor(() => db.count(`SELECT count(*) FROM outbox_jobs WHERE data->>'carrierEventId' = $1 AND completed_at IS NULL`, [row.id]), (n) => n === 0, { what: 'later retry jobs to finish as no-ops' });
    expect(jobs.rows.every((j) => j.failed_at === null)).toBe(true);
  });

  it('out of order past the deadline: the event records an error and stays unprocessed', async () => {
    useResourceHandler();
    const id = await deliver(app, telnyxReceipt(`never-${randomUUID()}`, 'delivered'));
    const row = await settled(db, id, 'the deadline to pass');
    expect(row.processed_at).toBeNull();
    expect(row.error).toMatch(/^retry deadline of 3 s passed: message never-.* not there yet$/);
    expect(row.attempts).toBeGreaterThanOrEqual(3);
  });

  it('a permanent error is recorded at once, the handler writes roll back, the job is not retried; replay applies it once', async () => {
    let broken = true;
    undo.push(
      handlers.override('message.status', async (event, tx, { carrierEventId }) => {
        await exec(tx, `INSERT INTO test_effects VALUES ($1, $2)`, [carrierEventId, event.carrierMessageId]);
        if (broken) throw new Error('receipt handler bug');
      }),
    );
    const messageId = `p-${randomUUID()}`;
    const id = await deliver(app, telnyxReceipt(messageId, 'sent'));
    const row = await settled(db, id, 'the permanent failure to be recorded');
    expect(row).toMatchObject({ processed_at: null, error: 'receipt handler bug', attempts: 1 });
    expect(await db.count(`SELECT count(*) FROM test_effects WHERE carrier_message_id = $1`, [messageId])).toBe(0);
    const jobs = await db.pool.query(`SELECT job_id, completed_at IS NOT NULL AS done FROM outbox_jobs WHERE data->>'carrierEventId' = $1`, [row.id]);
    expect(jobs.rows).toEqual([{ job_id: row.id, done: true }]);

    const events = app.app.get(CarrierEventsService);
    expect((await events.list({ failed: true })).map((e) => e.id)).toContain(row.id);
    broken = false;
    expect(await events.replay(row.id)).toEqual({ id: row.id, outcome: 'processed' });
    expect(await events.replay(row.id)).toEqual({ id: row.id, outcome: 'already_processed' });
    expect(await db.count(`SELECT count(*) FROM test_effects WHERE carrier_message_id = $1`, [messageId])).toBe(1);
    expect(await eventRow(db, id)).toMatchObject({ error: null });
    expect((await events.list({ failed: true })).map((e) => e.id)).not.toContain(row.id);
  });

  it('a processing job that fails for good on infrastructure errors puts its event in the failed list, replayable', async () => {
    let down = true;
    undo.push(
      handlers.override('message.status', async (event, tx, { carrierEventId }) => {
        // Transient (the database's fault, not the event's): BullMQ retries the whole job.
        if (down) throw Object.assign(new Error('could not serialize access'), { code: '40001' });
        await exec(tx, `INSERT INTO test_effects VALUES ($1, $2)`, [carrierEventId, event.carrierMessageId]);
      }),
    );
    const messageId = `g-${randomUUID()}`;
    const id = await deliver(app, telnyxReceipt(messageId, 'delivered'));
    const { id: rowId } = await eventRow(db, id);
    await waitFor(() => db.count(`SELECT attempts FROM outbox_jobs WHERE job_id = $1`, [rowId]), (n) => n >= 1, { what: 'the first failed attempt' });
    expect(await eventRow(db, id)).toMatchObject({ processed_at: null, error: null });

    // The last attempt's failure, as the worker records it once BullMQ's attempts are spent.
    await app.app.get(JobRunner).recordFailure(ProcessCarrierEventJob.name, rowId, new Error('could not serialize access'), true);
    expect(await eventRow(db, id)).toMatchObject({ processed_at: null, error: 'processing job failed after its last attempt: could not serialize access' });
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND failed_at IS NOT NULL`, [rowId])).toBe(1);
    const events = app.app.get(CarrierEventsService);
    expect((await events.list({ failed: true })).map((e) => e.id)).toContain(rowId);

    down = false;
    expect(await events.replay(rowId)).toEqual({ id: rowId, outcome: 'processed' });
    expect(await db.count(`SELECT count(*) FROM test_effects WHERE carrier_message_id = $1`, [messageId])).toBe(1);
  });

  it('replay --all-failed re-runs every failed event once, reporting progress', async () => {
    let broken = true;
    undo.push(
      handlers.override('message.status', async (event, tx, { carrierEventId }) => {
        if (broken) throw new Error('down for maintenance');
        await exec(tx, `INSERT INTO test_effects VALUES ($1, $2)`, [carrierEventId, event.carrierMessageId]);
      }),
    );
    const prefix = `bulk-${randomUUID()}`;
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await deliver(app, telnyxReceipt(`${prefix}-${i}`, 'delivered')));
    for (const id of ids) await settled(db, id, 'each bulk event to fail');
    broken = false;
    const progress: number[] = [];
    const results = await app.app.get(CarrierEventsService).replayAllFailed((done) => progress.push(done));
    expect(results.filter((r) => r.outcome === 'processed').length).toBeGreaterThanOrEqual(5);
    expect(progress.at(-1)).toBe(results.length);
    expect(await db.count(`SELECT count(*) FROM test_effects WHERE carrier_message_id LIKE $1`, [`${prefix}-%`])).toBe(5);
    expect(await db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL AND error IS NOT NULL`)).toBe(0);
  });

  it('CLI: carrier-events:list --failed and carrier-events:replay print one JSON document each', async () => {
    // Fails here through a test handler; the CLI process then replays it with the real handlers
    // (Messaging: an inbound SMS to a number nobody owns creates nothing and succeeds).
    undo.push(handlers.override('message.received', async () => { throw new Error('inbound handler bug'); }));
    const id = await deliver(app, telnyxFixture('message.received.json', { id: randomUUID() }));
    const row = await settled(db, id, 'the inbound event to fail');
    expect(row.error).toBe('inbound handler bug');
    const env = { DATABASE_URL: db.url, REDIS_URL: app.config.REDIS_URL, QUEUE_PREFIX: app.config.QUEUE_PREFIX, LOG_LEVEL: 'error' };

    const list = await runCliHere(['carrier-events:list', '--failed', '--limit', '10', '--json'], env);
    expect(list.code).toBe(0);
    const listed = JSON.parse(list.stdout);
    expect(listed.data.map((e: { id: string }) => e.id)).toContain(row.id);
    expect(listed.data.find((e: { id: string }) => e.id === row.id)).toMatchObject({ carrier: 'telnyx', kind: 'message.received', error: 'inbound handler bug', processed_at: null });

    const replay = await runCliHere(['carrier-events:replay', row.id, '--json'], env);
    expect(replay.code).toBe(0);
    expect(JSON.parse(replay.stdout)).toEqual({ replayed: 1, outcomes: { processed: 1 }, results: [{ id: row.id, outcome: 'processed' }] });
    expect((await eventRow(db, id)).processed_at).not.toBeNull();

    const again = await runCliHere(['carrier-events:replay', '--all-failed', '--json'], env);
    expect(JSON.parse(again.stdout)).toEqual({ replayed: 0, outcomes: {}, results: [] });

    const missing = await runCliHere(['carrier-events:replay', 'cev_nope', '--json'], env);
    expect(missing.code).not.toBe(0);
    expect(JSON.parse(missing.stdout).errors[0]).toMatchObject({ code: 'not_found' });
  });
});
