import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { ConnectionBudget, hurry, inLane, Pace, type Urgency } from '../../../src/platform/database/connection-budget.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

/**
 * Per-lane connection budgets over one real pool (issue #27): a lane's work beyond its budget
 * waits in memory, in order, and never in the pool's queue, so the connections left over stay
 * free for the customer API and ingest.
 */
/** A realtime run that holds the lane's connection until letGo(); `first` ends when it has given it back. */
async function holdRealtimeConnection(pool: pg.Pool): Promise<{ first: Promise<void>; letGo: () => void }> {
  let letGo!: () => void;
  const held = new Promise<void>((resolve) => (letGo = resolve));
  let holding!: () => void;
  const isHolding = new Promise<void>((resolve) => (holding = resolve));
  const first = inLane('realtime', async () => {
    const client = await pool.connect();
    holding();
    await held;
    client.release();
  });
  await isHolding;
  return { first, letGo };
}

/** Polls `done` until it holds (2 s at most). */
async function waitUntil(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('not reached in 2 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('ConnectionBudget', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let budget: ConnectionBudget;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 3, connectionTimeoutMillis: 5000 });
    // As createTestDatabase's pool: pool.end() resolves before its sockets close, and drop()'s
    // DROP ... WITH (FORCE) may terminate one mid-close; unheard, that 57P01 ended the test file
    // (a fresh-clone CI run, 2026-12-08 01:27 UTC: "Worker exited unexpectedly").
    pool.on('error', () => undefined);
    budget = new ConnectionBudget({ realtime: 1, bulk: 1 });
    budget.install(pool);
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it("a lane's run beyond its budget waits for the lane's connection; the other lane and work outside the lanes are served at once", async () => {
    const { first, letGo } = await holdRealtimeConnection(pool);
    let secondDone = false;
    const second = inLane('realtime', () => pool.query('SELECT 1')).then(() => (secondDone = true));
    expect(budget.gates.realtime.waiting).toBe(1);
    expect(budget.saturated('realtime')).toBe(true);
    // The bulk lane and the API (no lane) each get one of the two connections left.
    await expect(inLane('bulk', () => pool.query('SELECT 2 AS n'))).resolves.toMatchObject({ rows: [{ n: 2 }] });
    await expect(pool.query('SELECT 3 AS n')).resolves.toMatchObject({ rows: [{ n: 3 }] });
    expect(secondDone).toBe(false);
    expect(pool.waitingCount).toBe(0);
    letGo();
    await Promise.all([first, second]);
    expect(secondDone).toBe(true);
    expect(budget.gates.realtime.held).toBe(0);
    expect(budget.saturated('realtime')).toBe(false);
  });

  it("runs waiting for the lane's connection are served by urgency: a call's command, then a call's event, then earlier inbound SMS", async () => {
    const { first, letGo } = await holdRealtimeConnection(pool);
    const served: string[] = [];
    const waitIn = (name: string, urgency?: Urgency) =>
      inLane('realtime', () => pool.query(`SELECT $1::text AS n`, [name]), { urgency }).then(({ rows }) => served.push(rows[0].n));
    const waiting = [waitIn('sms-1'), waitIn('sms-2'), waitIn('call-event', 'soon'), waitIn('call-command', 'now')];
    expect(budget.gates.realtime.waiting).toBe(4);
    letGo();
    await Promise.all([first, ...waiting]);
    expect(served).toEqual(['call-command', 'call-event', 'sms-1', 'sms-2']);
    expect(budget.gates.realtime.held).toBe(0);
  });

  it("a run that hurries (a new call's dial, once the carrier has it) waits for its next connection as the more urgent, ahead of a call's events", async () => {
    const served: string[] = [];
    let sent!: () => void;
    const carrierHasIt = new Promise<void>((resolve) => (sent = resolve));
    // A first dial's job: its send claim as `next`, then the send; the leg's result after it.
    const dial = inLane('realtime', async () => {
      await pool.query('SELECT 1');
      await carrierHasIt;
      hurry('now');
      served.push((await pool.query(`SELECT 'dial-result' AS n`)).rows[0].n);
    }, { urgency: 'next' });
    const { first, letGo } = await holdRealtimeConnection(pool);
    const event = inLane('realtime', () => pool.query(`SELECT 'leg-event' AS n`), { urgency: 'soon' }).then(({ rows }) => served.push(rows[0].n));
    sent();
    await waitUntil(() => budget.gates.realtime.waiting === 2);
    letGo();
    await Promise.all([first, dial, event]);
    expect(served).toEqual(['dial-result', 'leg-event']);
  });

  it("a run whose pace a more urgent waiter raises (a call's answer behind the call's earlier event) is served ahead of the others of its old urgency, the wait it is in included", async () => {
    const { first, letGo } = await holdRealtimeConnection(pool);
    const served: string[] = [];
    const waitIn = (name: string, urgency: Urgency, pace?: Pace) =>
      inLane('realtime', () => pool.query(`SELECT $1::text AS n`, [name]), { urgency, pace }).then(({ rows }) => served.push(rows[0].n));
    // The call's earlier event waits for the lane's connection behind other calls' events.
    const earlierEventsPace = new Pace();
    const waiting = [waitIn('other-call-1', 'soon'), waitIn('other-call-2', 'soon'), waitIn('earlier-event', 'soon', earlierEventsPace), waitIn('other-call-3', 'soon'), waitIn('sms', 'later')];
    const nowAhead = [budget.gates.realtime.waitingAhead('now')];
    // The call's answer (`now`) waits for that run to end: the run inherits its urgency.
    earlierEventsPace.raise('now');
    nowAhead.push(budget.gates.realtime.waitingAhead('now'));
    // A less urgent raise never lowers it.
    earlierEventsPace.raise('later');
    nowAhead.push(budget.gates.realtime.waitingAhead('now'));
    letGo();
    await Promise.all([first, ...waiting]);
    expect(nowAhead).toEqual([0, 1, 1]);
    expect(served).toEqual(['earlier-event', 'other-call-1', 'other-call-2', 'other-call-3', 'sms']);
    // A run given the raised pace later starts at it.
    const { first: again, letGo: letGoAgain } = await holdRealtimeConnection(pool);
    served.length = 0;
    const later = [waitIn('other-call-4', 'soon'), waitIn('next-earlier-event', 'later', earlierEventsPace)];
    letGoAgain();
    await Promise.all([again, ...later]);
    expect(served).toEqual(['next-earlier-event', 'other-call-4']);
    expect(budget.gates.realtime.held).toBe(0);
  });

  it('a run that holds its lane\'s only connection takes a second one straight from the pool, never waiting on itself', async () => {
    await inLane('realtime', async () => {
      const client = await pool.connect();
      try {
        await expect(pool.query('SELECT 4 AS n')).resolves.toMatchObject({ rows: [{ n: 4 }] });
      } finally {
        client.release();
      }
    });
    expect(budget.gates.realtime.held).toBe(0);
  });

  it('a connection that fails gives its place back', async () => {
    const broken = new pg.Pool({ connectionString: db.url.replace(/\/[^/]+$/, '/onceline_no_such_db'), max: 1 });
    const small = new ConnectionBudget({ realtime: 1, bulk: 1 });
    small.install(broken);
    await expect(inLane('realtime', () => broken.query('SELECT 1'))).rejects.toThrow();
    expect(small.gates.realtime.held).toBe(0);
    await broken.end();
  });
});
