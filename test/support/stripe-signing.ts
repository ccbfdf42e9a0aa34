import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';

/** The STRIPE_WEBHOOK_SECRET a test app is configured with (not the development value). */
export const TEST_STRIPE_SECRET = 'whsec_test_entitlements_secret';

export interface InvoiceLineSpec {
  lookupKey: string;
  quantity?: number;
  /** Unix seconds. */
  periodStart?: number;
  periodEnd?: number;
}

export interface InvoicePaidSpec {
  invoiceId: string;
  customer: string;
  lines: InvoiceLineSpec[];
  /** A new one for every notification Stripe sends (a re-sent one too). */
  eventId?: string;
}

export const PERIOD_START = 1_793_491_200; // 2026-11-01T00:00:00Z
export const PERIOD_END = 1_796_083_200; // 2026-12-01T00:00:00Z

export function stripeEventId(): string {
  return `evt_${randomBytes(12).toString('hex')}`;
}

/** An `invoice.paid` event as Stripe sends it (the fields we read, plus some we do not). */
export function invoicePaid(spec: InvoicePaidSpec): string {
  return JSON.stringify({
    id: spec.eventId ?? stripeEventId(),
    object: 'event',
    api_version: '2024-06-20',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    type: 'invoice.paid',
    data: {
      object: {
        id: spec.invoiceId,
        object: 'invoice',
        customer: spec.customer,
        status: 'paid',
        currency: 'usd',
        lines: {
          object: 'list',
          has_more: false,
          data: spec.lines.map((line, i) => ({
            id: `il_${spec.invoiceId}_${i}`,
            object: 'line_item',
            amount: 1000,
            quantity: line.quantity ?? 1,
            period: { start: line.periodStart ?? PERIOD_START, end: line.periodEnd ?? PERIOD_END },
            price: { id: `price_${i}`, object: 'price', lookup_key: line.lookupKey, unit_amount: 1000 },
          })),
        },
      },
    },
  });
}

/** Any other Stripe event. */
export function stripeEvent(type: string, object: Record<string, unknown>, eventId = stripeEventId()): string {
  return JSON.stringify({ id: eventId, object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object } });
}

/** The headers Stripe sends with `body`, signed by the official package. */
export function stripeHeaders(body: string, { secret = TEST_STRIPE_SECRET, timestamp }: { secret?: string; timestamp?: number } = {}): Record<string, string> {
  return { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp }) };
}

export interface StripeDelivery {
  status: number;
  retryAfter: string | null;
  body: any;
}

/** POST /webhooks/billing/stripe; `signal` lets a test give up waiting as a provider's timeout does. */
export async function deliverStripe(baseUrl: string, body: string, headers: Record<string, string> = stripeHeaders(body), signal?: AbortSignal): Promise<StripeDelivery> {
  const res = await fetch(`${baseUrl}/webhooks/billing/stripe`, { method: 'POST', headers, body, signal });
  const text = await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: text ? JSON.parse(text) : undefined };
}
