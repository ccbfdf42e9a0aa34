import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { UsageLedger } from '../../../src/modules/billing/usage-ledger.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { telnyxEvent, telnyxSigner } from '../../support/carrier-signing.js';
import { databaseBefore, type DatabaseBefore } from '../../support/database-before.js';
import { waitFor } from '../../support/wait.js';

const signer = telnyxSigner();
const OUR_NUMBER = '+15550300001';
const CALLER = '+13125550300';
const HISTORY = ['call_legs', 'call_timeline', 'call_transcript_fragments', 'call_command_sends'];

/** The first migration of issue 44's phase 2 for the ledger and the call history. */
const FIRST = '0050';

/**
 * Migrations 0050 on, on a database that already holds usage rows and calls in the old shape (one
 * table each, its unique keys over all of it): each old table becomes the partition
 * <table>_legacy with its rows, indexes, checks and foreign key to accounts as they were (no
 * rewrite, no index build), and every guarantee holds across it: an old usage row still dedupes
 * (the same resource is not billed twice), and a carrier's webhook for an old call still finds it
 * (a re-sent call.initiated makes no second call; its hangup ends it and bills it once).
 */
describe('partitioning an existing usage_records and call history (migrations 0050-0055)', () => {
  let db: DatabaseBefore;
  let url: string;
  let pool: pg.Pool;
  let app: TestApp | undefined;
  let indexesBefore: string[] = [];
  let constraintsBefore: string[] = [];
  let oldCall = '';

  beforeAll(async () => {
    db = await databaseBefore('onceline_t_mig2', FIRST);
    ({ url, pool } = db);
    await pool.query(`INSERT INTO accounts (id, name) VALUES ('acc_old', 'old ledger')`);
    // Rows as the ledger wrote them then: created_at = now() of the recording transaction.
    await pool.query(
      `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
       SELECT onceline_id('use'), 'acc_old', 'sms_inbound_segments', 'msg_old_' || i, 1, 4000, 4000,
              jsonb_build_object('resource', jsonb_build_object('type', 'message'), 'carrier_events', '[]'::jsonb, 'legacy', false,
                                 'price_rule', jsonb_build_object('quantity', 1, 'unit_price_micros', 4000))
         FROM generate_series(1, 20) AS i`,
    );
    // A call in progress to a number of ours, with a leg, a timeline entry, a fragment and a command sent.
    await pool.query(`INSERT INTO phone_numbers (id, account_id, phone_number, carrier, status, activated_at, voice)
                      VALUES (onceline_id('num'), 'acc_old', $1, 'telnyx', 'active', now(), '{"ring_plan":{"targets":[{"to":"+13125550399"}],"fallback":{"action":"hangup"}}}')`, [OUR_NUMBER]);
    const { rows: call } = await pool.query(
      `INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, caller_control_id, answered_at)
       VALUES (onceline_id('call'), 'acc_old', 'inbound', $1, $2, 'in_progress', 'telnyx', 'old-session', 'v3:old-caller', now() - interval '1 minute') RETURNING id`,
      [CALLER, OUR_NUMBER],
    );
    oldCall = call[0].id;
    await pool.query(`INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status, control_id) VALUES (onceline_id('leg'), $1, 0, 1, '+13125550399', 'ended', 'v3:old-leg')`, [oldCall]);
    await pool.query(`INSERT INTO call_timeline (call_id, carrier_event_id, event_type, outcome, occurred_at, received_at) VALUES ($1, 'cev_old', 'call.initiated', 'applied', now(), now())`, [oldCall]);
    await pool.query(`INSERT INTO call_transcript_fragments (call_id, occurred_at, text) VALUES ($1, now(), 'hello')`, [oldCall]);
    await pool.query(`INSERT INTO call_command_sends (command_id, call_id) VALUES ($1, $2)`, [`${oldCall}-answer`, oldCall]);
    indexesBefore = (await pool.query(`SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid = 'usage_records'::regclass ORDER BY indexrelid`)).rows.map((r) => r.name);
    constraintsBefore = (await pool.query(`SELECT conname FROM pg_constraint WHERE conrelid = 'usage_records'::regclass AND contype IN ('c', 'f') ORDER BY conname`)).rows.map((r) => r.conname);
    await db.migrateRest();
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const count = (sql: string, params: unknown[] = []) => db.count(sql, params);

  it('the old ledger is the partition usage_records_legacy (MINVALUE to the validated bound) with every row; its indexes the same relations; its checks and foreign key adopted; partitions follow', async () => {
    expect((await pool.query(`SELECT relkind FROM pg_class WHERE oid = 'usage_records'::regclass`)).rows[0].relkind).toBe('p');
    const { rows: parts } = await pool.query(
      `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'usage_records'::regclass ORDER BY c.relname`,
    );
    expect(parts[0].name).toBe('usage_records_legacy');
    expect(parts[0].bound).toMatch(/^FOR VALUES FROM \(MINVALUE\) TO \('/);
    expect(parts.slice(1)).toHaveLength(3);
    expect(await count(`SELECT count(*) FROM usage_records_legacy`)).toBe(20);
    const { rows: after } = await pool.query(`SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid = 'usage_records_legacy'::regclass ORDER BY indexrelid`);
    expect(after.map((r) => r.name)).toEqual(indexesBefore.map((n) => n.replace(/^usage_records_/, 'usage_records_legacy_')));
    // The old table's checks and foreign key are the parent's now (inherited: conislocal false), plus its own bound.
    const { rows: cons } = await pool.query(`SELECT conname, coninhcount FROM pg_constraint WHERE conrelid = 'usage_records_legacy'::regclass AND contype IN ('c', 'f') ORDER BY conname`);
    expect(cons.map((c) => c.conname)).toEqual([...constraintsBefore, 'usage_records_legacy_bound'].sort());
    for (const c of cons) expect([c.conname, c.coninhcount]).toEqual([c.conname, c.conname === 'usage_records_legacy_bound' ? 0 : 1]);
    // A new partition holds the ledger's checks too: a row breaking one is refused there as well.
    await expect(pool.query(
      `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause, created_at)
       SELECT 'use_bad', 'acc_old', 'sms_inbound_segments', 'msg_bad', 1, 4000, 1, cause, now() + interval '2 days 1 hour' FROM usage_records LIMIT 1`,
    )).rejects.toThrow(/usage_records_p\d{8}t\d{6}" violates check constraint "usage_records_check"/);
  });

  it('calls and its history: each old table is <table>_legacy holding its rows, the FK to accounts adopted, the history\'s FKs to calls gone; the sequences go on', async () => {
    for (const table of ['calls', ...HISTORY]) {
      expect((await pool.query(`SELECT relkind FROM pg_class WHERE oid = $1::regclass`, [table])).rows[0].relkind).toBe('p');
      const { rows: parts } = await pool.query(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY c.relname`, [table]);
      expect(parts.map((p) => p.name)[0]).toBe(`${table}_legacy`);
      expect(parts).toHaveLength(4);
      expect(await count(`SELECT count(*) FROM ${table}_legacy`)).toBe(1);
    }
    expect(await count(`SELECT count(*) FROM pg_constraint WHERE conrelid = 'calls_legacy'::regclass AND conname = 'calls_account_id_fkey' AND coninhcount = 1`)).toBe(1);
    expect(await count(`SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND confrelid IN ('calls'::regclass, 'calls_legacy'::regclass)`)).toBe(0);
    // Found by the partition key of the old call (its id's time) and by its call.
    expect(await count(`SELECT count(*) FROM call_legs WHERE call_id = $1 AND onceline_id_time(call_id) = onceline_id_time($1)`, [oldCall])).toBe(1);
    const { rows: fresh } = await pool.query(`INSERT INTO call_timeline (call_id, carrier_event_id, event_type, outcome, occurred_at, received_at) VALUES ($1, 'cev_new', 'x', 'ignored', now(), now()) RETURNING id`, [oldCall]);
    expect(Number(fresh[0].id)).toBeGreaterThan(Number((await pool.query(`SELECT id FROM call_timeline WHERE carrier_event_id = 'cev_old'`)).rows[0].id));
    await pool.query(`DELETE FROM call_timeline WHERE carrier_event_id = 'cev_new'`);
  });

  it('the app on the migrated database: an old usage row still dedupes (the same resource is not billed again); a new one is recorded in a new partition', async () => {
    app = await startTestApp({ databaseUrl: url, http: false });
    const record = (resourceId: string) =>
      app!.app.get(UnitOfWork).run((tx) =>
        app!.app.get(UsageLedger).record(tx, {
          accountId: 'acc_old', kind: 'sms_inbound_segments', resourceId, quantity: 1,
          cause: { resource: { type: 'message', id: resourceId }, transition: '→ received', carrier_events: [], price_rule: { unit: 'segment' } } as never,
        }),
      );
    expect(await record('msg_old_7')).toBe(false);
    expect(await count(`SELECT count(*) FROM usage_records WHERE resource_id = 'msg_old_7'`)).toBe(1);
    expect(await record('msg_new_1')).toBe(true);
    expect(await count(`SELECT count(*) FROM usage_records WHERE resource_id = 'msg_new_1'`)).toBe(1);
  }, 60_000);

  it('a webhook for an old call still finds it: call.initiated again makes no second call; its hangup ends it and bills it once', async () => {
    await app?.close();
    app = await startTestApp({ databaseUrl: url, worker: true, relay: false, env: { TELNYX_PUBLIC_KEY: signer.publicKey, CARRIER_EVENT_RETRY_BASE_MS: '100' } });
    const deliver = async (type: string, extra: Record<string, unknown>) => {
      const body = telnyxEvent(type, { call_control_id: 'v3:old-caller', call_leg_id: randomBytes(8).toString('hex'), call_session_id: 'old-session', connection_id: 'conn', client_state: null, from: CALLER, to: OUR_NUMBER, ...extra });
      return (await fetch(`${app!.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).status;
    };
    expect(await deliver('call.initiated', { direction: 'incoming', state: 'parked' })).toBe(200);
    expect(await deliver('call.hangup', { hangup_cause: 'normal_clearing' })).toBe(200);
    await waitFor(() => count(`SELECT count(*) FROM calls WHERE id = $1 AND ended_at IS NOT NULL`, [oldCall]), (n) => n === 1, { what: 'the old call to end' });
    await waitFor(() => count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL`), (n) => n === 0, { what: 'both events processed' });
    expect(await count(`SELECT count(*) FROM calls WHERE carrier = 'telnyx' AND carrier_call_id = 'old-session'`)).toBe(1);
    expect(await count(`SELECT count(*) FROM calls`)).toBe(1);
    expect(await count(`SELECT count(*) FROM usage_records WHERE kind = 'call_minutes' AND resource_id = $1`, [oldCall])).toBe(1);
    expect((await pool.query(`SELECT status FROM calls WHERE id = $1`, [oldCall])).rows[0].status).toBe('completed');
  }, 60_000);
});
