// A Stripe `invoice.paid` test event, signed as Stripe signs it (the `stripe` package's
// generateTestHeaderString) with STRIPE_WEBHOOK_SECRET, or the development secret the app accepts
// while it runs locally. CLI: `node scripts/stripe-test-event.mjs --customer cus_… --lookup-key K
// [--quantity N] [--invoice in_…] --out FILE` writes the body to FILE and prints the
// Stripe-Signature header value (post FILE byte for byte: `--data-binary @FILE`). Used by `npm run demo`.
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import Stripe from 'stripe';
import { DEV_STRIPE_WEBHOOK_SECRET } from '../dist/lib/telephony/dev-credentials.js';
import './load-env.mjs';

/** The body and Stripe-Signature of an invoice.paid for one line of price `lookupKey`. */
export function signedInvoicePaid({ customer, lookupKey, quantity = 1, invoiceId = `in_test_${Date.now().toString(36)}`, eventId = `evt_test_${randomInt(1e9)}` }) {
  const now = Math.floor(Date.now() / 1000);
  const payload = JSON.stringify({
    id: eventId, object: 'event', type: 'invoice.paid',
    data: { object: { id: invoiceId, object: 'invoice', customer, lines: { object: 'list', has_more: false, data: [{ object: 'line_item', quantity, period: { start: now, end: now + 30 * 86400 }, price: { object: 'price', lookup_key: lookupKey } }] } } },
  });
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: process.env.STRIPE_WEBHOOK_SECRET || DEV_STRIPE_WEBHOOK_SECRET });
  return { payload, signature };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { customer: { type: 'string' }, 'lookup-key': { type: 'string' }, quantity: { type: 'string' }, invoice: { type: 'string' }, out: { type: 'string' } } });
  if (!values.customer || !values['lookup-key'] || !values.out) {
    process.stderr.write('usage: node scripts/stripe-test-event.mjs --customer cus_... --lookup-key KEY [--quantity N] [--invoice in_...] --out FILE\n');
    process.exit(2);
  }
  const { payload, signature } = signedInvoicePaid({ customer: values.customer, lookupKey: values['lookup-key'], quantity: Number(values.quantity ?? 1), ...(values.invoice && { invoiceId: values.invoice }) });
  writeFileSync(values.out, payload);
  process.stdout.write(`${signature}\n`);
}
