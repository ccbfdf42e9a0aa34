import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BillingLinks } from '../../../src/modules/accounts/billing-links.js';
import { Plans } from '../../../src/modules/entitlements/plans.js';
import { NumberRentals } from '../../../src/modules/numbers/number-rentals.js';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import { DEV_STRIPE_WEBHOOK_SECRET } from '../../../src/telephony/dev-credentials.js';
import { ApiClient } from '../../support/api-client.js';
import { telnyxInboundSms } from '../../support/carrier-signing.js';
import { TEST_REDIS_URL } from '../../support/env.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { runCliHere } from '../../support/run-cli.js';
import { deliverStripe, invoicePaid, stripeHeaders } from '../../support/stripe-signing.js';
import { waitFor } from '../../support/wait.js';

const OUR_NUMBER = '+17735550046';
const UCS2_TWO_SEGMENTS = 'ü€😀'.repeat(20); // an emoji makes it UCS-2: 80 code units, 67 per part past 70
const GSM_TWO_SEGMENTS = 'x'.repeat(161); // GSM-7: 153 per part past 160

/**
 * Every charge explains itself: the usage rows real flows write (SMS out on the carrier's answer
 * and on a receipt that settled a lost answer, SMS in, a rental, bundles drawn down) each answer
 * what caused them, and the monthly statement sums to GET /v2/usage.
 */
describe('usage causes and statements', () => {
  let p: MessagingPipeline;
  const customerId = `cus_${randomBytes(6).toString('hex')}`;
  const recordOf = async (resourceId: string) => {
    const list = await p.customer.get('/v2/usage/records?include=causes&page[size]=100');
    const listed = list.body.data.find((r: { resource_id: string }) => r.resource_id === resourceId);
    expect(listed).toBeDefined();
    const one = await p.customer.get(`/v2/usage/records/${listed.id}`);
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(listed); // the list with include=causes shows what the record shows
    return one.body.data;
  };
  const cevOf = async (carrierEventId: string) =>
    (await p.db.pool.query(`SELECT id FROM carrier_events WHERE carrier_event_id = $1`, [carrierEventId])).rows[0].id as string;
  const deliverPaid = (invoiceId: string, lookupKey: string) => {
    const body = invoicePaid({ invoiceId, customer: customerId, lines: [{ lookupKey }] });
    return deliverStripe(p.app.url, body, stripeHeaders(body, { secret: DEV_STRIPE_WEBHOOK_SECRET }));
  };
  const period = new Date().toISOString().slice(0, 7);

  beforeAll(async () => {
    p = await MessagingPipeline.start({ [OUR_NUMBER]: 'telnyx' });
  });
  afterAll(async () => {
    await p?.stop();
  });

  it('an SMS billed by segments shows the count and the encoding, and that the carrier\'s answer settled it (no carrier event)', async () => {
    const sent = await p.sendAndWaitSent(OUR_NUMBER, '+13125550461', UCS2_TWO_SEGMENTS);
    const record = await recordOf(sent.id);
    expect(record).toMatchObject({ kind: 'sms_outbound_segments', quantity: 2, amount_micros: 2 * record.unit_price_micros });
    expect(record.cause).toEqual({
      resource: { type: 'message', id: sent.id },
      transition: 'sending → sent',
      settled_by: 'send_answer',
      carrier: 'telnyx',
      carrier_resource_id: sent.carrierId,
      carrier_events: [],
      price_rule: { unit: 'segment', unit_price_micros: record.unit_price_micros, quantity: 2, segments: 2, encoding: 'UCS-2' },
      draw_downs: [],
      legacy: false,
    });
  });

  it('a send whose answer was lost, settled by the receipt naming our message, names that receipt (ours and the carrier\'s event id)', async () => {
    p.carrier.lookupsShow = false;
    p.carrier.loseAnswers('reset');
    const { body } = await p.customer.post('/v2/messages', { from: OUR_NUMBER, to: '+13125550462', text: 'lost answer' });
    const id = body.data.id;
    try {
      await waitFor(() => p.db.pool.query(`SELECT outcome_unknown_since FROM messages WHERE id = $1`, [id]), (r) => r.rows[0]?.outcome_unknown_since != null, { what: 'the outcome unknown' });
      expect(await p.carrier.sendReceipt(id)).toEqual([200]);
      await waitFor(() => p.customer.get(`/v2/messages/${id}`), (r) => r.body.data.status === 'delivered', { what: 'delivered' });
    } finally {
      p.carrier.lookupsShow = true;
    }
    const receipt = (await p.db.pool.query(`SELECT id, carrier_event_id, normalized->>'occurredAt' AS occurred_at FROM carrier_events WHERE kind = 'message.status' AND normalized->>'ourMessageId' = $1`, [id])).rows[0];
    const { cause } = await recordOf(id);
    expect(cause).toMatchObject({ transition: 'sending → sent', settled_by: 'found_by_receipt', legacy: false });
    expect(cause.carrier_events).toEqual([{ id: receipt.id, carrier_event_id: receipt.carrier_event_id, role: 'receipt', occurred_at: receipt.occurred_at }]);
  });

  it('an inbound SMS names the delivery that recorded it', async () => {
    const inbound = telnyxInboundSms(OUR_NUMBER, 'hello in');
    expect(await p.deliverTelnyx(inbound.body)).toBe(200);
    const eventId = JSON.parse(inbound.body).data.id as string;
    const message = await waitFor(() => p.db.pool.query(`SELECT id FROM messages WHERE carrier_message_id = $1`, [inbound.carrierMessageId]), (r) => r.rows.length === 1, { what: 'the inbound SMS' });
    await waitFor(() => p.db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [message.rows[0].id]), (n) => n === 1, { what: 'its usage row' });
    const { cause } = await recordOf(message.rows[0].id);
    expect(cause).toMatchObject({ resource: { type: 'message' }, transition: '→ received', settled_by: null, carrier_resource_id: inbound.carrierMessageId });
    expect(cause.carrier_events).toEqual([{ id: await cevOf(eventId), carrier_event_id: eventId, role: 'inbound', occurred_at: JSON.parse(inbound.body).data.occurred_at }]);
    expect(cause.price_rule).toMatchObject({ unit: 'segment', segments: 1, encoding: 'GSM-7' });
  });

  it('a rental shows its number and its month', async () => {
    await p.app.app.get(NumberRentals).run(period);
    const number = (await p.customer.get('/v2/phone_numbers')).body.data[0];
    const { cause, quantity } = await recordOf(`${number.id}:${period}`);
    expect(quantity).toBe(1);
    expect(cause).toMatchObject({ resource: { type: 'number', id: number.id }, transition: 'rental', carrier_events: [], price_rule: { unit: 'number_month', month: period, quantity: 1 } });
  });

  it('a draw-down shows the entitlement it came from; usage beyond a bundle is covered by the next one, as /v2/balances counts', async () => {
    await p.app.app.get(Plans).upsert('three_sms', 'sms_segments', 3);
    await p.app.app.get(BillingLinks).link(p.customer.accountId, customerId, 'test-operator');
    expect((await deliverPaid('in_cause_1', 'three_sms')).body.outcome).toBe('applied');
    const [first] = (await p.customer.get('/v2/entitlements')).body.data;
    const a = await p.sendAndWaitSent(OUR_NUMBER, '+13125550463', GSM_TWO_SEGMENTS);
    const b = await p.sendAndWaitSent(OUR_NUMBER, '+13125550464', GSM_TWO_SEGMENTS);
    expect((await recordOf(a.id)).cause.draw_downs).toEqual([{ entitlement_id: first.id, entitlement_type: 'sms_segments', quantity: 2 }]);
    expect((await recordOf(b.id)).cause.draw_downs).toEqual([{ entitlement_id: first.id, entitlement_type: 'sms_segments', quantity: 1 }]);

    expect((await deliverPaid('in_cause_2', 'three_sms')).body.outcome).toBe('applied');
    const second = (await p.customer.get('/v2/entitlements')).body.data.find((e: { id: string }) => e.id !== first.id);
    expect((await recordOf(b.id)).cause.draw_downs).toEqual([
      { entitlement_id: first.id, entitlement_type: 'sms_segments', quantity: 1 },
      { entitlement_id: second.id, entitlement_type: 'sms_segments', quantity: 1 },
    ]);
    const balance = (await p.customer.get('/v2/balances')).body.data.find((x: { type: string }) => x.type === 'sms_segments');
    expect(balance).toEqual({ type: 'sms_segments', granted: 6, used: 4, remaining: 2, overage: 0 });
  });

  it('the month\'s statement: one line per usage row with its cause, summing exactly to GET /v2/usage; draw-downs and balances as they happened; verify holds', async () => {
    const { from, to } = { from: `${period}-01T00:00:00.000Z`, to: new Date(Date.UTC(Number(period.slice(0, 4)), Number(period.slice(5, 7)), 1)).toISOString() };
    const statement = (await p.customer.get(`/v2/statements?period=${period}`)).body.data;
    const usage = (await p.customer.get(`/v2/usage?from=${from}&to=${to}`)).body.data;
    const records = (await p.customer.get('/v2/usage/records?include=causes&page[size]=100')).body.data;
    expect(statement).toMatchObject({ record_type: 'statement', period, from, to, currency: 'USD' });
    expect(statement.totals).toEqual(usage);
    expect(statement.lines.reduce((sum: number, l: { amount_micros: number }) => sum + l.amount_micros, 0)).toBe(usage.amount_micros);
    expect(statement.lines.map((l: { id: string }) => l.id).sort()).toEqual(records.map((r: { id: string }) => r.id).sort());
    for (const line of statement.lines) {
      const { balance_after: _balance, ...asRecorded } = line;
      expect(asRecorded).toEqual(records.find((r: { id: string }) => r.id === line.id));
      expect(Number.isSafeInteger(line.amount_micros)).toBe(true);
    }
    expect(statement.grants.map((g: { invoice_id: string }) => g.invoice_id)).toEqual(['in_cause_1', 'in_cause_2']);
    // The second 2-segment SMS after a bundle of 3: 4 used of 3 granted by then, 1 over; the later grant covers it.
    const sms = statement.lines.filter((l: { balance_after: unknown }) => l.balance_after !== null);
    expect(sms.at(-1).balance_after).toEqual({ entitlement_type: 'sms_segments', granted: 3, used: 4, remaining: 0, overage: 1 });

    expect((await p.customer.get('/v2/statements?period=2026-13')).status).toBe(422);
    expect((await p.customer.get('/v2/statements')).status).toBe(422);
    expect((await p.customer.get('/v2/usage/records/use_00000000000000000000000000')).status).toBe(404);
    const other = await ApiClient.forNewAccount(p.app);
    expect((await other.get(`/v2/usage/records/${records[0].id}`)).status).toBe(404);

    const report = await p.app.app.get(VerifyService).run({ limit: 5 });
    expect(report.invariants.filter((i) => !i.ok)).toEqual([]);
  });

  it('statements:export writes the statement as JSON or as CSV lines, one per usage row, summing to the total', async () => {
    const statement = (await p.customer.get(`/v2/statements?period=${period}`)).body.data;
    const env = { DATABASE_URL: p.db.url, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'error' };
    const json = await runCliHere(['statements:export', '--account', p.customer.accountId, '--period', period, '--format', 'json'], env);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(statement);

    const dir = mkdtempSync(join(tmpdir(), 'statement-'));
    const file = join(dir, 'statement.csv');
    const csv = await runCliHere(['statements:export', '--account', p.customer.accountId, '--period', period, '--format', 'csv', '--out', file], env);
    expect(csv.code).toBe(0);
    const [header, ...rows] = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(header.split(',').slice(0, 8)).toEqual(['usage_record_id', 'created_at', 'kind', 'resource_id', 'quantity', 'unit_price_micros', 'amount_micros', 'currency']);
    const lines = rows.filter((r) => !r.startsWith('total,'));
    expect(lines.map((r) => r.split(',')[0])).toEqual(statement.lines.map((l: { id: string }) => l.id));
    expect(lines.reduce((sum, r) => sum + Number(r.split(',')[6]), 0)).toBe(statement.totals.amount_micros);
    expect(rows.at(-1)).toBe(`total,,,,,,${statement.totals.amount_micros},USD,,,,`);

    const bad = await runCliHere(['statements:export', '--account', p.customer.accountId, '--period', 'last-month', '--format', 'csv'], env);
    expect(bad.code).not.toBe(0);
  });
});
