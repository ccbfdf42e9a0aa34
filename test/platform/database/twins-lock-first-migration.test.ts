import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { databaseBefore, type DatabaseBefore } from '../../support/database-before.js';
import { waitingOnAdvisoryLock } from '../../support/partitions.js';

const TWINS = ['usage_record_twin', 'call_twin', 'call_timeline_twin'];

/**
 * Migration 0057 on a database with the twins of 0052 and 0055 (look, lock, look again): they lock
 * first and look once, find the rows stored before, and a session still running an old body and
 * one running the new exclude each other on the same key (the deploy's overlap).
 */
describe('0057: the twins of the ledger and the call history lock first, on the keys they locked before', () => {
  let db: DatabaseBefore;
  let pool: pg.Pool;
  // A connection of its own: the database's pool has two, for the session that waits and the test's polls.
  let holder: pg.Client | undefined;
  const bodies = async (): Promise<Record<string, string>> =>
    Object.fromEntries((await pool.query(`SELECT proname, prosrc FROM pg_proc WHERE proname = ANY($1)`, [TWINS])).rows.map((r) => [r.proname, r.prosrc]));
  const insertUsage = (client: pg.ClientBase | pg.Pool, resource: string) =>
    client.query(
      `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
       VALUES (onceline_id('use'), 'acc_57', 'sms_inbound_segments', $1, 1, 0, 0,
               jsonb_build_object('resource', jsonb_build_object('type', 'message'), 'carrier_events', '[]'::jsonb, 'legacy', false,
                                  'price_rule', jsonb_build_object('quantity', 1, 'unit_price_micros', 0)))`,
      [resource],
    );

  beforeAll(async () => {
    db = await databaseBefore('onceline_t_mig57', '0057');
    pool = db.pool;
    await pool.query(`INSERT INTO accounts (id, name) VALUES ('acc_57', 'twins')`);
    await insertUsage(pool, 'msg_old');
    const { rows } = await pool.query(
      `INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, created_at)
       SELECT id, 'acc_57', 'inbound', '+13125550100', '+13125550101', 'ringing', 'telnyx', 'old-session', onceline_id_time(id) FROM onceline_id('call') AS id RETURNING id`,
    );
    await pool.query(`INSERT INTO call_timeline (call_id, carrier_event_id, event_type, outcome, occurred_at, received_at) VALUES ($1, 'cev_old', 'call.hangup', 'applied', now(), now())`, [rows[0].id]);
  }, 120_000);

  afterAll(async () => {
    await holder?.query('ROLLBACK').catch(() => undefined);
    await holder?.end();
    await db?.drop();
  });

  it('before it, each looks without the lock first; after it, each takes the lock first, as an expression, and looks once', async () => {
    for (const body of Object.values(await bodies())) expect(body).toMatch(/onceline_twin_lock/);

    // A session runs the old body and holds the key's lock it took (no twin found), uncommitted.
    holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    await holder.query('BEGIN');
    expect((await holder.query(`SELECT usage_record_twin('sms_inbound_segments', 'msg_new') AS twin`)).rows[0].twin).toBeNull();

    await db.migrateRest();
    const after = await bodies();
    expect(Object.keys(after).sort()).toEqual([...TWINS].sort());
    for (const body of Object.values(after)) {
      expect(body).not.toMatch(/onceline_twin_lock/);
      expect(body.match(/pg_advisory_xact_lock/g)).toHaveLength(1);
      expect(body.match(/SELECT id INTO twin FROM/g)).toHaveLength(1);
      expect(body.indexOf('pg_advisory_xact_lock')).toBeLessThan(body.indexOf('SELECT id INTO twin'));
    }
  }, 120_000);

  it('a session running the new body waits on the old body\'s lock of the same key, and then finds the row it wrote', async () => {
    const racing = pool.query(`SELECT usage_record_twin('sms_inbound_segments', 'msg_new') AS twin`);
    await waitingOnAdvisoryLock(pool, 'the new usage_record_twin to wait on the lock the old one took');
    await insertUsage(holder!, 'msg_new');
    const { rows } = await holder!.query(`SELECT id FROM usage_records WHERE resource_id = 'msg_new'`);
    await holder!.query('COMMIT');
    expect((await racing).rows[0].twin).toBe(rows[0].id);
  }, 30_000);

  it('the rows stored before are still each key\'s twin', async () => {
    const one = async (sql: string) => Object.values((await pool.query(sql)).rows[0] ?? {})[0];
    expect(await one(`SELECT usage_record_twin('sms_inbound_segments', 'msg_old')`)).toBe(await one(`SELECT id FROM usage_records WHERE resource_id = 'msg_old'`));
    expect(await one(`SELECT call_twin('telnyx', 'old-session')`)).toBe(await one(`SELECT id FROM calls WHERE carrier_call_id = 'old-session'`));
    expect(await one(`SELECT call_timeline_twin('cev_old')`)).toBe(await one(`SELECT id FROM call_timeline WHERE carrier_event_id = 'cev_old'`));
    expect(await one(`SELECT call_twin('telnyx', 'no-such-session')`)).toBeNull();
  });
});
