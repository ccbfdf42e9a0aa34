import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { NumberReleases } from '../../../src/modules/numbers/number-releases.js';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import { ApiClient } from '../../support/api-client.js';
import { FakeNumberCarrier } from '../../support/fake-number-carrier.js';
import { assignNumber } from '../../support/numbers.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

/**
 * Releasing Telnyx numbers against a fake that filters as Telnyx documents ListPhoneNumbers
 * (`filter[phone_number]` with a `+` returns nothing): each released number is deleted at Telnyx
 * exactly once, by its phone number id; a number Telnyx's lookup does not find is never counted
 * released: it stays releasing with its error, verify names it, and a retry releases it once found.
 */
describe('Telnyx numbers are released at Telnyx, exactly once', () => {
  const carrier = new FakeNumberCarrier(['+13125550601']);
  beforeAll(async () => {
    await carrier.start();
  });
  afterAll(async () => {
    await carrier.stop();
  });
  const t = withTestApp({ relay: true, worker: true, env: () => ({ ...carrier.env(), API_RATE_LIMIT_PER_MINUTE: '1000000' }) });
  let alice: ApiClient;
  beforeAll(async () => {
    alice = await ApiClient.forNewAccount(t.app, 'Alice');
  });

  const numberRow = async (id: string) => (await t.db.pool.query(`SELECT status, carrier_number_id, release_attempts, release_error FROM phone_numbers WHERE id = $1`, [id])).rows[0];
  const releasedEvents = (id: string) => t.db.count(`SELECT count(*) FROM outbound_events WHERE type = 'number.released' AND payload->>'id' = $1`, [id]);
  const deletesOf = (telnyxId: string) => carrier.requests.filter((r) => r.method === 'DELETE' && r.path === `/v2/phone_numbers/${telnyxId}`);
  const release = async (id: string) => expect((await alice.request('DELETE', `/v2/phone_numbers/${id}`)).status).toBe(202);
  const released = (id: string) => waitFor(() => alice.get(`/v2/phone_numbers/${id}`), (r) => r.body.data.status === 'released', { what: `${id} released` });
  const lookups = () => carrier.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v2/phone_numbers?')).map((r) => new URL(r.path, carrier.url).searchParams.get('filter[phone_number]'));

  it('an ordered number: its phone number id is stored when the order completes, and release deletes it by that id, once', async () => {
    const placed = await alice.post('/v2/phone_number_orders', { carrier: 'telnyx', phone_numbers: ['+13125550601'] });
    expect(placed.status).toBe(202);
    const done = await waitFor(() => alice.get(`/v2/phone_number_orders/${placed.body.data.id}`), (r) => r.body.data.status !== 'pending', { what: 'the order settled' });
    const numberId: string = done.body.data.phone_numbers[0].id;
    const telnyxId = carrier.held.get('+13125550601')!.id;
    // Not the order line's id (a uuid): the phone number resource's, found by the digits-only filter.
    await waitFor(() => numberRow(numberId), (row) => row.carrier_number_id !== null, { what: 'the Telnyx id stored' });
    expect((await numberRow(numberId)).carrier_number_id).toBe(telnyxId);
    expect(lookups()).toContain('13125550601');

    await release(numberId);
    await released(numberId);
    expect(carrier.released.filter((n) => n === '+13125550601')).toHaveLength(1);
    expect(deletesOf(telnyxId)).toHaveLength(1);
    expect(carrier.held.has('+13125550601')).toBe(false);
    await waitFor(() => releasedEvents(numberId), (n) => n === 1, { what: 'number.released' });
  });

  it('a number stored before ids were (carrier_number_id NULL) is found with the digits-only filter and released once', async () => {
    const telnyxId = carrier.hold('telnyx', '+13125550602');
    const number = await assignNumber(t.app, alice.accountId, '+13125550602', 'telnyx');
    expect((await numberRow(number.id)).carrier_number_id).toBeNull();

    await release(number.id);
    await released(number.id);
    expect((await numberRow(number.id)).carrier_number_id).toBe(telnyxId);
    expect(deletesOf(telnyxId)).toHaveLength(1);
    expect(carrier.released.filter((n) => n === '+13125550602')).toHaveLength(1);
    // Never the `+` form the document says returns nothing.
    expect(lookups().filter((f) => f?.includes('+'))).toEqual([]);
  });

  it('a number Telnyx does not show is never counted released: it stays releasing with its error, verify names it, and a retry releases it once Telnyx has it', async () => {
    const number = await assignNumber(t.app, alice.accountId, '+13125550603', 'telnyx');
    await release(number.id);
    const failing = await waitFor(() => numberRow(number.id), (row) => row.release_attempts >= 1, { what: 'a failed release attempt recorded' });
    expect(failing).toMatchObject({ status: 'releasing', carrier_number_id: null });
    expect(failing.release_error).toMatch(/shows no number \+13125550603/);
    expect((await alice.get(`/v2/phone_numbers/${number.id}`)).body.data.status).toBe('releasing');
    expect(await releasedEvents(number.id)).toBe(0);
    const report = await t.app.app.get(VerifyService).run({ limit: 10 });
    expect(report.invariants.find((i) => i.name === 'numbers.release_failing')).toMatchObject({ ok: false, examples: [number.id] });

    // The operator finds the cause (here: the number shows up at Telnyx) and retries.
    const telnyxId = carrier.hold('telnyx', '+13125550603');
    expect(await t.app.app.get(NumberReleases).retry(number.id)).toMatchObject({ id: number.id, phone_number: '+13125550603' });
    await released(number.id);
    expect(await numberRow(number.id)).toMatchObject({ status: 'released', carrier_number_id: telnyxId, release_error: null });
    expect(deletesOf(telnyxId)).toHaveLength(1);
    await waitFor(() => releasedEvents(number.id), (n) => n === 1, { what: 'number.released once' });
    const after = await t.app.app.get(VerifyService).run({ limit: 10 });
    expect(after.invariants.find((i) => i.name === 'numbers.release_failing')).toMatchObject({ ok: true });
  });
});
