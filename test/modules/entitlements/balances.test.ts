import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { BillingLinks } from '../../../src/modules/accounts/billing-links.js';
import { Plans } from '../../../src/modules/entitlements/plans.js';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import { DEV_STRIPE_WEBHOOK_SECRET } from '../../../src/telephony/dev-credentials.js';
import { telnyxFixture } from '../../support/carrier-signing.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { deliverStripe, invoicePaid, stripeHeaders } from '../../support/stripe-signing.js';
import { waitFor } from '../../support/wait.js';

const OUR_NUMBER = '+17735550002'; // the `to` of the Telnyx inbound fixture
const TWO_SEGMENTS = 'x'.repeat(161); // GSM-7: 153 per part past 160

/**
 * Bundles drawn down by real usage: SMS out through a fake carrier and in through a signed Telnyx
 * webhook write the ledger rows; the balance is computed from grants and that ledger. The app
 * runs as a development deployment (everything on loopback), so the development Stripe secret
 * signs here, as it does for `npm run demo`.
 */
describe('balances: granted, used, remaining per type, from grants and the usage ledger', () => {
  let p: MessagingPipeline;
  const customerId = `cus_${randomBytes(6).toString('hex')}`;
  const deliverPaid = (invoiceId: string, lines: { lookupKey: string; quantity?: number }[]) => {
    const body = invoicePaid({ invoiceId, customer: customerId, lines });
    return deliverStripe(p.app.url, body, stripeHeaders(body, { secret: DEV_STRIPE_WEBHOOK_SECRET }));
  };
  const usageRows = () => p.db.count(`SELECT count(*) FROM usage_records`);
  const balances = async () => (await p.customer.get('/v2/balances')).body.data;

  beforeAll(async () => {
    p = await MessagingPipeline.start({ [OUR_NUMBER]: 'telnyx' });
    const plans = p.app.app.get(Plans);
    await plans.upsert('small_sms', 'sms_segments', 3);
    await plans.upsert('minutes_30', 'call_minutes', 30);
  });
  afterAll(async () => {
    await p?.stop();
  });

  it('nothing granted: no balance', async () => {
    expect(await balances()).toEqual([]);
  });

  it('usage before the first grant does not draw it down; usage after it does, both directions; beyond the bundle is overage', async () => {
    await p.sendAndWaitSent(OUR_NUMBER, '+13125550100', 'before any bundle');
    await waitFor(usageRows, (n) => n === 1, { what: 'the first usage row' });

    // The operator links the customer (accounts:link-billing runs this).
    await p.app.app.get(BillingLinks).link(p.customer.accountId, customerId, 'test-operator');
    const granted = await deliverPaid('in_balance_1', [{ lookupKey: 'small_sms' }, { lookupKey: 'minutes_30' }]);
    expect(granted.body.outcome).toBe('applied');
    expect(await balances()).toEqual([
      { type: 'call_minutes', granted: 30, used: 0, remaining: 30, overage: 0 },
      { type: 'sms_segments', granted: 3, used: 0, remaining: 3, overage: 0 },
    ]);

    await p.sendAndWaitSent(OUR_NUMBER, '+13125550101', TWO_SEGMENTS);
    expect(await p.deliverTelnyx(telnyxFixture('message.received.json', { id: randomUUID() }))).toBe(200);
    await waitFor(usageRows, (n) => n === 3, { what: 'usage of the SMS out and in' });
    expect(await balances()).toEqual([
      { type: 'call_minutes', granted: 30, used: 0, remaining: 30, overage: 0 },
      { type: 'sms_segments', granted: 3, used: 3, remaining: 0, overage: 0 },
    ]);

    await p.sendAndWaitSent(OUR_NUMBER, '+13125550102', 'one more');
    await waitFor(usageRows, (n) => n === 4, { what: 'one more usage row' });
    expect((await balances()).find((b: { type: string }) => b.type === 'sms_segments')).toEqual({ type: 'sms_segments', granted: 3, used: 4, remaining: 0, overage: 1 });
  });

  it('a second paid invoice adds a bundle (usage still counted from the first grant); a replay adds nothing; verify holds', async () => {
    expect((await deliverPaid('in_balance_2', [{ lookupKey: 'small_sms', quantity: 2 }])).body.outcome).toBe('applied');
    expect((await deliverPaid('in_balance_2', [{ lookupKey: 'small_sms', quantity: 2 }])).body.outcome).toBe('already_applied');
    expect((await balances()).find((b: { type: string }) => b.type === 'sms_segments')).toEqual({ type: 'sms_segments', granted: 9, used: 4, remaining: 5, overage: 0 });
    await waitFor(() => p.db.count(`SELECT count(*) FROM outbox_jobs WHERE completed_at IS NULL AND failed_at IS NULL`), (n) => n === 0, { what: 'every job finished' });
    const report = await p.app.app.get(VerifyService).run({ limit: 5 });
    expect(report.invariants.filter((i) => !i.ok)).toEqual([]);
    expect(report.invariants.map((i) => i.name)).toContain('entitlements.granted_once');
  });
});
