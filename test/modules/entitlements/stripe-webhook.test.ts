import { beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { BillingLinks } from '../../../src/modules/accounts/billing-links.js';
import { Plans } from '../../../src/modules/entitlements/plans.js';
import fc from 'fast-check';
import { ApiClient } from '../../support/api-client.js';
import { deepJsonText, HOSTILE_SIGNED_RUNS, longId, longWord, unstorableText, withRawJson, type Hostile } from '../../support/hostile-values.js';
import { pausePoint } from '../../support/pause.js';
import { deliverStripe, invoicePaid, PERIOD_END, PERIOD_START, stripeEvent, stripeEventId, stripeHeaders, TEST_STRIPE_SECRET, type InvoicePaidSpec } from '../../support/stripe-signing.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

const unique = (prefix: string) => `${prefix}_${randomBytes(6).toString('hex')}`;

/** POST /webhooks/billing/stripe: invoice.paid grants each bundle once, with the four outcomes. */
describe('Stripe invoice.paid → entitlements', () => {
  const t = withTestApp({ env: { STRIPE_WEBHOOK_SECRET: TEST_STRIPE_SECRET } });
  let customer: ApiClient;
  let customerId: string;
  const deliver = (body: string, headers?: Record<string, string>, signal?: AbortSignal) => deliverStripe(t.app.url, body, headers, signal);
  const count = (sql: string, params: unknown[] = []) => t.db.count(sql, params);
  const grantsOf = (invoiceId: string) => count(`SELECT count(*) FROM entitlements WHERE invoice_id = $1`, [invoiceId]);
  const announced = (invoiceId: string) => count(`SELECT count(*) FROM outbound_events WHERE type = 'entitlement.granted' AND payload->>'invoice_id' = $1`, [invoiceId]);
  const outcomes = async (invoiceId: string) =>
    (await t.db.pool.query(`SELECT outcome, type, entitlement_id, provider_event_id, note FROM entitlement_outcomes WHERE invoice_id = $1 ORDER BY id`, [invoiceId])).rows;
  const billingEvents = () => count(`SELECT count(*) FROM billing_events`);
  const paid = (invoiceId: string, lines: InvoicePaidSpec['lines'], eventId?: string) => invoicePaid({ invoiceId, customer: customerId, lines, eventId });

  beforeAll(async () => {
    customerId = unique('cus');
    const created = await t.app.app.get(AccountsService).createAccount('Bundles Ltd', customerId);
    customer = new ApiClient(t.app.url, created.account.id, created.api_key);
    const plans = t.app.app.get(Plans);
    await plans.upsert('sms_1000', 'sms_segments', 1000);
    await plans.upsert('minutes_100', 'call_minutes', 100);
  });

  it('a paid invoice grants one bundle per type (plan quantity × line quantity), entitlement.granted once each, listed and in the balance', async () => {
    const invoiceId = unique('in');
    const first = await deliver(paid(invoiceId, [{ lookupKey: 'sms_1000', quantity: 3 }, { lookupKey: 'minutes_100', quantity: 2 }]));

    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      outcome: 'applied',
      ignored_lines: [],
      entitlements: [
        { id: expect.stringMatching(/^ent_/), record_type: 'entitlement', type: 'call_minutes', quantity: 200, invoice_id: invoiceId, period_start: new Date(PERIOD_START * 1000).toISOString(), period_end: new Date(PERIOD_END * 1000).toISOString(), created_at: expect.any(String) },
        expect.objectContaining({ type: 'sms_segments', quantity: 3000, invoice_id: invoiceId }),
      ],
    });
    expect(await grantsOf(invoiceId)).toBe(2);
    expect(await announced(invoiceId)).toBe(2);
    expect((await outcomes(invoiceId)).map((o) => o.outcome)).toEqual(['applied', 'applied']);

    const listed = await customer.get('/v2/entitlements');
    expect(listed.status).toBe(200);
    expect(listed.body.data.filter((e: { invoice_id: string }) => e.invoice_id === invoiceId)).toEqual(expect.arrayContaining(first.body.entitlements));
    const smsOnly = await customer.get('/v2/entitlements?type=sms_segments');
    expect(smsOnly.body.data.every((e: { type: string }) => e.type === 'sms_segments')).toBe(true);
    const balances = await customer.get('/v2/balances');
    expect(balances.body.data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'call_minutes', granted: expect.any(Number), used: 0, overage: 0 }),
        expect.objectContaining({ type: 'sms_segments', granted: expect.any(Number), used: 0, overage: 0 }),
      ]),
    );
  });

  it('the same event redelivered, and the same invoice re-sent under a new event id: already_applied with the stored result, no second grant', async () => {
    const invoiceId = unique('in');
    const eventId = stripeEventId();
    const first = await deliver(paid(invoiceId, [{ lookupKey: 'sms_1000' }], eventId));
    expect(first.body.outcome).toBe('applied');

    const redelivered = await deliver(paid(invoiceId, [{ lookupKey: 'sms_1000' }], eventId));
    const resent = await deliver(paid(invoiceId, [{ lookupKey: 'sms_1000' }]));
    for (const replay of [redelivered, resent]) {
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual({ outcome: 'already_applied', entitlements: first.body.entitlements, ignored_lines: [] });
    }
    expect(await grantsOf(invoiceId)).toBe(1);
    expect(await announced(invoiceId)).toBe(1);
    expect((await outcomes(invoiceId)).map((o) => o.outcome)).toEqual(['applied', 'already_applied', 'already_applied']);
    // Each notification is on record once, whatever its copies.
    expect(await count(`SELECT count(*) FROM billing_events WHERE payload->'data'->'object'->>'id' = $1`, [invoiceId])).toBe(2);
  });

  it('a timeout after commit, then the retry: already_applied with what the first delivery committed', async () => {
    const invoiceId = unique('in');
    const body = paid(invoiceId, [{ lookupKey: 'minutes_100', quantity: 5 }]);
    const pause = await pausePoint(t.db.url, { table: 'entitlements', on: 'INSERT', when: `NEW.invoice_id = '${invoiceId}'` });
    await pause.hold();
    const gaveUp = new AbortController();
    const first = deliver(body, undefined, gaveUp.signal).then(
      () => 'answered',
      () => 'gave up',
    );
    await pause.waitUntilPaused();
    gaveUp.abort(); // the provider stops waiting while the grant is still in flight
    expect(await first).toBe('gave up');
    await pause.release();
    await waitFor(() => count(`SELECT count(*) FROM entitlement_outcomes WHERE invoice_id = $1 AND outcome = 'applied'`, [invoiceId]), (n) => n === 1, { what: 'the first grant to commit' });
    await pause.remove();

    // Stripe retries the same event (same id, freshly signed).
    const retry = await deliver(body);
    expect(retry.status).toBe(200);
    expect(retry.body.outcome).toBe('already_applied');
    const stored = await customer.get('/v2/entitlements?type=call_minutes');
    expect(retry.body.entitlements).toEqual(stored.body.data.filter((e: { invoice_id: string }) => e.invoice_id === invoiceId));
    expect(retry.body.entitlements).toEqual([expect.objectContaining({ type: 'call_minutes', quantity: 500 })]);
    expect(await grantsOf(invoiceId)).toBe(1);
    expect(await announced(invoiceId)).toBe(1);
  });

  it('a changed quantity or period under the same key: 409 conflicting_payload, recorded, nothing changed (not even a new type in the same invoice)', async () => {
    const invoiceId = unique('in');
    const first = await deliver(paid(invoiceId, [{ lookupKey: 'sms_1000', quantity: 1 }]));
    expect(first.body.outcome).toBe('applied');
    const balanceBefore = (await customer.get('/v2/balances')).body;

    const changedEvent = stripeEventId();
    const changed = await deliver(paid(invoiceId, [{ lookupKey: 'sms_1000', quantity: 2 }, { lookupKey: 'minutes_100' }], changedEvent));
    expect(changed.status).toBe(409);
    expect(changed.body).toMatchObject({
      outcome: 'conflicting_payload',
      conflicts: [
        {
          type: 'sms_segments',
          entitlement_id: first.body.entitlements[0].id,
          stored: { quantity: 1000, period_start: first.body.entitlements[0].period_start, period_end: first.body.entitlements[0].period_end },
          offered: { quantity: 2000 },
        },
      ],
      errors: [expect.objectContaining({ code: 'conflicting_payload' })],
    });
    const otherPeriod = await deliver(paid(invoiceId, [{ lookupKey: 'sms_1000', quantity: 1, periodEnd: PERIOD_END + 86400 }]));
    expect(otherPeriod.status).toBe(409);

    expect(await grantsOf(invoiceId)).toBe(1); // the call_minutes line of the conflicting delivery granted nothing
    expect(await count(`SELECT count(*) FROM entitlements WHERE invoice_id = $1 AND quantity = 1000`, [invoiceId])).toBe(1);
    expect(await announced(invoiceId)).toBe(1);
    expect((await customer.get('/v2/balances')).body).toEqual(balanceBefore);
    const recorded = await outcomes(invoiceId);
    expect(recorded.map((o) => o.outcome)).toEqual(['applied', 'conflicting_payload', 'conflicting_payload']);
    expect(recorded[1]).toMatchObject({ type: 'sms_segments', entitlement_id: first.body.entitlements[0].id, provider_event_id: changedEvent });
  });

  it('an unknown customer: 200 ignored, a note recorded, nothing granted', async () => {
    const invoiceId = unique('in');
    const stranger = unique('cus');
    const reply = await deliver(invoicePaid({ invoiceId, customer: stranger, lines: [{ lookupKey: 'sms_1000' }] }));
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ outcome: 'ignored', reason: expect.stringContaining(stranger) });
    expect(await grantsOf(invoiceId)).toBe(0);
    expect(await outcomes(invoiceId)).toEqual([expect.objectContaining({ outcome: 'ignored', note: `no account has billing customer ${stranger}` })]);
  });

  it('an unknown lookup_key grants nothing and is noted; beside a known one, the known line is applied', async () => {
    const onlyUnknown = unique('in');
    const ignored = await deliver(paid(onlyUnknown, [{ lookupKey: 'no_such_plan' }]));
    expect(ignored.status).toBe(200);
    expect(ignored.body).toMatchObject({ outcome: 'ignored', ignored_lines: [{ lookup_key: 'no_such_plan', reason: 'no plan has this lookup_key' }] });
    expect(await grantsOf(onlyUnknown)).toBe(0);
    expect(await outcomes(onlyUnknown)).toEqual([expect.objectContaining({ outcome: 'ignored', note: 'lookup_key no_such_plan: no plan has this lookup_key' })]);

    const mixed = unique('in');
    const applied = await deliver(paid(mixed, [{ lookupKey: 'no_such_plan' }, { lookupKey: 'sms_1000' }, { lookupKey: 'sms_1000', quantity: 2 }]));
    expect(applied.body).toMatchObject({ outcome: 'applied', entitlements: [{ type: 'sms_segments', quantity: 3000 }], ignored_lines: [{ lookup_key: 'no_such_plan' }] });
  });

  it('other Stripe events are recorded once and answered 200 ignored', async () => {
    const before = await billingEvents();
    const body = stripeEvent('customer.created', { id: unique('cus'), object: 'customer' });
    for (let i = 0; i < 2; i++) {
      const reply = await deliver(body);
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ outcome: 'ignored', reason: 'customer.created grants nothing' });
    }
    expect(await billingEvents()).toBe(before + 1);
  });

  describe('refusals write nothing', () => {
    const body = () => paid(unique('in'), [{ lookupKey: 'sms_1000' }]);
    const now = () => Math.floor(Date.now() / 1000);

    it('a bad signature, a missing one, a stale or future timestamp, a body changed after signing: 401', async () => {
      const before = await billingEvents();
      const cases: [string, (payload: string) => Record<string, string>][] = [
        ['another secret', (p) => stripeHeaders(p, { secret: 'whsec_someone_else' })],
        ['no Stripe-Signature', () => ({ 'content-type': 'application/json' })],
        ['a timestamp past the 300 s tolerance', (p) => stripeHeaders(p, { timestamp: now() - 301 })],
        ['a timestamp beyond it in the future', (p) => stripeHeaders(p, { timestamp: now() + 310 })],
        ['a body changed after signing', (p) => stripeHeaders(p.replace('"quantity":1', '"quantity":9'))],
      ];
      for (const [what, headersFor] of cases) {
        const payload = body();
        const reply = await deliver(payload, headersFor(payload));
        expect({ what, status: reply.status, code: reply.body.errors?.[0]?.code }).toEqual({ what, status: 401, code: 'invalid_signature' });
      }
      expect(await billingEvents()).toBe(before);
    });

    it('a signed body that is not a Stripe event, or an invoice.paid without its invoice: 400', async () => {
      const before = await billingEvents();
      const invoice = JSON.parse(body());
      const malformed = [
        JSON.stringify({ ...invoice, id: undefined }),
        JSON.stringify({ ...invoice, data: { object: { ...invoice.data.object, lines: undefined } } }),
        JSON.stringify({ ...invoice, data: { object: { ...invoice.data.object, customer: 42 } } }),
        JSON.stringify({ ...invoice, data: { object: { ...invoice.data.object, lines: { data: [{ price: { lookup_key: 'sms_1000' }, quantity: 1.5, period: { start: 1, end: 2 } }] } } } }),
        '[1,2,3]',
      ];
      for (const payload of malformed) {
        const reply = await deliver(payload, stripeHeaders(payload));
        expect(reply.status).toBe(400);
        expect(reply.body.errors[0].code).toEqual(expect.any(String));
      }
      const notJson = 'not json at all';
      expect((await deliver(notJson, stripeHeaders(notJson))).status).toBe(400);
      expect(await billingEvents()).toBe(before);
    });
  });

  /** An invoice.paid of one sms_1000 line, changed by `change` (the parsed event), then signed. */
  function hostileInvoice(change: (event: any) => void, raw?: string): { body: string; eventId: string; invoiceId: string } {
    const [eventId, invoiceId] = [stripeEventId(), unique('in')];
    const event = JSON.parse(paid(invoiceId, [{ lookupKey: 'sms_1000' }], eventId));
    change(event);
    const body = raw === undefined ? JSON.stringify(event) : withRawJson(JSON.stringify(event), raw);
    return { body, eventId, invoiceId };
  }
  const line = (event: any) => event.data.object.lines.data[0];
  const badNumber = fc.oneof(fc.constantFrom(-1, 1.5, 1e15, 1e300, Number.MAX_SAFE_INTEGER + 2), fc.integer({ min: 1_000_001, max: Number.MAX_SAFE_INTEGER }));
  const badUnixTime = fc.oneof(fc.constantFrom(-1, 1.5, 1e15, 8.64e15), fc.integer({ min: 253_402_300_800, max: Number.MAX_SAFE_INTEGER }));
  const hostileStripe: fc.Arbitrary<Hostile<ReturnType<typeof hostileInvoice>>> = fc.oneof(
    longId.map((v) => ({ case: 'event id too long', names: 'event.id', make: () => hostileInvoice((e) => (e.id = v)) })),
    longWord.map((v) => ({ case: 'event type too long', names: 'event.type', make: () => hostileInvoice((e) => (e.type = v)) })),
    longId.map((v) => ({ case: 'invoice id too long', names: 'data.object.id', make: () => hostileInvoice((e) => (e.data.object.id = v)) })),
    longId.map((v) => ({ case: 'customer too long', names: 'data.object.customer', make: () => hostileInvoice((e) => (e.data.object.customer = v)) })),
    longId.map((v) => ({ case: 'lookup_key too long', names: 'lookup_key', make: () => hostileInvoice((e) => (line(e).price.lookup_key = v)) })),
    badNumber.map((v) => ({ case: 'quantity out of range', names: 'quantity', make: () => hostileInvoice((e) => (line(e).quantity = v)) })),
    badUnixTime.map((v) => ({ case: 'period.start out of range', names: 'period.start', make: () => hostileInvoice((e) => (line(e).period.start = v)) })),
    unstorableText.map((v) => ({ case: 'unstorable text', names: 'data.object.currency', make: () => hostileInvoice((e) => (e.data.object.currency = v)) })),
    deepJsonText.map((raw) => ({ case: 'nested too deep', names: 'nests deeper than 64 levels', make: () => hostileInvoice((e) => (e.data.object.metadata = '__DEEP__'), raw) })),
  );

  it('property (issue 25): a signed event with a hostile id, depth, number or text is refused alone with a 400 naming the field, records and grants nothing; good events beside it are applied once', async () => {
    await fc.assert(
      fc.asyncProperty(hostileStripe, async (h) => {
        const bad = await h.make();
        const goods = Array.from({ length: 4 }, () => hostileInvoice(() => undefined));
        const before = await billingEvents();
        const [badReply, ...goodReplies] = await Promise.all([bad, ...goods].map((d) => deliver(d.body)));

        expect(badReply.status).toBe(400);
        expect(badReply.body).toEqual({ errors: [expect.objectContaining({ code: 'invalid_event', detail: expect.stringContaining(h.names) })] });
        expect(goodReplies.map((r) => [r.status, r.body.outcome])).toEqual(Array(4).fill([200, 'applied']));
        expect(await count(`SELECT count(*) FROM billing_events WHERE provider_event_id = ANY($1)`, [goods.map((g) => g.eventId)])).toBe(4);
        expect(await count(`SELECT count(*) FROM entitlements WHERE invoice_id = ANY($1)`, [goods.map((g) => g.invoiceId)])).toBe(4);
        // Nothing of the hostile one: exactly the four good events are new, and its invoice granted nothing.
        expect(await billingEvents()).toBe(before + 4);
        expect(await grantsOf(bad.invoiceId)).toBe(0);
      }),
      { numRuns: HOSTILE_SIGNED_RUNS, endOnFailure: true },
    );
  });

  it('issue 25: PATCH /v2/account cannot set billing_customer_id (422 naming the field, nothing changed, no word on whether an id is taken); the account reads the operator\'s link', async () => {
    const other = await ApiClient.forNewAccount(t.app, 'Other');
    const free = unique('cus');
    for (const value of [customerId, free, null, 'has space', 42]) {
      const refused = await other.request('PATCH', '/v2/account', { billing_customer_id: value });
      expect(refused.status).toBe(422);
      expect(refused.body.errors).toEqual([expect.objectContaining({ code: 'validation_failed', source: { pointer: '/billing_customer_id' }, detail: expect.stringMatching(/^billing_customer_id is not settable/) })]);
    }
    expect((await other.get('/v2/account')).body.data.billing_customer_id).toBeNull();
    // The customer claimed through the API is still nobody's: its paid invoice grants nothing to the claimant.
    expect((await deliver(invoicePaid({ invoiceId: unique('in'), customer: free, lines: [{ lookupKey: 'sms_1000' }] }))).body.outcome).toBe('ignored');
    expect((await other.get('/v2/entitlements')).body.data).toEqual([]);
    // The account reads the link the operator made.
    expect((await customer.get('/v2/account')).body.data).toMatchObject({ id: customer.accountId, billing_customer_id: customerId });
    expect((await customer.request('PATCH', '/v2/account', {})).body.data.billing_customer_id).toBe(customerId);
  });

  it('the operator relinks (BillingLinks, behind accounts:link-billing): one statement changes the link and writes its audit row; a customer another account has is refused', async () => {
    const links = t.app.app.get(BillingLinks);
    const other = await ApiClient.forNewAccount(t.app, 'Relinked');
    const own = unique('cus');
    const linked = await links.link(other.accountId, own, 'ops@example.test');
    expect(linked.account).toMatchObject({ id: other.accountId, billing_customer_id: own });
    expect(linked.audit).toEqual({ id: expect.any(String), account_id: other.accountId, previous_customer_id: null, customer_id: own, changed_by: 'ops@example.test', changed_at: expect.anything() });
    const invoiceId = unique('in');
    expect((await deliver(invoicePaid({ invoiceId, customer: own, lines: [{ lookupKey: 'sms_1000' }] }))).body.outcome).toBe('applied');
    expect((await other.get('/v2/entitlements')).body.data).toEqual([expect.objectContaining({ invoice_id: invoiceId })]);

    await expect(links.link(other.accountId, customerId, 'ops@example.test')).rejects.toMatchObject({ status: 409 });
    const unlinked = await links.link(other.accountId, null, 'ops@example.test');
    expect(unlinked.audit).toMatchObject({ previous_customer_id: own, customer_id: null });
    expect((await t.db.pool.query(`SELECT previous_customer_id, customer_id, changed_by FROM billing_link_audit WHERE account_id = $1 ORDER BY id`, [other.accountId])).rows).toEqual([
      { previous_customer_id: null, customer_id: own, changed_by: 'ops@example.test' },
      { previous_customer_id: own, customer_id: null, changed_by: 'ops@example.test' },
    ]);
    await expect(links.link('acct_missing', own, 'ops')).rejects.toMatchObject({ status: 404 });
  });
});
