import { MalformedWebhook } from '../carrier-adapter.js';
import type { PaidInvoice, PaidInvoiceLine } from '../billing-event.js';
import { BOUNDS, bounded, id, isObject, object, type Json } from '../shape.js';

/** Most units one invoice line may buy: a plan's quantity times this stays a safe integer. */
export const MAX_LINE_QUANTITY = 1_000_000;

/**
 * Stripe's Invoice object (`data.object` of `invoice.paid`) as a PaidInvoice. Only lines with a
 * price carrying a `lookup_key` can grant anything; the others (taxes, one-off amounts, a price
 * not expanded) are left out here. The price is `lines.data[].price` (API versions before
 * 2025-03) or the expanded `lines.data[].pricing.price_details.price` (later ones).
 */
export function readPaidInvoice(invoice: Json): PaidInvoice {
  const path = 'data.object';
  if (invoice.object !== undefined && invoice.object !== 'invoice') throw new MalformedWebhook(`${path}.object must be "invoice"`);
  const lines = object(invoice, 'lines', path);
  if (!Array.isArray(lines.data)) throw new MalformedWebhook(`${path}.lines.data must be an array`);
  return {
    invoiceId: id(invoice, 'id', path),
    customerId: customerOf(invoice, path),
    lines: lines.data.flatMap((line, i) => readLine(line, `${path}.lines.data[${i}]`)),
    allLines: lines.has_more !== true,
  };
}

/** `customer` is the customer's id, or the customer object when expanded. */
function customerOf(invoice: Json, path: string): string {
  const customer = invoice.customer;
  if (isObject(customer)) return id(customer, 'id', `${path}.customer`);
  return id(invoice, 'customer', path);
}

function readLine(line: unknown, path: string): PaidInvoiceLine[] {
  if (!isObject(line)) throw new MalformedWebhook(`${path} must be an object`);
  const lookupKey = lookupKeyOf(line);
  if (lookupKey === undefined) return [];
  bounded(lookupKey, BOUNDS.idLength, `${path}.price.lookup_key`);
  const period = object(line, 'period', path);
  return [{ lookupKey, quantity: quantityOf(line, path), periodStart: unixTime(period, 'start', `${path}.period`), periodEnd: unixTime(period, 'end', `${path}.period`) }];
}

function lookupKeyOf(line: Json): string | undefined {
  const details = isObject(line.pricing) && isObject(line.pricing.price_details) ? line.pricing.price_details : undefined;
  const price = isObject(line.price) ? line.price : isObject(details?.price) ? details.price : undefined;
  return typeof price?.lookup_key === 'string' && price.lookup_key !== '' ? price.lookup_key : undefined;
}

function quantityOf(line: Json, path: string): number {
  const quantity = line.quantity;
  if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 0 || quantity > MAX_LINE_QUANTITY) {
    throw new MalformedWebhook(`${path}.quantity must be a whole number from 0 to ${MAX_LINE_QUANTITY}`);
  }
  return quantity;
}

/** Stripe times are unix seconds. */
function unixTime(parent: Json, key: string, path: string): string {
  const seconds = parent[key];
  // Years 1970 to 9999: what both JavaScript and Postgres hold.
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 0 || seconds > 253_402_300_799) {
    throw new MalformedWebhook(`${path}.${key} must be a unix time in seconds`);
  }
  return new Date(seconds * 1000).toISOString();
}
