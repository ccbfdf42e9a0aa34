import { beforeAll, describe, expect, it } from '@jest/globals';
import { NotFoundException } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { UsageLedger } from '../../../src/modules/billing/usage-ledger.js';
import { UsageRecords } from '../../../src/modules/billing/usage-records.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { partitionsRead } from '../../support/partition-plans.js';
import { withTestApp } from '../../support/with-test-app.js';

const ACCOUNT = 'acc_usage_lookup';
const CAUSE = { resource: { type: 'message', id: 'x' }, transition: '→ received', carrier_events: [], price_rule: { unit: 'segment' } };
const PAST_DAYS = 5;

/**
 * GET /v2/usage/records/:id (UsageRecords.get): usage_records is partitioned by created_at, its
 * recording transaction's now(), and the id is minted later in that transaction, so the row is
 * looked for in the partitions from a day before the id's time to just after it: one partition
 * here, where the ledger has days of them. A row outside that window (planted: a transaction two
 * days old when it minted the id), and an unknown id, are looked for again in every partition.
 */
describe('usage_records: a row by its id reads the partition of its id\'s time', () => {
  const t = withTestApp({ http: false });
  const records = () => t.app.app.get(UsageRecords);
  const partitionOf = (id: string) => t.db.pool.query(`SELECT tableoid::regclass::text AS part FROM usage_records WHERE id = $1`, [id]).then((r) => r.rows[0].part as string);
  const partitionCount = async () => Number((await t.db.pool.query(`SELECT count(*) FROM pg_inherits WHERE inhparent = 'usage_records'::regclass`)).rows[0].count);

  beforeAll(async () => {
    await t.db.pool.query(`INSERT INTO accounts (id, name) VALUES ($1, 'usage lookup') ON CONFLICT DO NOTHING`, [ACCOUNT]);
    for (let day = 1; day <= PAST_DAYS; day++) {
      await t.db.pool.query(`SELECT onceline_add_partition('usage_records', date_trunc('day', now()) - make_interval(days => $1), date_trunc('day', now()) - make_interval(days => $1 - 1))`, [day]);
    }
  });

  it('a row recorded now: one statement, reading only the partitions within the window of its id\'s time', async () => {
    const resource = `msg_${randomUUID()}`;
    await t.app.app.get(UnitOfWork).run((tx) => t.app.app.get(UsageLedger).record(tx, { accountId: ACCOUNT, kind: 'sms_inbound_segments', resourceId: resource, quantity: 1, cause: CAUSE as never }));
    const { rows } = await t.db.pool.query(`SELECT id FROM usage_records WHERE resource_id = $1`, [resource]);
    const id = rows[0].id as string;
    expect(await partitionCount()).toBeGreaterThanOrEqual(PAST_DAYS + 3);
    const { result, statements } = await partitionsRead(['usage_records'], () => records().get(ACCOUNT, id));
    expect(result).toMatchObject({ id, resource_id: resource, quantity: 1 });
    // The partitions the window reaches: the row's, and (partitions of a day here, 30 days in
    // production) the one before it when the day before the id's time began in it; no other.
    const { rows: reached } = await t.db.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), $$FROM \\('([^']*)'\\) TO \\('([^']*)'\\)$$) AS b
        WHERE i.inhparent = 'usage_records'::regclass
          AND b[2]::timestamptz > onceline_id_window_start($1) - interval '1 day' AND b[1]::timestamptz <= onceline_id_window_end($1)
        ORDER BY 1`,
      [id],
    );
    expect(reached.map((r) => r.name)).toContain(await partitionOf(id));
    expect(reached.length).toBeLessThan(await partitionCount());
    expect(statements.map((s) => s.scanned.usage_records)).toEqual([reached.map((r) => r.name)]);
  }, 30_000);

  it('a row of a transaction older than the window (created_at two days before its id) is still found, by the second look in every partition', async () => {
    const resource = `msg_${randomUUID()}`;
    const { rows } = await t.db.pool.query(
      `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause, created_at)
       VALUES (onceline_id('use'), $1, 'sms_inbound_segments', $2, 1, 0, 0, $3, now() - interval '2 days') RETURNING id`,
      [ACCOUNT, resource, JSON.stringify({ ...CAUSE, legacy: false, price_rule: { quantity: 1, unit_price_micros: 0 } })],
    );
    const id = rows[0].id as string;
    const { result, statements } = await partitionsRead(['usage_records'], () => records().get(ACCOUNT, id));
    expect(result).toMatchObject({ id, resource_id: resource });
    expect(statements).toHaveLength(2);
    expect(statements[0].scanned.usage_records).not.toContain(await partitionOf(id));
    expect(statements[1].scanned.usage_records).toHaveLength(await partitionCount());
  }, 30_000);

  it('an unknown id: 404, after the same two looks', async () => {
    const { result, statements } = await partitionsRead(['usage_records'], () => records().get(ACCOUNT, 'use_01jd5x2m3n4p5q6r7s8t9v0w1x').catch((err: unknown) => err));
    expect(result).toBeInstanceOf(NotFoundException);
    expect(statements).toHaveLength(2);
    expect(statements[0].scanned.usage_records.length).toBeLessThanOrEqual(1);
  }, 30_000);
});
