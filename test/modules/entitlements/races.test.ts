import { beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomInt } from 'node:crypto';
import pg from 'pg';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { Plans } from '../../../src/modules/entitlements/plans.js';
import { pausePoint } from '../../support/pause.js';
import { deliverStripe, invoicePaid, stripeEventId, TEST_STRIPE_SECRET } from '../../support/stripe-signing.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

const unique = (prefix: string) => `${prefix}_${randomBytes(6).toString('hex')}`;

/**
 * A trigger that makes the granting transaction of one delivery fail after its entitlement
 * INSERT, as a serialization failure would (so it answers 503 retryable). Named `test_zz_…` so
 * that it fires after a pause point's trigger on the same row (triggers fire in name order).
 */
async function failGrantOf(databaseUrl: string, providerEventId: string): Promise<{ remove(): Promise<void> }> {
  const name = `test_zz_fail_${randomInt(1, 2 ** 31 - 1)}`;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query(`
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.provider_event_id = '${providerEventId}' THEN RAISE EXCEPTION 'planted rollback' USING ERRCODE = '40001'; END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER ${name} AFTER INSERT ON entitlements FOR EACH ROW EXECUTE FUNCTION ${name}();
  `);
  return {
    async remove() {
      await client.query(`DROP TRIGGER IF EXISTS ${name} ON entitlements; DROP FUNCTION IF EXISTS ${name}()`);
      await client.end();
    },
  };
}

/** The entitlement guard interleaved on purpose with its competitor (test/support/pause.ts). */
describe('entitlement grant races', () => {
  const t = withTestApp({ env: { STRIPE_WEBHOOK_SECRET: TEST_STRIPE_SECRET } });
  let customerId: string;
  const deliver = (body: string) => deliverStripe(t.app.url, body);
  const paid = (invoiceId: string, eventId = stripeEventId()) => invoicePaid({ invoiceId, customer: customerId, eventId, lines: [{ lookupKey: 'race_sms', quantity: 2 }] });
  const count = (sql: string, params: unknown[] = []) => t.db.count(sql, params);
  /** Statements waiting on a lock another transaction holds (a row or a transaction), not on a pause point's. */
  const waitingOnLock = (sql: string) =>
    count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event <> 'advisory' AND query LIKE $1`, [`%${sql}%`]);
  const outcomesOf = async (invoiceId: string) =>
    (await t.db.pool.query(`SELECT outcome, provider_event_id FROM entitlement_outcomes WHERE invoice_id = $1 ORDER BY id`, [invoiceId])).rows;

  beforeAll(async () => {
    customerId = unique('cus');
    await t.app.app.get(AccountsService).createAccount('Racer', customerId);
    await t.app.app.get(Plans).upsert('race_sms', 'sms_segments', 500);
  });

  for (const [what, sameEvent] of [['the same event delivered twice', true], ['the invoice re-sent under a new event id', false]] as const) {
    it(`${what}, at once: the second waits for the first's commit, then answers already_applied with its entitlement; one grant, one event`, async () => {
      const invoiceId = unique('in');
      const eventId = stripeEventId();
      const pause = await pausePoint(t.db.url, { table: 'entitlements', on: 'INSERT', when: `NEW.invoice_id = '${invoiceId}'` });
      let applied, replayed;
      try {
        await pause.hold();
        const first = deliver(paid(invoiceId, eventId));
        await pause.waitUntilPaused(); // inserted, not committed
        const second = deliver(paid(invoiceId, sameEvent ? eventId : stripeEventId()));
        await waitFor(() => waitingOnLock('INSERT INTO entitlements'), (n) => n === 1, { what: 'the second delivery to wait on the first one\'s entitlement' });
        await pause.release();
        [applied, replayed] = await Promise.all([first, second]);
      } finally {
        await pause.remove();
      }

      expect(applied.status).toBe(200);
      expect(applied.body.outcome).toBe('applied');
      expect(replayed.status).toBe(200);
      expect(replayed.body).toEqual({ ...applied.body, outcome: 'already_applied' });
      expect(await count(`SELECT count(*) FROM entitlements WHERE invoice_id = $1`, [invoiceId])).toBe(1);
      expect(await count(`SELECT count(*) FROM outbound_events WHERE type = 'entitlement.granted' AND payload->>'invoice_id' = $1`, [invoiceId])).toBe(1);
      expect((await outcomesOf(invoiceId)).map((o) => o.outcome)).toEqual(['applied', 'already_applied']);
    });
  }

  it('the first rolls back after its INSERT while the second waits: the second applies (no "processing" claim survives), the first\'s retry is already_applied', async () => {
    const invoiceId = unique('in');
    const doomed = stripeEventId();
    const survivor = stripeEventId();
    const pause = await pausePoint(t.db.url, { table: 'entitlements', on: 'INSERT', when: `NEW.invoice_id = '${invoiceId}'` });
    const failing = await failGrantOf(t.db.url, doomed);
    try {
      await pause.hold();
      const first = deliver(paid(invoiceId, doomed));
      await pause.waitUntilPaused();
      const second = deliver(paid(invoiceId, survivor));
      await waitFor(() => waitingOnLock('INSERT INTO entitlements'), (n) => n === 1, { what: 'the second delivery to wait on the first one\'s entitlement' });
      await pause.release();
      const [rolledBack, applied] = await Promise.all([first, second]);

      expect(rolledBack.status).toBe(503);
      expect(rolledBack.retryAfter).toMatch(/^\d+$/);
      expect(rolledBack.body).toMatchObject({ outcome: 'retryable' });
      expect(applied.status).toBe(200);
      expect(applied.body.outcome).toBe('applied');
    } finally {
      await pause.remove();
      await failing.remove();
    }
    expect(await count(`SELECT count(*) FROM entitlements WHERE invoice_id = $1 AND provider_event_id = $2`, [invoiceId, survivor])).toBe(1);
    const retry = await deliver(paid(invoiceId, doomed));
    expect(retry.body.outcome).toBe('already_applied');
    expect(await count(`SELECT count(*) FROM entitlements WHERE invoice_id = $1`, [invoiceId])).toBe(1);
    expect(await count(`SELECT count(*) FROM outbound_events WHERE type = 'entitlement.granted' AND payload->>'invoice_id' = $1`, [invoiceId])).toBe(1);
    expect((await outcomesOf(invoiceId)).map((o) => [o.outcome, o.provider_event_id])).toEqual([['applied', survivor], ['already_applied', doomed]]);
  });

  it('a first transaction rolled back on its own: 503 retryable, nothing kept but the raw event, and the retry applies', async () => {
    const invoiceId = unique('in');
    const eventId = stripeEventId();
    const failing = await failGrantOf(t.db.url, eventId);
    let refused;
    try {
      refused = await deliver(paid(invoiceId, eventId));
    } finally {
      await failing.remove();
    }
    expect(refused.status).toBe(503);
    expect(refused.body.outcome).toBe('retryable');
    expect(await count(`SELECT count(*) FROM entitlements WHERE invoice_id = $1`, [invoiceId])).toBe(0);
    expect(await count(`SELECT count(*) FROM entitlement_outcomes WHERE invoice_id = $1`, [invoiceId])).toBe(0);
    expect(await count(`SELECT count(*) FROM billing_events WHERE provider_event_id = $1`, [eventId])).toBe(1);

    const retry = await deliver(paid(invoiceId, eventId));
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ outcome: 'applied', entitlements: [{ type: 'sms_segments', quantity: 1000 }] });
    expect(await count(`SELECT count(*) FROM outbound_events WHERE type = 'entitlement.granted' AND payload->>'invoice_id' = $1`, [invoiceId])).toBe(1);
  });
});
