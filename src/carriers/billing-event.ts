/**
 * The billing-provider contract: what a verified billing webhook means in our words. Like
 * NormalizedEvent for carriers, everything past the provider's adapter (src/carriers/stripe/)
 * speaks these types, never the provider's field names.
 */
export type BillingProvider = 'stripe';

/** One invoice line: a price (by its lookup key) bought `quantity` times for a period. */
export interface PaidInvoiceLine {
  /** The price's lookup key (lines without one, a tax or a one-off amount, grant nothing and are left out). */
  lookupKey: string;
  /** Whole units bought (0 or more). */
  quantity: number;
  /** ISO 8601 instants. */
  periodStart: string;
  periodEnd: string;
}

/** An invoice the customer has paid. */
export interface PaidInvoice {
  invoiceId: string;
  /** The provider's id for the customer who paid: accounts carry it as billing_customer_id. */
  customerId: string;
  lines: PaidInvoiceLine[];
  /** False when the provider sent only the first page of lines: the rest are not seen. */
  allLines: boolean;
}

/** A verified billing webhook. */
export interface BillingEvent {
  provider: BillingProvider;
  /** The provider's id for this notification (Stripe evt_…): a new one on a re-sent notification. */
  providerEventId: string;
  /** The provider's own word for the event type, kept for the record. */
  providerEventType: string;
  /** The provider's body as JSON text (stored as jsonb). */
  payloadJson: string;
  /** Set when the event says an invoice was paid; other events are only recorded. */
  paidInvoice?: PaidInvoice;
}
