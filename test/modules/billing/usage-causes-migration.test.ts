import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate, MIGRATIONS_DIR } from '../../../src/platform/database/migrator.js';
import { databaseUrl, TEST_PG_BASE } from '../../support/env.js';

/** The migration that gave usage rows their cause: the first file it applies to a database that predates it. */
const CAUSES_MIGRATION = '0030_usage_causes.sql';

/**
 * A database that already holds usage rows when migration 0030 (usage_records.cause) arrives:
 * every row gets the cause that can be derived from its resource, marked legacy, and the NOT NULL
 * and CHECK that new rows are held to pass for the old ones too.
 */
describe('migration 0030 on a ledger that already holds rows', () => {
  const name = `onceline_t_mig_${randomBytes(5).toString('hex')}`;
  const url = databaseUrl(name);
  let before: string;
  let pool: pg.Pool;

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: TEST_PG_BASE });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    // The migrations as they stood before usage causes.
    before = await mkdtemp(join(tmpdir(), 'onceline-migrations-'));
    for (const file of (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql') && f < CAUSES_MIGRATION)) {
      await copyFile(join(MIGRATIONS_DIR, file), join(before, file));
    }
    await migrate(url, before);
    pool = new pg.Pool({ connectionString: url, max: 2 });
    // pool.end() resolves before its sockets close: the DROP ... WITH (FORCE) below may terminate
    // one mid-close, and an unheard 57P01 would end the test file (as createTestDatabase's pool).
    pool.on('error', () => undefined);
  });

  afterAll(async () => {
    await pool?.end();
    await rm(before, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: TEST_PG_BASE });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  it('backfills a cause for each kind of row, legacy and with no carrier event, and the CHECK holds', async () => {
    await pool.query(`INSERT INTO accounts (id, name) VALUES ('acct_old', 'old ledger')`);
    await pool.query(
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, carrier_message_id)
       VALUES ('msg_out', 'acct_old', 'outbound', '+15550100000', '+15550100001', 'hi', 'delivered', 2, 'UCS-2', 'telnyx', 'tx-1'),
              ('msg_in', 'acct_old', 'inbound', '+15550100001', '+15550100000', 'yo', 'received', 1, 'GSM-7', 'twilio', 'SM1')`,
    );
    await pool.query(`INSERT INTO message_status_history (message_id, status, detail) VALUES ('msg_out', 'sending', NULL), ('msg_out', 'sent', 'found_by_lookup')`);
    await pool.query(
      `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros) VALUES
         ('use_out', 'acct_old', 'sms_outbound_segments', 'msg_out', 2, 4000, 8000),
         ('use_in', 'acct_old', 'sms_inbound_segments', 'msg_in', 1, 4000, 4000),
         ('use_rent', 'acct_old', 'number_months', 'num_1:2026-11', 1, 1000000, 1000000)`,
    );

    const applied = await migrate(url);
    expect(applied.applied[0]).toBe(CAUSES_MIGRATION);

    const { rows } = await pool.query(`SELECT id, cause FROM usage_records ORDER BY id`);
    const causes = Object.fromEntries(rows.map((r) => [r.id, r.cause]));
    expect(causes.use_out).toMatchObject({
      resource: { type: 'message', id: 'msg_out' }, transition: 'sending → sent', settled_by: 'found_by_lookup',
      carrier: 'telnyx', carrier_resource_id: 'tx-1', carrier_events: [], legacy: true,
      price_rule: { unit: 'segment', quantity: 2, unit_price_micros: 4000, segments: 2, encoding: 'UCS-2' },
    });
    expect(causes.use_in).toMatchObject({ transition: '→ received', carrier: 'twilio', carrier_resource_id: 'SM1', legacy: true, price_rule: { encoding: 'GSM-7', quantity: 1 } });
    expect(causes.use_rent).toMatchObject({ resource: { type: 'number', id: 'num_1' }, transition: 'rental', legacy: true, price_rule: { month: '2026-11', quantity: 1 } });
    // A row without a cause can no longer be written.
    await expect(
      pool.query(`INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros) VALUES ('use_x', 'acct_old', 'sms_inbound_segments', 'msg_x', 1, 1, 1)`),
    ).rejects.toThrow(/null value in column "cause"/);
  });
});
