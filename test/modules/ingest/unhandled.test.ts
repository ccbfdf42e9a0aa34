import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { exec } from '../../../src/platform/database/tx.js';
import { CarrierEventHandlers, type CarrierEventHandler } from '../../../src/modules/ingest/carrier-event-handlers.js';
import { CarrierEventsService } from '../../../src/modules/ingest/carrier-events.service.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { telnyxFixture, telnyxSigner } from '../../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { pausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';
import { runCliHere } from '../../support/run-cli.js';

const signer = telnyxSigner();

interface EventRow {
  id: string;
  processed_at: Date | null;
  unhandled_since: Date | null;
  error: string | null;
  note: string | null;
  attempts: number;
}

/** Delivers a signed Telnyx fixture with a fresh event id; returns our carrier event id (cev_…). */
async function deliver(app: TestApp, db: TestDatabase, fixture: string): Promise<string> {
  const body = telnyxFixture(fixture, { id: randomUUID() });
  const res = await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body });
  expect(res.status).toBe(200);
  const { rows } = await db.pool.query(`SELECT id FROM carrier_events WHERE carrier = 'telnyx' AND carrier_event_id = $1`, [JSON.parse(body).data.id]);
  return rows[0].id;
}

async function eventRow(db: TestDatabase, id: string): Promise<EventRow> {
  const { rows } = await db.pool.query(`SELECT id, processed_at, unhandled_since, error, note, attempts FROM carrier_events WHERE id = $1`, [id]);
  return rows[0];
}

/** The processing job ran and found no handler. */
function waitingForHandler(db: TestDatabase, id: string): Promise<EventRow> {
  return waitFor(() => eventRow(db, id), (r) => r.unhandled_since !== null, { what: `${id} to be marked unhandled`, timeoutMs: 20000 });
}

/**
 * Transactions of this database blocked on a row lock or on a call's lock (the advisory lock a
 * call event's processing takes on its session first: CarrierEventProcessor.process), not on a
 * test's advisory lock.
 */
function rowLockWaiters(db: TestDatabase): Promise<number> {
  return db.count(
    `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE NOT l.granted AND a.datname = current_database()
        AND (l.locktype IN ('transactionid', 'tuple') OR (l.locktype = 'advisory' AND a.query LIKE '%call-session:%'))`,
  );
}

describe('carrier events with no handler for their kind', () => {
  let db: TestDatabase;
  let app: TestApp;
  let handlers: CarrierEventHandlers;
  let events: CarrierEventsService;
  let undo: (() => void)[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url, relay: true, worker: true, env: { TELNYX_PUBLIC_KEY: signer.publicKey } });
    handlers = app.app.get(CarrierEventHandlers);
    events = app.app.get(CarrierEventsService);
    await db.pool.query(`CREATE TABLE test_call_effects (carrier_event_id text NOT NULL, carrier_call_id text NOT NULL)`);
  });
  afterEach(() => {
    for (const u of undo.reverse()) u();
    undo = [];
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  /** A call.initiated handler, as Calls would register it: one effect row per run. */
  const recordCall: CarrierEventHandler<'call.initiated'> = async (event, tx, { carrierEventId }) => {
    await exec(tx, `INSERT INTO test_call_effects VALUES ($1, $2)`, [carrierEventId, event.carrierCallId]);
  };
  const effects = (id: string) => db.count(`SELECT count(*) FROM test_call_effects WHERE carrier_event_id = $1`, [id]);

  it('a call event is kept unconsumed and listed as unhandled; once a handler exists, replay processes it once', async () => {
    undo.push(handlers.override('call.initiated', undefined));
    const id = await deliver(app, db, 'call.initiated.json');
    const row = await waitingForHandler(db, id);
    expect(row).toMatchObject({ processed_at: null, error: null, attempts: 0, note: 'waiting for a handler for call.initiated' });
    // Its processing job finished: nothing retries it on its own, only a replay.
    await waitFor(() => db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND completed_at IS NULL`, [id]), (n) => n === 0, { what: 'the job to complete' });
    expect((await events.list({ unhandled: true })).map((e) => e.id)).toContain(id);
    expect((await events.list({ failed: true })).map((e) => e.id)).not.toContain(id);

    // Still no handler: a replay leaves it waiting, since the time it first found none.
    expect(await events.replay(id)).toEqual({ id, outcome: 'unhandled' });
    expect(await eventRow(db, id)).toMatchObject({ processed_at: null, unhandled_since: row.unhandled_since, attempts: 0 });

    undo.push(handlers.override('call.initiated', recordCall));
    expect(await events.replay(id)).toEqual({ id, outcome: 'processed' });
    expect(await events.replay(id)).toEqual({ id, outcome: 'already_processed' });
    expect(await effects(id)).toBe(1);
    const done = await eventRow(db, id);
    expect(done).toMatchObject({ unhandled_since: null, error: null, note: null, attempts: 1 });
    expect(done.processed_at).not.toBeNull();
    expect((await events.list({ unhandled: true })).map((e) => e.id)).not.toContain(id);
  });

  it('an ignored carrier event type is still processed at once, not kept as unhandled', async () => {
    const body = JSON.stringify({ data: { event_type: 'fax.received', id: randomUUID(), occurred_at: new Date().toISOString(), record_type: 'event', payload: {} }, meta: { attempt: 1 } });
    const res = await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body });
    expect(res.status).toBe(200);
    const row = await waitFor(
      async () => (await db.pool.query(`SELECT processed_at, unhandled_since, note FROM carrier_events WHERE carrier_event_id = $1`, [JSON.parse(body).data.id])).rows[0],
      (r) => Boolean(r?.processed_at),
      { what: 'the ignored event to be processed' },
    );
    expect(row).toMatchObject({ unhandled_since: null, note: 'ignored: carrier event type fax.received' });
  });

  it('race: a replay that finds a handler and one that finds none, on the same event: processed once, never marked unhandled after', async () => {
    undo.push(handlers.override('call.initiated', undefined));
    const id = await deliver(app, db, 'call.initiated.json');
    await waitingForHandler(db, id);
    undo.push(handlers.override('call.initiated', recordCall));
    // The replay with a handler stops right after its processed_at UPDATE, uncommitted.
    const pause = await pausePoint(db.url, { table: 'carrier_events', on: 'UPDATE', when: `NEW.id = '${id}' AND NEW.processed_at IS NOT NULL` });
    try {
      await pause.hold();
      const first = events.replay(id);
      await pause.waitUntilPaused();
      // The handler goes (a worker still running an older build); its competitor waits on the row.
      handlers.override('call.initiated', undefined);
      const second = events.replay(id);
      await waitFor(() => rowLockWaiters(db), (n) => n >= 1, { what: 'the second replay to wait on the row lock' });
      await pause.release();
      expect(await first).toEqual({ id, outcome: 'processed' });
      expect(await second).toEqual({ id, outcome: 'already_processed' });
    } finally {
      await pause.remove();
    }
    expect(await effects(id)).toBe(1);
    expect(await eventRow(db, id)).toMatchObject({ unhandled_since: null, error: null });
  });

  it('race: a run that marks the event unhandled and a replay that has the handler: the replay processes it after that commit', async () => {
    undo.push(handlers.override('call.initiated', undefined));
    const pause = await pausePoint(db.url, { table: 'carrier_events', on: 'UPDATE', when: `NEW.unhandled_since IS NOT NULL AND OLD.unhandled_since IS NULL` });
    let id = '';
    try {
      await pause.hold();
      id = await deliver(app, db, 'call.initiated.json');
      // The worker's job stops right after marking it unhandled, uncommitted.
      await pause.waitUntilPaused();
      handlers.override('call.initiated', recordCall);
      const replay = events.replay(id);
      await waitFor(() => rowLockWaiters(db), (n) => n >= 1, { what: 'the replay to wait on the row lock' });
      await pause.release();
      expect(await replay).toEqual({ id, outcome: 'processed' });
    } finally {
      await pause.remove();
    }
    expect(await effects(id)).toBe(1);
    const row = await eventRow(db, id);
    expect(row).toMatchObject({ unhandled_since: null, error: null });
    expect(row.processed_at).not.toBeNull();
  });

  it('CLI: list --unhandled and replay --all-unhandled print one JSON document each; events stored before their handler shipped are run by it', async () => {
    // Two events waiting in this app: an inbound SMS and a call event, their handlers removed
    // here; the CLI process has Messaging's and Calls' (a call.* event stored before Calls shipped
    // is replayed the same way). Twilio voice callbacks never wait: they are decided in the
    // request (test/modules/calls/twilio-voice.test.ts).
    undo.push(handlers.override('message.received', undefined));
    undo.push(handlers.override('call.initiated', undefined));
    const sms = await deliver(app, db, 'message.received.json');
    const call = await deliver(app, db, 'call.initiated.json');
    await waitingForHandler(db, sms);
    await waitingForHandler(db, call);
    const env = { DATABASE_URL: db.url, REDIS_URL: app.config.REDIS_URL, QUEUE_PREFIX: app.config.QUEUE_PREFIX, LOG_LEVEL: 'error' };

    const list = await runCliHere(['carrier-events:list', '--unhandled', '--json'], env);
    expect(list.code).toBe(0);
    const listed = JSON.parse(list.stdout).data as { id: string; kind: string; unhandled_since: string | null; processed_at: string | null }[];
    expect(listed.map((e) => e.id)).toEqual(expect.arrayContaining([sms, call]));
    expect(listed.every((e) => e.unhandled_since !== null && e.processed_at === null)).toBe(true);

    const both = await runCliHere(['carrier-events:list', '--unhandled', '--failed', '--json'], env);
    expect(both.code).not.toBe(0);
    expect(JSON.parse(both.stdout).errors[0].detail).toMatch(/at most one of --failed and --unhandled/);

    const replay = await runCliHere(['carrier-events:replay', '--all-unhandled', '--json'], env);
    expect(replay.code).toBe(0);
    const replayed = JSON.parse(replay.stdout);
    expect(replayed.results).toEqual(expect.arrayContaining([{ id: sms, outcome: 'processed' }, { id: call, outcome: 'processed' }]));
    expect(replayed.outcomes.processed).toBeGreaterThanOrEqual(2);
    expect((await eventRow(db, sms)).processed_at).not.toBeNull();
    // the fixture calls a number nobody owns: processed, the caller hung up, no call row
    expect(await eventRow(db, call)).toMatchObject({ error: null, unhandled_since: null, note: expect.stringMatching(/no account owns/) });
    expect((await eventRow(db, call)).processed_at).not.toBeNull();

    const ambiguous = await runCliHere(['carrier-events:replay', call, '--all-unhandled', '--json'], env);
    expect(ambiguous.code).not.toBe(0);
    expect(JSON.parse(ambiguous.stdout).errors[0].detail).toMatch(/exactly one of an event id, --all-failed and --all-unhandled/);
  });
});
