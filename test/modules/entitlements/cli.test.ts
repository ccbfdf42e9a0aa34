import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { TEST_REDIS_URL } from '../../support/env.js';
import { oneJsonDocument as oneDocument } from '../../support/run-node.js';
import { runCliHere } from '../../support/run-cli.js';

// Each command boots a Node process; on a busy 2-core machine a test of several takes a while.
const SLOW = 180_000;

describe('admin CLI: plans and billing customers', () => {
  let db: TestDatabase;
  const cli = (...args: string[]) => runCliHere([...args, '--json'], { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL });

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('plans:upsert prints the plan; again with another quantity changes it; another type is refused (a plan keeps its type)', async () => {
    const created = await cli('plans:upsert', '--lookup-key', 'sms_1000', '--type', 'sms_segments', '--quantity', '1000');
    expect(created.code).toBe(0);
    expect(oneDocument(created)).toEqual({ lookup_key: 'sms_1000', type: 'sms_segments', quantity: 1000, created_at: expect.any(String), updated_at: expect.any(String) });

    const changed = await cli('plans:upsert', '--lookup-key', 'sms_1000', '--type', 'sms_segments', '--quantity', '1200');
    expect(oneDocument(changed)).toMatchObject({ lookup_key: 'sms_1000', quantity: 1200 });

    const retyped = await cli('plans:upsert', '--lookup-key', 'sms_1000', '--type', 'call_minutes', '--quantity', '5');
    expect(retyped.code).not.toBe(0);
    expect(oneDocument(retyped).errors[0].detail).toMatch(/plan sms_1000 grants sms_segments; a plan's type never changes/);
    const badType = await cli('plans:upsert', '--lookup-key', 'x', '--type', 'mms', '--quantity', '5');
    expect(oneDocument(badType).errors[0].detail).toMatch(/--type must be one of sms_segments, call_minutes/);
    expect((await db.pool.query(`SELECT type, quantity::int FROM plans`)).rows).toEqual([{ type: 'sms_segments', quantity: 1200 }]);
  }, SLOW);

  it('plans:list prints every plan by lookup key, as plans:upsert left them', async () => {
    await cli('plans:upsert', '--lookup-key', 'calls_60', '--type', 'call_minutes', '--quantity', '60');
    const list = await cli('plans:list');
    expect(list.code).toBe(0);
    expect(oneDocument(list)).toEqual({
      data: [
        { lookup_key: 'calls_60', type: 'call_minutes', quantity: 60, created_at: expect.any(String), updated_at: expect.any(String) },
        { lookup_key: 'sms_1000', type: 'sms_segments', quantity: 1200, created_at: expect.any(String), updated_at: expect.any(String) },
      ],
    });
    const human = await runCliHere(['plans:list'], { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL });
    expect(human.stdout).toBe('calls_60  60 call_minutes per unit\nsms_1000  1200 sms_segments per unit\n');
  }, SLOW);

  it('accounts:create --billing-customer links the account; a customer already linked is refused', async () => {
    const created = await cli('accounts:create', '--name', 'Paying', '--billing-customer', 'cus_cli_1');
    expect(created.code).toBe(0);
    expect(oneDocument(created).account).toEqual({ id: expect.stringMatching(/^acct_/), name: 'Paying', billing_customer_id: 'cus_cli_1' });
    const twice = await cli('accounts:create', '--name', 'Copycat', '--billing-customer', 'cus_cli_1');
    expect(twice.code).not.toBe(0);
    expect(oneDocument(twice).errors[0].detail).toMatch(/billing customer cus_cli_1 belongs to another account/);
    expect(await db.count(`SELECT count(*) FROM accounts`)).toBe(1);
  }, SLOW);

  it('accounts:link-billing relinks an account and prints its audit line; a taken customer, or both --billing-customer and --unlink, are refused; --unlink removes the link', async () => {
    const created = oneDocument(await cli('accounts:create', '--name', 'Relinked'));
    const account = created.account.id;
    const linked = await cli('accounts:link-billing', '--account', account, '--billing-customer', 'cus_cli_2', '--by', 'ops');
    expect(linked.code).toBe(0);
    expect(oneDocument(linked)).toEqual({
      account: { id: account, record_type: 'account', name: 'Relinked', billing_customer_id: 'cus_cli_2', created_at: expect.any(String) },
      audit: { id: expect.any(String), account_id: account, previous_customer_id: null, customer_id: 'cus_cli_2', changed_by: 'ops', changed_at: expect.any(String) },
    });
    const taken = await cli('accounts:link-billing', '--account', account, '--billing-customer', 'cus_cli_1');
    expect(taken.code).not.toBe(0);
    expect(oneDocument(taken).errors[0].detail).toMatch(/billing customer cus_cli_1 belongs to another account/);
    const both = await cli('accounts:link-billing', '--account', account, '--billing-customer', 'cus_cli_3', '--unlink');
    expect(oneDocument(both).errors[0].detail).toMatch(/exactly one of --billing-customer <id> and --unlink/);
    const human = await runCliHere(['accounts:link-billing', '--account', account, '--unlink', '--by', 'ops'], { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL });
    expect(human.stdout).toMatch(new RegExp(`^audit \\d+: \\S+Z ops linked account ${account} to billing customer \\(none\\) \\(was cus_cli_2\\)`));
    expect((await db.pool.query(`SELECT previous_customer_id, customer_id, changed_by FROM billing_link_audit WHERE account_id = $1 ORDER BY id`, [account])).rows).toEqual([
      { previous_customer_id: null, customer_id: 'cus_cli_2', changed_by: 'ops' },
      { previous_customer_id: 'cus_cli_2', customer_id: null, changed_by: 'ops' },
    ]);
  }, SLOW);
});
