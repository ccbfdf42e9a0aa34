import { beforeAll, describe, expect, it } from '@jest/globals';
import { NumberRentals } from '../../../src/modules/numbers/number-rentals.js';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import { ApiClient } from '../../support/api-client.js';
import { pausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

/** Monthly rental: one usage row per number per calendar month, however often and however concurrently the run goes. */
describe('billing:run-rentals', () => {
  const t = withTestApp({ http: false });
  const rentals = () => t.app.app.get(NumberRentals);
  const rows = (period: string) => t.db.count(`SELECT count(*) FROM usage_records WHERE kind = 'number_months' AND resource_id LIKE $1`, [`%:${period}`]);
  let ids: Record<string, string>;

  beforeAll(async () => {
    const customer = await ApiClient.forNewAccount(t.app);
    const held = async (phoneNumber: string, activated: string, released?: string, status = released ? 'released' : 'active') => {
      const number = await customer.assignNumber(phoneNumber, 'telnyx');
      await t.db.pool.query(`UPDATE phone_numbers SET activated_at = $2, released_at = $3, status = $4 WHERE id = $1`, [number.id, activated, released ?? null, status]);
      return number.id;
    };
    ids = {
      sinceMidOctober: await held('+13125550301', '2026-10-15T12:00:00Z'),
      releasedEarlyOctober: await held('+13125550302', '2026-09-01T00:00:00Z', '2026-10-05T00:00:00Z'),
      fromLateNovember: await held('+13125550303', '2026-11-20T00:00:00Z'),
      releasedInSeptember: await held('+13125550304', '2026-08-01T00:00:00Z', '2026-09-30T23:59:59Z'),
      releasing: await held('+13125550305', '2026-10-01T00:00:00Z', undefined, 'releasing'),
    };
    await customer.assignNumber('+13125550306', 'telnyx').then((n) => t.db.pool.query(`UPDATE phone_numbers SET status = 'failed', activated_at = NULL WHERE id = $1`, [n.id]));
  });

  it('bills each number held in the month once, the whole month (not prorated); repeated, it bills nothing more', async () => {
    expect(await rentals().run('2026-10')).toEqual({ period: '2026-10', numbers: 3, billed: 3 });
    expect(await rentals().run('2026-10')).toEqual({ period: '2026-10', numbers: 3, billed: 0 });
    const billed = await t.db.pool.query(`SELECT resource_id, quantity, amount_micros FROM usage_records WHERE kind = 'number_months' ORDER BY resource_id`);
    expect(billed.rows.map((r) => r.resource_id).sort()).toEqual([ids.sinceMidOctober, ids.releasedEarlyOctober, ids.releasing].map((id) => `${id}:2026-10`).sort());
    expect(billed.rows.every((r) => Number(r.quantity) === 1 && Number(r.amount_micros) === t.app.config.PRICE_NUMBER_MONTH_MICROS)).toBe(true);
  });

  it('two runs at once (the second meets the first\'s uncommitted rows): each number billed once in all', async () => {
    const pause = await pausePoint(t.db.url, { table: 'usage_records', on: 'INSERT', when: `EXISTS (SELECT FROM changed WHERE kind = 'number_months' AND resource_id LIKE '%:2026-11')`, level: 'statement' });
    await pause.hold();
    const first = rentals().run('2026-11');
    await pause.waitUntilPaused();
    const second = rentals().run('2026-11');
    await waitFor(
      // On the first's lock of a number's ledger key (usage_record_twin), taken with its uncommitted row.
      () => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE '%INSERT INTO usage_records%'`),
      (n) => n === 1,
      { what: 'the second run to wait on the first' },
    );
    await pause.release();
    const [a, b] = await Promise.all([first, second]);
    await pause.remove();
    expect(a).toEqual({ period: '2026-11', numbers: 3, billed: 3 });
    expect(b).toEqual({ period: '2026-11', numbers: 3, billed: 0 });
    expect(await rows('2026-11')).toBe(3);
  });

  it('a run that fails midway writes nothing, and the next run bills everything once', async () => {
    const pause = await pausePoint(t.db.url, { table: 'usage_records', on: 'INSERT', when: `EXISTS (SELECT FROM changed WHERE kind = 'number_months' AND resource_id LIKE '%:2026-09')`, level: 'statement' });
    await pause.hold();
    const crashed = rentals().run('2026-09');
    await pause.waitUntilPaused();
    // The run's connection dies mid-statement: its transaction rolls back.
    await t.db.pool.query(`SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%INSERT INTO usage_records%' AND pid <> pg_backend_pid()`);
    await expect(crashed).rejects.toThrow();
    await pause.remove();
    expect(await rows('2026-09')).toBe(0);
    expect(await rentals().run('2026-09')).toEqual({ period: '2026-09', numbers: 2, billed: 2 });
    expect(await rows('2026-09')).toBe(2);
  });

  it('refuses a malformed or future period; the billing invariant holds over the rentals billed', async () => {
    await expect(rentals().run('2026-13')).rejects.toThrow(/YYYY-MM/);
    await expect(rentals().run('2999-01')).rejects.toThrow(/has not started/);
    const report = await t.app.app.get(VerifyService).run({ limit: 5 });
    expect(report.invariants.find((i) => i.name === 'billing.usage_has_resource')).toMatchObject({ ok: true, count: 0 });
  });
});
