import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { storeCarrierNumberId } from '../../../src/modules/numbers/number-ids.js';
import { claimRelease, recordFailedAttempt, recordReleased, RELEASE_LEASE_SECONDS, type ReleaseClaim } from '../../../src/modules/numbers/number-release-leases.js';
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

  /** A run's claim taken by the test (a run that then stalls or dies: it never records an outcome). */
  const claimAsStalledRun = async (numberId: string): Promise<ReleaseClaim> => {
    const outcome = await uow().run((tx) => claimRelease(tx, numberId, RELEASE_LEASE_SECONDS));
    if (outcome.kind !== 'claimed') throw new Error(`expected a claim of ${numberId}, got ${outcome.kind}`);
    return outcome.claim;
  };
  /** The lease on the number ends now, as RELEASE_LEASE_SECONDS passing would end it. */
  const leaseEnds = (numberId: string) => t.db.pool.query(`UPDATE phone_numbers SET release_leased_until = now() WHERE id = $1`, [numberId]);
  /** What the carrier was asked from `from` on (index into carrier.requests): method and path. */
  const carrierCallsSince = (from: number) => carrier.requests.slice(from).map((r) => `${r.method} ${r.path.split('?')[0]}`);
  const releasedEvents = (numberId: string) => t.db.count(`SELECT count(*) FROM outbound_events WHERE type = 'number.released' AND payload->>'id' = $1`, [numberId]);

  it('a claim only while the number is releasing: a twin run started as the first records its release waits for it, finds the number released, and neither calls the carrier nor counts a failed attempt', async () => {
    const number = await releasingNumber();
    const from = carrier.requests.length;
    // Before the claims, the twin read the number releasing and called the carrier (here it would
    // have got a 503) while the first run's release committed; now its claim waits for that row.
    const [released, twin] = await interleave(number.id, `NEW.status = 'released'`, () => releaseRun(number.id), () => releaseRun(number.id));
    expect(released.status).toBe('fulfilled');
    expect(twin.status).toBe('fulfilled');
    expect(carrierCallsSince(from)).toEqual([`DELETE /v2/phone_numbers/${number.telnyxId}`]);
    expect(await numberRow(number.id)).toMatchObject({ status: 'released', release_attempts: 0, release_error: null });
    expect(await releasedEvents(number.id)).toBe(1);
    expect(carrier.released.filter((n) => n === number.phoneNumber)).toHaveLength(1);
  });

  it("a failed attempt is recorded only under the run's own claim: a stalled run failing as another run claims the number counts nothing and leaves that run's lease live", async () => {
    const number = await releasingNumber();
    const stalled = await claimAsStalledRun(number.id);
    await leaseEnds(number.id);
    const [taken, failed] = await interleave(
      number.id,
      `OLD.release_token IS DISTINCT FROM NEW.release_token`,
      () => claimAsStalledRun(number.id),
      () => uow().run((tx) => recordFailedAttempt(tx, stalled, 'Telnyx answered 503')),
    );
    expect(taken.status).toBe('fulfilled');
    expect(failed).toEqual({ status: 'fulfilled', value: false });
    const row = (await t.db.pool.query(`SELECT status, release_attempts, release_token, release_leased_until > now() AS lease_live FROM phone_numbers WHERE id = $1`, [number.id])).rows[0];
    expect(row).toEqual({ status: 'releasing', release_attempts: 0, release_token: (taken as PromiseFulfilledResult<ReleaseClaim>).value.token, lease_live: true });
    // Nor is the stalled run's late success recorded: the run holding the lease records its own.
    expect(await uow().run((tx) => recordReleased(tx, stalled))).toBeUndefined();
    expect((await numberRow(number.id)).status).toBe('releasing');
  });

  it("a carrier id is stored only while none is: a second run's lookup waits for the first's store, then keeps the id stored", async () => {
    const number = await releasingNumber({ storeId: false });
    const store = (carrierNumberId: string, country: string) => () => uow().run((tx) => storeCarrierNumberId(tx, number.id, carrierNumberId, country));
    const [first, second] = await interleave(number.id, `OLD.carrier_number_id IS NULL AND NEW.carrier_number_id IS NOT NULL`, store(number.telnyxId, 'US'), store('9999999999999999999', 'CA'));
    expect([first.status, second.status]).toEqual(['fulfilled', 'fulfilled']);
    expect(await numberRow(number.id)).toMatchObject({ carrier_number_id: number.telnyxId, country: 'US' });
  });

  it("a second run while one holds the number's release (between its lookup and its DELETE) makes no carrier call: one lookup, one DELETE", async () => {
    const number = await releasingNumber({ storeId: false });
    const from = carrier.requests.length;
    // The first run is held as it stores the id its lookup found, its DELETE still to come; the
    // second (the job's backoff retry, or the operator's retry job) is started then.
    const [first, second] = await interleave(number.id, `OLD.carrier_number_id IS NULL AND NEW.carrier_number_id IS NOT NULL`, () => releaseRun(number.id), () => releaseRun(number.id));
    expect([first.status, second.status]).toEqual(['fulfilled', 'fulfilled']);
    expect(carrierCallsSince(from)).toEqual(['GET /v2/phone_numbers', `DELETE /v2/phone_numbers/${number.telnyxId}`]);
    expect(await numberRow(number.id)).toMatchObject({ status: 'released', carrier_number_id: number.telnyxId, release_attempts: 0, release_error: null });
    expect(await releasedEvents(number.id)).toBe(1);
  });

  it("a second run while one holds its claim (the claim's transaction not yet committed) waits for it, then makes no carrier call and is due again at the lease's end", async () => {
    const number = await releasingNumber();
    const from = carrier.requests.length;
    const [first, second] = await interleave(number.id, `OLD.release_token IS DISTINCT FROM NEW.release_token`, () => releaseRun(number.id), () => releaseRun(number.id));
    expect([first.status, second.status]).toEqual(['fulfilled', 'fulfilled']);
    expect(carrierCallsSince(from)).toEqual([`DELETE /v2/phone_numbers/${number.telnyxId}`]);
    expect(await numberRow(number.id)).toMatchObject({ status: 'released', release_attempts: 0, release_error: null });
    expect(await releasedEvents(number.id)).toBe(1);
    // The second run's follow-up, named by the lease it found, due at that lease's end.
    const { release_token: holder } = (await t.db.pool.query(`SELECT release_token FROM phone_numbers WHERE id = $1`, [number.id])).rows[0];
    const followUps = await t.db.pool.query(`SELECT run_at > now() + make_interval(secs => $2) AS at_lease_end FROM outbox_jobs WHERE job_id = $1`, [`release-${number.id}-lease-${holder}`, RELEASE_LEASE_SECONDS / 2]);
    expect(followUps.rows).toEqual([{ at_lease_end: true }]);
    await releaseRun(number.id); // that follow-up: released, nothing to do
    expect(carrierCallsSince(from)).toHaveLength(1);
  });

  it('a run that died holding its claim: a second run calls nothing and is due at the lease\'s end; that run releases the number, once', async () => {
    const number = await releasingNumber();
    const from = carrier.requests.length;
    const died = await claimAsStalledRun(number.id);
    await releaseRun(number.id);
    expect(carrierCallsSince(from)).toEqual([]);
    const due = await t.db.pool.query(
      `SELECT j.run_at > p.release_leased_until AND j.run_at < p.release_leased_until + interval '2 milliseconds' AS at_lease_end FROM outbox_jobs j JOIN phone_numbers p ON p.id = $1 WHERE j.job_id = $2`,
      [number.id, `release-${number.id}-lease-${died.token}`],
    );
    expect(due.rows).toEqual([{ at_lease_end: true }]);
    expect((await numberRow(number.id)).status).toBe('releasing');

    await leaseEnds(number.id);
    await releaseRun(number.id); // the follow-up, at the lease's end
    expect(carrierCallsSince(from)).toEqual([`DELETE /v2/phone_numbers/${number.telnyxId}`]);
    expect(await numberRow(number.id)).toMatchObject({ status: 'released', release_error: null });
    expect(await releasedEvents(number.id)).toBe(1);
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
