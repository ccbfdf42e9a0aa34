import type { CarrierName } from './carrier-name.js';

/** A carrier's final word on a message, in our words: `pending` (still queued or sending) and `unknown` are compared with nothing. */
export type RecordStatus = 'sent' | 'delivered' | 'failed' | 'received' | 'pending' | 'unknown';

/**
 * One line of a carrier's own message records (Telnyx's message detail records, Twilio's message
 * list, Vonage's Reports API records), normalized by the carrier's adapter: what `audit:messages`
 * reconciles our messages against. docs/billing.md lists each carrier's fields.
 */
export interface CarrierMessageRecord {
  carrier: CarrierName;
  carrierMessageId: string;
  /** Our message id when the record carries our reference (Telnyx's delivery_status_webhook_url, Vonage's client_ref). */
  ourMessageId?: string;
  direction: 'inbound' | 'outbound';
  status: RecordStatus;
  /** The carrier's own word. */
  carrierStatus: string;
  /** The parts it counted; undefined when its record carries none (Vonage). */
  segments?: number;
  /** When it says the message was created or received (ISO 8601). */
  at?: string;
}

/** A whole number of parts ≥ 1 from a number or a numeric string; undefined otherwise (Twilio's 0 before a sender is assigned). */
export function partsOf(value: unknown): number | undefined {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : undefined;
}

/** A time the record gives, when it parses. */
export function timeOf(value: unknown): string | undefined {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value)) ? new Date(value).toISOString() : undefined;
}
