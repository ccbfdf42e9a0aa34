import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { TEST_REDIS_URL } from '../../support/env.js';
import { FakeNumberCarrier } from '../../support/fake-number-carrier.js';
import { oneDocument } from '../../support/run-node.js';
import { runCliHere } from '../../support/run-cli.js';

const SLOW = 180_000;


/** The operator's way in for numbers the platform already holds: numbers:assign, one JSON document under --json. */
describe('numbers:assign', () => {
  let db: TestDatabase;
  const carrier = new FakeNumberCarrier(['+15550302001', '+15550302002']);
  const cli = (...args: string[]) => runCliHere([...args, '--json'], { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, ...carrier.env() });
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    await carrier.start();
    [alice, bob] = await Promise.all(['alice', 'bob'].map(async (name) => oneDocument(await cli('accounts:create', '--name', name)).account.id));
  }, SLOW);
  afterAll(async () => {
    await db?.drop();
    await carrier.stop();
  });

  it('assigns a number and prints it as the API shows it; again to the same account prints the same number; another account: exit 1, clear message, nothing written', async () => {
    const assigned = await cli('numbers:assign', '--account', alice, '--number', '+15550301010', '--carrier', 'twilio');
    expect(assigned.code).toBe(0);
    const number = oneDocument(assigned);
    expect(number).toMatchObject({ id: expect.stringMatching(/^num_/), record_type: 'phone_number', phone_number: '+15550301010', carrier: 'twilio', status: 'active', voice: null });
    const again = await cli('numbers:assign', '--account', alice, '--number', '+15550301010', '--carrier', 'twilio');
    expect(oneDocument(again).id).toBe(number.id);

    const taken = await cli('numbers:assign', '--account', bob, '--number', '+15550301010', '--carrier', 'twilio');
    expect(taken.code).toBe(1);
    expect(oneDocument(taken).errors[0].detail).toMatch(/\+15550301010 is held by another account/);
    expect(await db.count(`SELECT count(*) FROM phone_numbers WHERE account_id = $1`, [bob])).toBe(0);
  }, SLOW);

  it('refuses a bad number, carrier or account with exit 1 and one JSON document naming it', async () => {
    const runs = await Promise.all([
      cli('numbers:assign', '--account', alice, '--number', '5550301011', '--carrier', 'telnyx'),
      cli('numbers:assign', '--account', alice, '--number', '+15550301011', '--carrier', 'bandwidth'),
      cli('numbers:assign', '--account', 'acct_nobody', '--number', '+15550301011', '--carrier', 'telnyx'),
    ]);
    expect(runs.map((r) => r.code)).toEqual([1, 1, 1]);
    expect(runs.map((r) => oneDocument(r).errors[0].detail)).toEqual([
      expect.stringMatching(/--number must be an E.164/),
      expect.stringMatching(/--carrier must be one of/),
      expect.stringMatching(/no account acct_nobody/),
    ]);
    expect(await db.count(`SELECT count(*) FROM phone_numbers WHERE phone_number = '+15550301011'`)).toBe(0);
  }, SLOW);

  it('numbers:search, numbers:order (with --idempotency-key), numbers:import and billing:run-rentals each print one JSON document', async () => {
    const found = oneDocument(await cli('numbers:search', '--carrier', 'twilio', '--contains', '2001'));
    expect(found.data).toEqual([expect.objectContaining({ phone_number: '+15550302001', carrier: 'twilio', features: ['sms', 'voice'] })]);

    const [ordered, replayed] = await Promise.all(
      [1, 2].map(async () => oneDocument(await cli('numbers:order', '--account', alice, '--carrier', 'twilio', '--number', '+15550302001', '--idempotency-key', 'cli-order-1'))),
    );
    expect(ordered.data).toMatchObject({ id: expect.stringMatching(/^ord_/), status: 'pending', phone_numbers: [{ phone_number: '+15550302001', status: 'ordering' }] });
    expect(replayed.data.id).toBe(ordered.data.id);

    carrier.held.set('+15550302999', { carrier: 'vonage', id: '15550302999', config: {} });
    carrier.held.set('+15550301010', { carrier: 'vonage', id: '15550301010', config: {} });
    const imported = oneDocument(await cli('numbers:import', '--carrier', 'vonage'));
    // +15550301010 is held by alice (assigned above): not listed.
    expect(imported.data).toEqual([{ phone_number: '+15550302999', carrier: 'vonage' }]);

    const month = new Date().toISOString().slice(0, 7);
    const first = oneDocument(await cli('billing:run-rentals', '--period', month));
    expect(first).toEqual({ period: month, numbers: 1, billed: 1 });
    expect(oneDocument(await cli('billing:run-rentals', '--period', month))).toEqual({ period: month, numbers: 1, billed: 0 });
    const bad = await cli('billing:run-rentals', '--period', '2026-1');
    expect(bad.code).toBe(1);
    expect(oneDocument(bad).errors[0].detail).toMatch(/--period must be a calendar month YYYY-MM/);
  }, SLOW);

  // Last: its releasing number would count in the rentals above.
  it('numbers:release-retry queues the release of a number stuck releasing again, printing its failed attempts; a number not releasing: exit 1', async () => {
    const number = oneDocument(await cli('numbers:assign', '--account', alice, '--number', '+15550301020', '--carrier', 'telnyx'));
    const notReleasing = await cli('numbers:release-retry', number.id);
    expect(notReleasing.code).toBe(1);
    expect(oneDocument(notReleasing).errors[0].detail).toMatch(/is not a releasing number/);
    await db.pool.query(`UPDATE phone_numbers SET status = 'releasing', release_attempts = 8, release_error = 'telnyx shows no number' WHERE id = $1`, [number.id]);
    const retried = await cli('numbers:release-retry', number.id);
    expect(retried.code).toBe(0);
    expect(oneDocument(retried).data).toEqual({ id: number.id, phone_number: '+15550301020', carrier: 'telnyx', release_attempts: 8, release_error: 'telnyx shows no number' });
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id LIKE $1`, [`release-${number.id}-retry-%`])).toBe(1);
  }, SLOW);
});
