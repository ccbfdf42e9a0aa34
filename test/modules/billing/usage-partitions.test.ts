import { describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { UsageLedger } from '../../../src/modules/billing/usage-ledger.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { PartitionMaintenance } from '../../../src/platform/retention/partition-maintenance.js';
import { TEST_REDIS_URL } from '../../support/env.js';
import { boundaryIn as boundaryOf, lockTwinKey, waitingOnAdvisoryLock } from '../../support/partitions.js';
import { runCliHere } from '../../support/run-cli.js';
import { withTestApp } from '../../support/with-test-app.js';

const DAY = 86_400_000;
const ACCOUNT = 'acc_usage_partitions';
const CAUSE = { resource: { type: 'message', id: 'x' }, transition: '→ received', carrier_events: [], price_rule: { unit: 'segment' } };

/**
 * usage_records, the billing ledger, partitioned by created_at (migration 0052): (kind,
 * resource_id) stays one fact across a partition boundary (usage_record_twin), and retention drops
 * a usage partition only when a recorded export (`usage:export`) with a matching row count covers
 * its whole period, whatever its age.
 */
describe('usage_records: one fact per (kind, resource) across partitions; never dropped without an export', () => {
  const t = withTestApp({ http: false });
  const record = (resourceId: string) =>
    t.app.app.get(UnitOfWork).run((tx) =>
      t.app.app.get(UsageLedger).record(tx, { accountId: ACCOUNT, kind: 'sms_inbound_segments', resourceId, quantity: 1, cause: CAUSE as never }),
    );
  const partsOf = (resourceId: string) =>
    t.db.pool.query<{ part: string }>(`SELECT tableoid::regclass::text AS part FROM usage_records WHERE resource_id = $1`, [resourceId]).then((r) => r.rows.map((row) => row.part));
  const env = () => ({ DATABASE_URL: t.db.url, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'error' });

  /** A ledger row of `resource` as the ledger writes it (created_at: now() of `client`'s transaction), in `client`'s transaction. */
  const insertTwin = (client: pg.PoolClient, resource: string) =>
    client.query(
      `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
       VALUES (onceline_id('use'), $1, 'sms_inbound_segments', $2, 1, 0, 0, $3)`,
      [ACCOUNT, resource, JSON.stringify({ ...CAUSE, legacy: false, price_rule: { quantity: 1, unit_price_micros: 0 } })],
    );

  const account = () => t.db.pool.query(`INSERT INTO accounts (id, name) VALUES ($1, 'usage partitions') ON CONFLICT DO NOTHING`, [ACCOUNT]);
  const boundaryIn = async (ms: number) => (await account(), boundaryOf(t.db.pool, 'usage_records', ms));

  it('the same usage recorded again just after the boundary is not billed again: one row, before it', async () => {
    const { before, passed } = await boundaryIn(1000);
    const resource = `msg_${randomUUID()}`;
    expect(await record(resource)).toBe(true);
    await passed();
    expect(await record(resource)).toBe(false);
    expect(await partsOf(resource)).toEqual([before]);
  }, 30_000);

  it.each([
    ['commits', false, 'before'],
    ['rolls back', true, 'after'],
  ] as const)('racing across the boundary with a twin the test holds uncommitted, which then %s: recorded = %s, one row', async (ending, recorded, side) => {
    const { before, after, passed } = await boundaryIn(1000);
    const resource = `msg_${randomUUID()}`;
    const holder = await t.db.pool.connect();
    try {
      await holder.query('BEGIN');
      // As the ledger's INSERT does: no stored twin, so the key's lock is taken; then the row, before the boundary.
      expect((await holder.query(`SELECT usage_record_twin('sms_inbound_segments', $1) AS twin`, [resource])).rows[0].twin).toBeNull();
      await insertTwin(holder, resource);
      await passed();
      const racing = record(resource);
      await waitingOnAdvisoryLock(t.db.pool, "the ledger's insert to wait on the key's lock the test holds");
      await holder.query(ending === 'commits' ? 'COMMIT' : 'ROLLBACK');
      expect(await racing).toBe(recorded);
      expect(await partsOf(resource)).toEqual([side === 'before' ? before : after]);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  }, 30_000);

  it('the key\'s lock held by the test before any look, the twin written only once the ledger waits on it (after the boundary): the ledger looks after the lock, finds it, bills nothing', async () => {
    const { before, passed } = await boundaryIn(1000);
    const resource = `msg_${randomUUID()}`;
    const holder = await t.db.pool.connect();
    try {
      // The test's transaction begins before the boundary: its row's created_at (now()) falls before it.
      await holder.query('BEGIN');
      await lockTwinKey((sql, params) => holder.query(sql, params), `usage-record:sms_inbound_segments:${resource}`);
      await passed();
      const racing = record(resource);
      await waitingOnAdvisoryLock(t.db.pool, "the ledger's insert to wait on the key's lock the test holds");
      await insertTwin(holder, resource);
      await holder.query('COMMIT');
      expect(await racing).toBe(false);
      expect(await partsOf(resource)).toEqual([before]);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  }, 30_000);

  describe('retention: a partition past USAGE_RETENTION_HOURS goes only after a matching export covers its period', () => {
    const run = async () => (await t.app.app.get(PartitionMaintenance).maintain())!.find((r) => r.table === 'usage_records')!;
    const exists = async (name: string) => (await t.db.count(`SELECT count(*) FROM pg_class WHERE relname = $1`, [name])) === 1;
    const dir = mkdtempSync(join(tmpdir(), 'usage-export-'));

    /** A 30-day partition ending `daysAgo` days before today (older than the 400-day retention), with `rows` ledger rows in it. */
    async function oldPartition(daysAgo: number, rows: number): Promise<{ name: string; from: Date; to: Date }> {
      await account();
      const to = new Date(Math.floor(Date.now() / DAY) * DAY - daysAgo * DAY);
      const from = new Date(to.getTime() - 30 * DAY);
      const { rows: made } = await t.db.pool.query(`SELECT onceline_add_partition('usage_records', $1, $2) AS name`, [from, to]);
      await addRows(from, rows);
      return { name: made[0].name, from, to };
    }
    async function addRows(from: Date, n: number) {
      await t.db.pool.query(
        `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause, created_at)
         SELECT onceline_id('use'), $1, 'sms_inbound_segments', 'msg_' || gen_random_uuid(), 2, 4000, 8000,
                jsonb_build_object('resource', jsonb_build_object('type', 'message'), 'carrier_events', '[]'::jsonb, 'legacy', true,
                                   'price_rule', jsonb_build_object('quantity', 2, 'unit_price_micros', 4000)),
                $2::timestamptz + make_interval(hours => i)
           FROM generate_series(1, $3::int) AS i`,
        [ACCOUNT, from, n],
      );
    }
    const exportOf = async (from: Date, to: Date, file: string) => {
      const out = await runCliHere(['usage:export', '--from', from.toISOString(), '--to', to.toISOString(), '--out', join(dir, file), '--json'], env());
      expect(out.code).toBe(0);
      return JSON.parse(out.stdout).export;
    };

    it('not dropped without an export, however old; dropped once an export of its whole period is recorded', async () => {
      const p = await oldPartition(500, 3);
      expect(await run()).toMatchObject({ held: expect.arrayContaining([p.name]) });
      expect(await exists(p.name)).toBe(true);
      const status = (await t.app.app.get(PartitionMaintenance).status()).find((s) => s.table === 'usage_records')!;
      expect(status.held).toContain(p.name);

      // An export of part of the period covers nothing of the rest: still kept.
      await exportOf(p.from, new Date(p.to.getTime() - DAY), 'part.jsonl');
      expect((await run()).held).toContain(p.name);
      expect(await exists(p.name)).toBe(true);

      const recorded = await exportOf(p.from, p.to, 'whole.jsonl');
      expect(recorded).toMatchObject({ row_count: 3, format: 'jsonl', file: join(dir, 'whole.jsonl') });
      const text = readFileSync(join(dir, 'whole.jsonl'));
      expect(recorded.sha256).toBe(createHash('sha256').update(text).digest('hex'));
      const lines = text.toString().trimEnd().split('\n').map((l) => JSON.parse(l));
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatchObject({ account_id: ACCOUNT, kind: 'sms_inbound_segments', quantity: 2, unit_price_micros: 4000, amount_micros: 8000 });
      expect(new Date(lines[0].created_at).getTime()).toBe(p.from.getTime() + 3_600_000);

      expect(await run()).toMatchObject({ dropped: [p.name] });
      expect(await exists(p.name)).toBe(false);
    }, 60_000);

    it('not dropped when the export no longer matches (a row recorded in its period after it ran); dropped after the period is exported again', async () => {
      const p = await oldPartition(600, 2);
      await exportOf(p.from, p.to, 'before-late.jsonl');
      await addRows(new Date(p.from.getTime() + 5 * DAY), 1);
      expect((await run()).held).toContain(p.name);
      expect(await exists(p.name)).toBe(true);
      expect(await exportOf(p.from, p.to, 'after-late.jsonl')).toMatchObject({ row_count: 3 });
      expect(await run()).toMatchObject({ dropped: [p.name] });
    }, 60_000);

    it('two exports together covering the period (calendar months across a 30-day partition) release it', async () => {
      const p = await oldPartition(700, 4);
      const middle = new Date(p.from.getTime() + 10 * DAY + 7);
      await exportOf(new Date(p.from.getTime() - DAY), middle, 'first.jsonl');
      expect((await run()).held).toContain(p.name);
      await exportOf(middle, new Date(p.to.getTime() + DAY), 'second.jsonl');
      expect(await run()).toMatchObject({ dropped: [p.name] });
    }, 60_000);

    it('a usage partition a dead run detached but did not drop: dropped by the next run when an export holds its rows; kept when the export ran after the detach (it could not read them)', async () => {
      const exported = await oldPartition(800, 2);
      await exportOf(exported.from, exported.to, 'before-detach.jsonl');
      await t.db.pool.query(`ALTER TABLE usage_records DETACH PARTITION ${exported.name}`);
      const missed = await oldPartition(900, 2);
      await t.db.pool.query(`ALTER TABLE usage_records DETACH PARTITION ${missed.name}`);
      expect(await exportOf(missed.from, missed.to, 'after-detach.jsonl')).toMatchObject({ row_count: 0 });
      const result = await run();
      expect(result.dropped).toContain(exported.name);
      expect(result.dropped).not.toContain(missed.name);
      expect(await exists(exported.name)).toBe(false);
      expect(await exists(missed.name)).toBe(true);
      await t.db.pool.query(`DROP TABLE ${missed.name}`);
    }, 60_000);

    it('usage:export refuses a period that has not ended, or one given twice over, and records nothing', async () => {
      const future = await runCliHere(['usage:export', '--from', new Date(Date.now() - DAY).toISOString(), '--to', new Date(Date.now() + DAY).toISOString(), '--out', join(dir, 'x.jsonl'), '--json'], env());
      expect(future.code).not.toBe(0);
      expect(JSON.parse(future.stdout).errors[0].detail).toMatch(/has not ended/);
      const both = await runCliHere(['usage:export', '--period', '2020-01', '--from', '2020-01-01T00:00:00Z', '--to', '2020-02-01T00:00:00Z', '--out', join(dir, 'y.jsonl'), '--json'], env());
      expect(both.code).not.toBe(0);
      expect(await t.db.count(`SELECT count(*) FROM usage_exports WHERE file LIKE '%x.jsonl' OR file LIKE '%y.jsonl'`)).toBe(0);
    }, 60_000);
  });
});
