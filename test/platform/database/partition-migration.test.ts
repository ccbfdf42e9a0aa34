import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { startTestApp, type TestApp } from '../../support/app.js';
import { telnyxFixture, telnyxSigner } from '../../support/carrier-signing.js';
import { databaseBefore, type DatabaseBefore } from '../../support/database-before.js';

const signer = telnyxSigner();

/**
 * Migrations 0040-0043 on a database that already holds carrier events and outbox jobs in the
 * old shape (one table each, global unique indexes): each table becomes the partition
 * <table>_legacy with its rows and indexes as they were (no rewrite, no index build), and every
 * guarantee holds across it: a retry of an event stored before the migration is still a
 * duplicate, a job id stored before is still one job.
 */
describe('partitioning an existing carrier_events and outbox_jobs (migrations 0040-0043)', () => {
  let db: DatabaseBefore;
  let url: string;
  let pool: pg.Pool;
  let app: TestApp | undefined;
  const oldKeys = Array.from({ length: 50 }, () => randomUUID());
  let indexesBefore: string[] = [];

  beforeAll(async () => {
    // The migrations as they were before issue 44.
    db = await databaseBefore('onceline_t_mig', '0040');
    ({ url, pool } = db);
    // Rows as ingest wrote them then: created_at = now() of their transaction, ids minted just before.
    await pool.query(
      `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce, processed_at)
       SELECT onceline_id('cev'), 'telnyx', k, 'message.received', 'message.received', '{}', '{}', 'nonce-' || k, CASE WHEN n > 1 THEN now() END
         FROM unnest($1::text[]) WITH ORDINALITY AS t(k, n)`,
      [oldKeys],
    );
    await pool.query(
      `INSERT INTO outbox_jobs (job_id, queue, name, data, completed_at) VALUES ('legacy-pending', 'system', 'probe', '{}', NULL), ('legacy-done', 'system', 'probe', '{}', now())`,
    );
    indexesBefore = (await pool.query(`SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid = 'carrier_events'::regclass ORDER BY indexrelid`)).rows.map((r) => r.name);
    await db.migrateRest();
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('the old table is the partition carrier_events_legacy (MINVALUE to the validated bound), holding every row, its indexes the same relations as before; daily partitions follow', async () => {
    const { rows: kind } = await pool.query(`SELECT relkind FROM pg_class WHERE oid = 'carrier_events'::regclass`);
    expect(kind[0].relkind).toBe('p');
    const { rows: parts } = await pool.query(
      `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'carrier_events'::regclass ORDER BY c.relname`,
    );
    const { rows: bound } = await pool.query(`SELECT legacy_until FROM partitioned_tables WHERE parent = 'carrier_events'`);
    expect(parts[0].name).toBe('carrier_events_legacy');
    expect(parts[0].bound).toMatch(/^FOR VALUES FROM \(MINVALUE\) TO \('/);
    expect(parts.slice(1)).toHaveLength(3);
    expect(new Date(parts[1].bound.match(/FROM \('([^']+)'\)/)[1]).getTime()).toBe(bound[0].legacy_until.getTime());
    expect(await count(`SELECT count(*) FROM carrier_events_legacy`)).toBe(oldKeys.length);
    expect(await count(`SELECT count(*) FROM pg_constraint WHERE conname = 'carrier_events_legacy_bound' AND convalidated`)).toBe(1);
    // The same index relations (renamed, adopted by the parent's indexes), none built by the migration.
    const { rows: after } = await pool.query(`SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid = 'carrier_events_legacy'::regclass ORDER BY indexrelid`);
    expect(after.map((r) => r.name)).toEqual(indexesBefore.map((n) => n.replace(/^carrier_events_/, 'carrier_events_legacy_').replace('legacy_carrier_carrier_event_id_key', 'legacy_key')));
  });

  it('rows stored before are found by id through the legacy partition, and are twins for the guard (by key and by nonce)', async () => {
    const { rows } = await pool.query(`SELECT id FROM carrier_events WHERE carrier_event_id = $1`, [oldKeys[0]]);
    expect(await count(`SELECT count(*) FROM carrier_events WHERE id = $1 AND created_at BETWEEN onceline_id_window_start($1) AND onceline_id_window_end($1)`, [rows[0].id])).toBe(1);
    expect((await pool.query(`SELECT carrier_event_twin('telnyx', $1, NULL) AS twin`, [oldKeys[0]])).rows[0].twin).toBe(rows[0].id);
    expect((await pool.query(`SELECT carrier_event_twin('telnyx', 'another-key', $1) AS twin`, [`nonce-${oldKeys[0]}`])).rows[0].twin).toBe(rows[0].id);
  });

  it('outbox_jobs: the old table is outbox_jobs_legacy with its rows; its job ids are still one job; new rows take ids after the old ones (the same sequence)', async () => {
    const { rows: parts } = await pool.query(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'outbox_jobs'::regclass ORDER BY c.relname`,
    );
    expect(parts.map((p) => p.name)[0]).toBe('outbox_jobs_legacy');
    expect(parts).toHaveLength(4);
    const { rows: old } = await pool.query(`SELECT id, job_id FROM outbox_jobs WHERE job_id LIKE 'legacy-%' ORDER BY id`);
    expect(old.map((r) => r.job_id)).toEqual(['legacy-pending', 'legacy-done']);
    expect((await pool.query(`SELECT outbox_job_twin('legacy-pending') AS twin`)).rows[0].twin).toBe(old[0].id);
    const { rows: fresh } = await pool.query(`INSERT INTO outbox_jobs (job_id, queue, name, data) VALUES ('after-migration', 'system', 'probe', '{}') RETURNING id, tableoid::regclass::text AS part`);
    expect(Number(fresh[0].id)).toBeGreaterThan(Number(old[1].id));
  });

  it('the app on the migrated database: a retry of an event stored before the migration is a duplicate; a new event lands in a new partition', async () => {
    app = await startTestApp({ databaseUrl: url, env: { TELNYX_PUBLIC_KEY: signer.publicKey } });
    const post = async (body: string) => (await (await fetch(`${app!.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).json()) as { status: string };
    expect(await post(telnyxFixture('message.received.json', { id: oldKeys[1], attempt: 2 }))).toEqual({ status: 'duplicate' });
    const fresh = randomUUID();
    expect(await post(telnyxFixture('message.received.json', { id: fresh }))).toEqual({ status: 'accepted' });
    const { rows } = await pool.query(`SELECT tableoid::regclass::text AS part FROM carrier_events WHERE carrier_event_id = $1`, [fresh]);
    // Until the bound (the day after tomorrow at the latest) new rows still fit the legacy partition.
    expect(rows).toHaveLength(1);
    expect(rows[0].part).toMatch(/^carrier_events_(legacy|p\d{8}t\d{6})$/);
  }, 60_000);

  const count = (sql: string, params: unknown[] = []) => db.count(sql, params);
});
