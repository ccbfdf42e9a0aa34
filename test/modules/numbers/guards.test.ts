import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { storeCarrierNumberId } from '../../../src/modules/numbers/number-ids.js';
import { NumberReleases, ReleaseNumberHandler } from '../../../src/modules/numbers/number-releases.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { FakeNumberCarrier } from '../../support/fake-number-carrier.js';
import { assignNumber } from '../../support/numbers.js';
import { pausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

/**
 * The numbers' release guards, each interleaved with its competitor on purpose: the first
 * transaction is held right after its UPDATE of the number (row written and locked, not
 * committed); the competitor is started and seen waiting for that row lock; then the first
 * commits, and the competitor's guard is evaluated against what it committed.
 */
describe('number release guards under interleaving', () => {
  const carrier = new FakeNumberCarrier([]);
  beforeAll(async () => {
    await carrier.start();
  });
  afterAll(async () => {
    await carrier.stop();
  });
  // No relay, no worker: the release jobs run only when a test runs their handler.
  const t = withTestApp({ http: false, env: () => carrier.env() });
  const uow = () => t.app.app.get(UnitOfWork);
  const handler = () => t.app.app.get(ReleaseNumberHandler);
  const releaseRun = (numberId: string) => handler().handle({ numberId }, { jobId: `test-release-${numberId}`, attempt: 1 });

  let serial = 0;
  /** A Telnyx number of a new account, held at the carrier under its id (stored too unless `storeId` is false), and releasing. */
  async function releasingNumber({ storeId = true } = {}): Promise<{ id: string; telnyxId: string; phoneNumber: string }> {
    const phoneNumber = `+1312555${String(7000 + serial++)}`;
    const { account } = await t.app.app.get(AccountsService).createAccount('number guards');
    const telnyxId = carrier.hold('telnyx', phoneNumber);
    const number = await assignNumber(t.app, account.id, phoneNumber, 'telnyx');
    await t.db.pool.query(`UPDATE phone_numbers SET status = 'releasing', carrier_number_id = $2 WHERE id = $1`, [number.id, storeId ? telnyxId : null]);
    return { id: number.id, telnyxId, phoneNumber };
  }
  const numberRow = async (id: string) =>
    (await t.db.pool.query(`SELECT status, carrier_number_id, country, release_attempts, release_error FROM phone_numbers WHERE id = $1`, [id])).rows[0];
  /** Transactions of the app waiting for a row another transaction holds (not for a test's pause). */
  const blockedOnRows = () =>
    t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`);

  /**
   * Runs `first` until it has written the number's row as `when` says (held there, uncommitted),
   * then `second` until it waits for that row, then lets `first` commit.
   */
  async function interleave<A, B>(numberId: string, when: string, first: () => Promise<A>, second: () => Promise<B>): Promise<[PromiseSettledResult<A>, PromiseSettledResult<B>]> {
    const pause = await pausePoint(t.db.url, { table: 'phone_numbers', on: 'UPDATE', when: `NEW.id = '${numberId}' AND ${when}` });
    await pause.hold();
    try {
      const held = first();
      await pause.waitUntilPaused();
      const competing = second();
      await waitFor(blockedOnRows, (n) => n >= 1, { what: 'the competitor waiting for the held row' });
      await pause.release();
      return [await settled(held), await settled(competing)];
    } finally {
      await pause.remove();
    }
  }
  const settled = <T>(p: Promise<T>): Promise<PromiseSettledResult<T>> => p.then((value) => ({ status: 'fulfilled', value }) as const, (reason: unknown) => ({ status: 'rejected', reason }) as const);

  it('a failed attempt is recorded only while the number is releasing: a twin run that released it commits first, and the number stays released without an error', async () => {
    const number = await releasingNumber();
    const [released, failed] = await interleave(
      number.id,
      `NEW.status = 'released'`,
      () => releaseRun(number.id),
      async () => {
        // The twin read the number releasing (the first run has not committed); the carrier does not answer it.
        carrier.answerUnavailable(1);
        return releaseRun(number.id);
      },
    );
    expect(released.status).toBe('fulfilled');
    expect(failed).toMatchObject({ status: 'rejected', reason: { message: expect.stringMatching(/503/) } });
    expect(await numberRow(number.id)).toMatchObject({ status: 'released', release_attempts: 0, release_error: null });
    expect(await t.db.count(`SELECT count(*) FROM outbound_events WHERE type = 'number.released' AND payload->>'id' = $1`, [number.id])).toBe(1);
    expect(carrier.released.filter((n) => n === number.phoneNumber)).toHaveLength(1);
  });

  it("a carrier id is stored only while none is: a second run's lookup waits for the first's store, then keeps the id stored", async () => {
    const number = await releasingNumber({ storeId: false });
    const store = (carrierNumberId: string, country: string) => () => uow().run((tx) => storeCarrierNumberId(tx, number.id, carrierNumberId, country));
    const [first, second] = await interleave(number.id, `OLD.carrier_number_id IS NULL AND NEW.carrier_number_id IS NOT NULL`, store(number.telnyxId, 'US'), store('9999999999999999999', 'CA'));
    expect([first.status, second.status]).toEqual(['fulfilled', 'fulfilled']);
    expect(await numberRow(number.id)).toMatchObject({ carrier_number_id: number.telnyxId, country: 'US' });
  });

  it('numbers:release-retry locks the number only while it is releasing: a release committing meanwhile wins, and nothing is queued again', async () => {
    const number = await releasingNumber();
    const [released, retried] = await interleave(number.id, `NEW.status = 'released'`, () => releaseRun(number.id), () => t.app.app.get(NumberReleases).retry(number.id));
    expect(released.status).toBe('fulfilled');
    expect(retried).toEqual({ status: 'fulfilled', value: undefined });
    expect(await numberRow(number.id)).toMatchObject({ status: 'released' });
    expect(await t.db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id LIKE $1`, [`release-${number.id}-retry-%`])).toBe(0);
  });

  it('numbers:release-retry holding the number (its job not yet written): the release waits for it, then releases; the queued retry finds nothing to do', async () => {
    const number = await releasingNumber();
    const pause = await pausePoint(t.db.url, { table: 'outbox_jobs', on: 'INSERT', when: `NEW.job_id LIKE 'release-${number.id}-retry-%'` });
    await pause.hold();
    try {
      const retry = t.app.app.get(NumberReleases).retry(number.id);
      await pause.waitUntilPaused();
      const release = releaseRun(number.id);
      await waitFor(blockedOnRows, (n) => n >= 1, { what: "the release waiting for the retry's lock" });
      expect((await numberRow(number.id)).status).toBe('releasing');
      await pause.release();
      expect(await retry).toMatchObject({ id: number.id, release_attempts: 0 });
      await release;
    } finally {
      await pause.remove();
    }
    expect(await numberRow(number.id)).toMatchObject({ status: 'released', release_error: null });
    await releaseRun(number.id); // the retry's job: the number is no longer releasing
    expect(carrier.released.filter((n) => n === number.phoneNumber)).toHaveLength(1);
  });
});
