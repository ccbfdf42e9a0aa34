import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { CarrierEventHandlers, NotHandledYetError, RetryLaterError } from '../../../src/modules/ingest/carrier-event-handlers.js';
import { CarrierEventsService } from '../../../src/modules/ingest/carrier-events.service.js';
import { ProcessCarrierEventJob } from '../../../src/modules/ingest/ingest.jobs.js';
import { exec } from '../../../src/platform/database/tx.js';
import { claimJobSql } from '../../../src/platform/outbox/job-sql.js';
import { JobRunner } from '../../../src/platform/outbox/job-runner.js';
import { captured } from '../../support/captured-statements.js';
import { telnyxReceipt, telnyxSigner } from '../../support/carrier-signing.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

const signer = telnyxSigner();

/**
 * A carrier event's handler runs in its job's transaction without a savepoint when it handles the
 * event alone: on success that is one round trip less; on a failure of the event's own (not the
 * database's) the transaction rolls back whole and the outcome is recorded, with the job's claim,
 * in a second transaction, whose guards leave alone what another run did in between.
 */
describe("a carrier event's handler failing without a savepoint", () => {
  // No worker and no relay: the processing jobs stay pending for the test to run.
  const t = withTestApp({ env: { TELNYX_PUBLIC_KEY: signer.publicKey } });
  let undo: (() => void)[] = [];

  beforeAll(async () => {
    await t.db.pool.query(`CREATE TABLE test_effects (carrier_event_id text NOT NULL)`);
  });
  afterEach(() => {
    for (const u of undo.reverse()) u();
    undo = [];
  });

  /** A receipt stored by ingest; its row id is its processing job's id. */
  async function ingest(): Promise<string> {
    const body = telnyxReceipt(`m-${randomUUID()}`, 'delivered');
    expect((await fetch(`${t.app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).status).toBe(200);
    const { rows } = await t.db.pool.query(`SELECT id FROM carrier_events WHERE carrier_event_id = $1`, [JSON.parse(body).data.id]);
    return rows[0].id;
  }

  /** message.status handled by `fail` after one write of its own (undefined: it succeeds). */
  function handler(fail: () => Promise<Error | undefined>): void {
    undo.push(
      t.app.app.get(CarrierEventHandlers).override('message.status', async (_event, tx, { carrierEventId }) => {
        await exec(tx, `INSERT INTO test_effects VALUES ($1)`, [carrierEventId]);
        const err = await fail();
        if (err) throw err;
      }),
    );
  }

  const run = (id: string) => t.app.app.get(JobRunner).run(ProcessCarrierEventJob.name, id, 1);
  const event = (id: string) => t.db.pool.query(`SELECT processed_at IS NOT NULL AS processed, error, attempts, unhandled_since IS NOT NULL AS unhandled FROM carrier_events WHERE id = $1`, [id]).then((r) => r.rows[0]);
  const job = (id: string) => t.db.pool.query(`SELECT completed_at IS NOT NULL AS completed, failed_at IS NOT NULL AS failed, attempts FROM outbox_jobs WHERE job_id = $1`, [id]).then((r) => r.rows[0]);
  const effects = (id: string) => t.db.count(`SELECT count(*) FROM test_effects WHERE carrier_event_id = $1`, [id]);
  /** The transaction's statements, from its BEGIN on (the job's one-statement try reads first). */
  const transactions = (texts: string[]) => texts.slice(texts.indexOf('START TRANSACTION')).map((text) => text.slice(0, 40));

  it('a handler that succeeds alone: no SAVEPOINT in its transaction', async () => {
    handler(async () => undefined);
    const id = await ingest();
    const { result, texts } = await captured(() => run(id));
    expect(result).toBe('completed');
    expect(transactions(texts)).toEqual([
      'START TRANSACTION',
      // The job's claim, which also takes the lock of the event's call (none for a receipt).
      'UPDATE outbox_jobs SET completed_at = no',
      'SELECT e.normalized, e.attempts, e.proce',
      'INSERT INTO test_effects VALUES ($1)',
      'UPDATE carrier_events SET processed_at =',
      'COMMIT',
    ]);
    expect(texts.find((text) => text.startsWith('UPDATE outbox_jobs'))).toMatch(/RETURNING data, \(\(SELECT CASE WHEN e\.processed_at IS NOT NULL THEN 'processed'/);
    expect(await event(id)).toMatchObject({ processed: true, error: null, attempts: 1 });
    expect(await job(id)).toEqual({ completed: true, failed: false, attempts: 1 });
    expect(await effects(id)).toBe(1);
  });

  /** message.status handled by a handler that adds its write to the processed mark, then fails with `err` (none: it succeeds). */
  function handlerWritingWithMark(err?: Error): void {
    undo.push(
      t.app.app.get(CarrierEventHandlers).override('message.status', async (_event, _tx, context) => {
        context.withProcessedMark((stmt) => stmt.with('test_effect', `INSERT INTO test_effects VALUES (${stmt.param(context.carrierEventId)})`));
        if (err) throw err;
      }),
    );
  }

  it('a write a handler adds with withProcessedMark rides in the statement that marks its event processed: no round trip of its own', async () => {
    handlerWritingWithMark();
    const id = await ingest();
    const { result, texts } = await captured(() => run(id));
    expect(result).toBe('completed');
    expect(transactions(texts)).toEqual([
      'START TRANSACTION',
      'UPDATE outbox_jobs SET completed_at = no',
      'SELECT e.normalized, e.attempts, e.proce',
      'WITH test_effect AS (INSERT INTO test_ef',
      'COMMIT',
    ]);
    expect(texts.find((text) => text.startsWith('WITH test_effect'))).toMatch(/\) UPDATE carrier_events SET processed_at = now\(\)/);
    expect(await event(id)).toMatchObject({ processed: true, error: null, attempts: 1 });
    expect(await effects(id)).toBe(1);
  });

  it('a handler that adds a write with withProcessedMark and then fails: the write is never sent, the failure is recorded', async () => {
    handlerWritingWithMark(new Error('handler bug after its mark write'));
    const id = await ingest();
    const { result, texts } = await captured(() => run(id));
    expect(result).toBe('completed');
    expect(texts.some((text) => text.includes('test_effects'))).toBe(false);
    expect(await event(id)).toMatchObject({ processed: false, error: 'handler bug after its mark write', attempts: 1 });
    expect(await effects(id)).toBe(0);
  });

  it("a handler that fails alone: its writes roll back whole, and its outcome is recorded with the job's claim in a second transaction", async () => {
    handler(async () => new Error('handler bug'));
    const id = await ingest();
    const { result, texts } = await captured(() => run(id));
    expect(result).toBe('completed');
    expect(transactions(texts)).toEqual([
      'START TRANSACTION',
      'UPDATE outbox_jobs SET completed_at = no',
      'SELECT e.normalized, e.attempts, e.proce',
      'INSERT INTO test_effects VALUES ($1)',
      'ROLLBACK',
      'START TRANSACTION',
      'UPDATE outbox_jobs SET completed_at = no',
      'SELECT (SELECT CASE WHEN e.processed_at ',
      'UPDATE carrier_events SET error = $2, at',
      'COMMIT',
    ]);
    expect(await event(id)).toMatchObject({ processed: false, error: 'handler bug', attempts: 1, unhandled: false });
    // Claimed once: the rolled-back claim left no trace, and the job is not retried.
    expect(await job(id)).toEqual({ completed: true, failed: false, attempts: 1 });
    expect(await effects(id)).toBe(0);
    expect(await run(id)).toBe('skipped');
  });

  it("a job whose event is processed already: its claim says so, and nothing else is read", async () => {
    handler(async () => undefined);
    const id = await ingest();
    expect(await t.app.app.get(CarrierEventsService).replay(id)).toEqual({ id, outcome: 'processed' });
    const { result, texts } = await captured(() => run(id));
    expect(result).toBe('completed');
    expect(transactions(texts)).toEqual(['START TRANSACTION', 'UPDATE outbox_jobs SET completed_at = no', 'COMMIT']);
    expect(await job(id)).toEqual({ completed: true, failed: false, attempts: 1 });
    expect(await effects(id)).toBe(1);
  });

  it('the other outcomes after a rollback: retried later as a new job, or left waiting for a handler', async () => {
    let error: Error = new RetryLaterError('not there yet');
    handler(async () => error);
    const later = await ingest();
    expect(await run(later)).toBe('completed');
    expect(await event(later)).toMatchObject({ processed: false, error: null, attempts: 1 });
    expect(await job(`${later}-r1`)).toEqual({ completed: false, failed: false, attempts: 0 });

    error = new NotHandledYetError('this flavour is not built yet');
    const waiting = await ingest();
    expect(await run(waiting)).toBe('completed');
    expect(await event(waiting)).toMatchObject({ processed: false, error: null, attempts: 0, unhandled: true });
    expect(await effects(later) + (await effects(waiting))).toBe(0);
  });

  /**
   * The job's first transaction fails; before its second claims the job, the test holds the jobs'
   * table in SHARE mode (requested while the first transaction's claim holds ROW EXCLUSIVE, so it
   * is granted as that rolls back, and the second claim's ROW EXCLUSIVE queues behind it: table
   * locks are granted in order, where a row lock a rollback frees goes to whichever asks first)
   * and lets `between` act while the second transaction waits.
   */
  async function failThenHold(id: string, between: (held: pg.PoolClient) => Promise<void>): Promise<'completed' | 'skipped'> {
    const held = await t.db.pool.connect();
    try {
      await held.query('BEGIN');
      const holderPid = (await held.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      let locking: Promise<unknown> | undefined;
      let first = true;
      handler(async () => {
        if (!first) return undefined;
        first = false;
        locking = held.query(`LOCK TABLE outbox_jobs IN SHARE MODE`);
        await waitFor(() => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [holderPid]), (n) => n === 1, { what: "the test's lock to wait behind the claim" });
        return new Error('handler bug');
      });
      const running = run(id);
      // The first transaction rolled back: the test holds the jobs' table, the second claim waits on it.
      await waitFor(() => locking !== undefined, Boolean, { what: 'the handler to run' });
      await locking;
      await waitFor(
        () => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`, [holderPid]),
        (n) => n === 1,
        { what: "the second transaction's claim to wait on the test's lock" },
      );
      await between(held);
      await held.query('COMMIT');
      return await running;
    } finally {
      held.release();
    }
  }

  it('interleaved: a replay that processes the event between the rollback and the second transaction stands; the job completes once, recording nothing', async () => {
    const id = await ingest();
    const outcome = await failThenHold(id, async () => {
      expect(await t.app.app.get(CarrierEventsService).replay(id)).toEqual({ id, outcome: 'processed' });
    });
    expect(outcome).toBe('completed');
    expect(await event(id)).toMatchObject({ processed: true, error: null, attempts: 1 });
    expect(await job(id)).toEqual({ completed: true, failed: false, attempts: 1 });
    expect(await effects(id)).toBe(1);
  });

  it('interleaved: a twin run that claims the job between the rollback and the second transaction leaves it nothing to claim or record', async () => {
    const id = await ingest();
    // The twin's claim, in the test's transaction (a twin run's first statement).
    const outcome = await failThenHold(id, async (held) => {
      expect((await held.query(claimJobSql('$1'), [id])).rowCount).toBe(1);
    });
    expect(outcome).toBe('skipped');
    expect(await event(id)).toMatchObject({ processed: false, error: null, attempts: 0 });
    expect(await job(id)).toEqual({ completed: true, failed: false, attempts: 1 });
    expect(await effects(id)).toBe(0);
  });

  it('a replay whose handler fails records the failure after its rollback, and reports it', async () => {
    handler(async () => new Error('replayed bug'));
    const id = await ingest();
    expect(await t.app.app.get(CarrierEventsService).replay(id)).toEqual({ id, outcome: 'failed', error: 'replayed bug' });
    expect(await event(id)).toMatchObject({ processed: false, error: 'replayed bug', attempts: 1 });
    expect(await effects(id)).toBe(0);
    // The job still runs it, through the same two transactions.
    expect(await run(id)).toBe('completed');
    expect(await event(id)).toMatchObject({ processed: false, error: 'replayed bug', attempts: 2 });
  });
});
