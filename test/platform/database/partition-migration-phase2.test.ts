import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { UsageLedger } from '../../../src/modules/billing/usage-ledger.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { migrate, MIGRATIONS_DIR } from '../../../src/platform/database/migrator.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { databaseUrl, TEST_PG_BASE } from '../../support/env.js';

/** The first migration of issue 44's phase 2 for the ledger and the call history. */
const FIRST = '0050';

/**
 * Migrations 0050 on, on a database that already holds usage rows in the old shape (one table,
 * UNIQUE (kind, resource_id) over all of it): the old table becomes the partition
 * usage_records_legacy with its rows, indexes, checks and foreign key as they were (no rewrite, no
 * index build), and an old usage row still dedupes: the same (kind, resource) recorded again
 * through the app is not billed twice.
 */
describe('partitioning an existing usage_records (migrations 0050-0052)', () => {
  const name = `onceline_t_mig2_${randomBytes(4).toString('hex')}`;
  const url = databaseUrl(name);
  let pool: pg.Pool;
  let app: TestApp | undefined;
  let indexesBefore: string[] = [];
  let constraintsBefore: string[] = [];

  beforeAll(async () => {
    const before = mkdtempSync(join(tmpdir(), 'onceline-mig2-'));
    try {
      for (const file of readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql') && f < FIRST)) copyFileSync(join(MIGRATIONS_DIR, file), join(before, file));
      await migrate(url, before);
    } finally {
      rmSync(before, { recursive: true, force: true });
    }
    pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
    await pool.query(`INSERT INTO accounts (id, name) VALUES ('acc_old', 'old ledger')`);
    // Rows as the ledger wrote them then: created_at = now() of the recording transaction.
    await pool.query(
      `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
       SELECT onceline_id('use'), 'acc_old', 'sms_inbound_segments', 'msg_old_' || i, 1, 4000, 4000,
              jsonb_build_object('resource', jsonb_build_object('type', 'message'), 'carrier_events', '[]'::jsonb, 'legacy', false,
                                 'price_rule', jsonb_build_object('quantity', 1, 'unit_price_micros', 4000))
         FROM generate_series(1, 20) AS i`,
    );
    indexesBefore = (await pool.query(`SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid = 'usage_records'::regclass ORDER BY indexrelid`)).rows.map((r) => r.name);
    constraintsBefore = (await pool.query(`SELECT conname FROM pg_constraint WHERE conrelid = 'usage_records'::regclass AND contype IN ('c', 'f') ORDER BY conname`)).rows.map((r) => r.conname);
    await migrate(url);
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await pool?.end();
    const admin = new pg.Client({ connectionString: TEST_PG_BASE });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  });

  async function count(sql: string, params: unknown[] = []): Promise<number> {
    const { rows } = await pool.query(sql, params);
    return Number(Object.values(rows[0])[0]);
  }

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
    expect(after.map((r) => r.name)).toEqual(indexesBefore.map((n) => n.replace(/^usage_records_/, 'usage_records_legacy_').replace('legacy_kind_resource_id_key', 'legacy_key')));
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
});
