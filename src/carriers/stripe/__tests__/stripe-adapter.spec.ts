import { describe, expect, it } from '@jest/globals';
import Stripe from 'stripe';
import { loadConfig } from '../../../platform/config/app-config.js';
import { DEV_STRIPE_WEBHOOK_SECRET } from '../../../telephony/dev-credentials.js';
import { MalformedWebhook, SignatureRejected, type InboundWebhook } from '../../carrier-adapter.js';
import { StripeAdapter, STRIPE_SIGNATURE_REFUSED, STRIPE_TIMESTAMP_REFUSED } from '../stripe-adapter.js';
import { readPaidInvoice } from '../stripe-invoice.js';

const SECRET = 'whsec_unit_spec';
const NOW_MS = 1_796_000_000_000;
const nowSeconds = NOW_MS / 1000;

const line = (price: unknown, extra: Record<string, unknown> = {}) => ({ object: 'line_item', quantity: 2, period: { start: 1_793_491_200, end: 1_796_083_200 }, price, ...extra });
const invoice = (lines: unknown[], extra: Record<string, unknown> = {}) => ({ id: 'in_1', object: 'invoice', customer: 'cus_1', lines: { object: 'list', has_more: false, data: lines }, ...extra });
const event = (type: string, object: unknown) => JSON.stringify({ id: 'evt_1', object: 'event', type, data: { object } });

function webhook(body: string, { secret = SECRET, timestamp = nowSeconds }: { secret?: string; timestamp?: number } = {}): InboundWebhook {
  const signature = Stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp });
  return { rawBody: Buffer.from(body), body: JSON.parse(body), headers: { 'stripe-signature': signature }, url: '/webhooks/billing/stripe', peerAddress: '127.0.0.1' };
}

const adapter = (env: Record<string, string> = { STRIPE_WEBHOOK_SECRET: SECRET }) => new StripeAdapter(loadConfig(env));
const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a refusal');
};

describe('StripeAdapter', () => {
  const paid = event('invoice.paid', invoice([line({ id: 'price_1', lookup_key: 'sms_1000' })]));

  it('reads a signed invoice.paid into a PaidInvoice (our words from here on)', () => {
    expect(adapter().accept(webhook(paid), NOW_MS)).toEqual({
      provider: 'stripe',
      providerEventId: 'evt_1',
      providerEventType: 'invoice.paid',
      payloadJson: paid,
      paidInvoice: { invoiceId: 'in_1', customerId: 'cus_1', allLines: true, lines: [{ lookupKey: 'sms_1000', quantity: 2, periodStart: '2026-11-01T00:00:00.000Z', periodEnd: '2026-12-01T00:00:00.000Z' }] },
    });
  });

  it('other event types are read without an invoice', () => {
    expect(adapter().accept(webhook(event('customer.created', { id: 'cus_1' })), NOW_MS)).toMatchObject({ providerEventType: 'customer.created', paidInvoice: undefined });
  });

  it('refuses another secret, a missing header, and a timestamp outside the window either way', () => {
    const cases: [InboundWebhook, string][] = [
      [webhook(paid, { secret: 'whsec_other' }), STRIPE_SIGNATURE_REFUSED],
      [{ ...webhook(paid), headers: {} }, STRIPE_SIGNATURE_REFUSED],
      [webhook(paid, { timestamp: nowSeconds - 301 }), STRIPE_TIMESTAMP_REFUSED],
      [webhook(paid, { timestamp: nowSeconds + 301 }), STRIPE_TIMESTAMP_REFUSED],
    ];
    for (const [inbound, message] of cases) {
      const err = refusal(() => adapter().accept(inbound, NOW_MS));
      expect(err).toBeInstanceOf(SignatureRejected);
      expect((err as Error).message).toBe(message);
    }
    expect(adapter().accept(webhook(paid, { timestamp: nowSeconds - 299 }), NOW_MS).providerEventId).toBe('evt_1');
    expect(adapter().accept(webhook(paid, { timestamp: nowSeconds + 299 }), NOW_MS).providerEventId).toBe('evt_1');
  });

  it('a signed body that is not JSON, or not an event, is malformed (checked after the signature)', () => {
    for (const body of ['not json', '[]', JSON.stringify({ id: 'evt_1', type: 'invoice.paid' })]) {
      const signature = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRET, timestamp: nowSeconds });
      const inbound = { rawBody: Buffer.from(body), body: undefined, headers: { 'stripe-signature': signature }, url: '/', peerAddress: '127.0.0.1' };
      expect(refusal(() => adapter().accept(inbound, NOW_MS))).toBeInstanceOf(MalformedWebhook);
    }
  });

  it('the development secret verifies only in a development deployment (everything on loopback); a real secret anywhere', () => {
    const signedWithDev = webhook(paid, { secret: DEV_STRIPE_WEBHOOK_SECRET });
    expect(adapter({}).accept(signedWithDev, NOW_MS).providerEventId).toBe('evt_1');
    const deployed: Record<string, string>[] = [{ PUBLIC_BASE_URL: 'https://api.example.com' }, { TELNYX_API_URL: 'https://api.telnyx.com/v2' }, { VONAGE_API_URL: 'https://api.nexmo.com' }, { TWILIO_API_URL: 'https://api.twilio.com', STRIPE_WEBHOOK_SECRET: DEV_STRIPE_WEBHOOK_SECRET }];
    for (const env of deployed) {
      const err = refusal(() => adapter(env).accept(signedWithDev, NOW_MS));
      expect(err).toBeInstanceOf(SignatureRejected);
      expect((err as SignatureRejected).message).toBe(STRIPE_SIGNATURE_REFUSED);
      expect((err as SignatureRejected).internalReason).toMatch(/STRIPE_WEBHOOK_SECRET/);
    }
    expect(adapter({ PUBLIC_BASE_URL: 'https://api.example.com', STRIPE_WEBHOOK_SECRET: SECRET }).accept(webhook(paid), NOW_MS).providerEventId).toBe('evt_1');
  });

  it('STRIPE_WEBHOOK_SECRET must look like one, and a bad one is not repeated', () => {
    expect(() => loadConfig({ STRIPE_WEBHOOK_SECRET: 'sk_live_oops' })).toThrow('STRIPE_WEBHOOK_SECRET="[redacted]": must be a Stripe webhook signing secret (whsec_...)');
  });
});

describe('readPaidInvoice', () => {
  it('takes the price from lines.data[].price or the expanded pricing.price_details.price; lines without a lookup_key grant nothing', () => {
    const read = readPaidInvoice(
      invoice([
        line({ id: 'price_1', lookup_key: 'a' }),
        line(undefined, { pricing: { type: 'price_details', price_details: { price: { id: 'price_2', lookup_key: 'b' }, product: 'prod_1' } } }),
        line(undefined, { pricing: { type: 'price_details', price_details: { price: 'price_3', product: 'prod_1' } } }),
        line({ id: 'price_4', lookup_key: null }),
        line(undefined, { quantity: null }),
      ]),
    );
    expect(read.lines.map((l) => l.lookupKey)).toEqual(['a', 'b']);
  });

  it('an expanded customer, and lines beyond the first page', () => {
    const read = readPaidInvoice(invoice([], { customer: { id: 'cus_9', object: 'customer' }, lines: { data: [], has_more: true } }));
    expect(read).toMatchObject({ customerId: 'cus_9', allLines: false });
  });

  it('refuses what it cannot grant from: a fractional or negative quantity, a missing period, no customer, no lines', () => {
    const bad = [
      invoice([line({ lookup_key: 'a' }, { quantity: 1.5 })]),
      invoice([line({ lookup_key: 'a' }, { quantity: -1 })]),
      invoice([line({ lookup_key: 'a' }, { period: undefined })]),
      invoice([line({ lookup_key: 'a' }, { period: { start: '2026-11-01', end: 1 } })]),
      invoice([], { customer: null }),
      invoice([], { lines: undefined }),
      invoice([], { object: 'credit_note' }),
    ];
    for (const object of bad) expect(() => readPaidInvoice(object as never)).toThrow(MalformedWebhook);
  });
});
