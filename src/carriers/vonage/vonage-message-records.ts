import type { CarrierMessageRecord, RecordStatus } from '../carrier-message-record.js';
import { timeOf } from '../carrier-message-record.js';

/**
 * Vonage's Reports API records (GET /v2/reports/records, product MESSAGES or SMS, `records[]`),
 * by their published fields: `message_id`, `client_ref` (ours: our message id), `direction`,
 * `status`, `date_received`. They carry no count of parts: segments are not compared for Vonage.
 */
const STATUS: Record<string, RecordStatus> = {
  delivered: 'delivered',
  read: 'delivered',
  received: 'received',
  submitted: 'sent',
  accepted: 'sent',
  buffered: 'sent',
  rejected: 'failed',
  undeliverable: 'failed',
  failed: 'failed',
  expired: 'failed',
};

export function vonageMessageRecord(r: Record<string, unknown>): CarrierMessageRecord | undefined {
  if (typeof r.message_id !== 'string' || r.message_id === '' || typeof r.status !== 'string' || !('date_received' in r || 'client_ref' in r)) return undefined;
  return {
    carrier: 'vonage',
    carrierMessageId: r.message_id,
    ourMessageId: typeof r.client_ref === 'string' && r.client_ref !== '' ? r.client_ref : undefined,
    direction: r.direction === 'inbound' ? 'inbound' : 'outbound',
    status: STATUS[r.status.toLowerCase()] ?? 'unknown',
    carrierStatus: r.status,
    at: timeOf(r.date_received),
  };
}
