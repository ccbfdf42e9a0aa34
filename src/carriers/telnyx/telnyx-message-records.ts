import type { CarrierMessageRecord, RecordStatus } from '../carrier-message-record.js';
import { partsOf, timeOf } from '../carrier-message-record.js';
import { messageIdFromUrl } from '../message-sender.js';

/**
 * Telnyx's message detail record (GET /v2/detail_records, filter[record_type]=messaging; the
 * Mission Control MDR export), by its published fields: `uuid` (the message id; `id` in the MDR
 * reports), `direction`, `status`, `parts`, `created_at`, `delivery_status_webhook_url` (ours
 * names our message: the send's reference), `cli`/`cld`.
 */
const STATUS: Record<string, RecordStatus> = {
  delivered: 'delivered',
  received: 'received',
  sent: 'sent',
  dlr_unconfirmed: 'sent',
  dlr_timeout: 'sent',
  delivery_unconfirmed: 'sent',
  failed: 'failed',
  gw_reject: 'failed',
  gw_timeout: 'failed',
  sending_failed: 'failed',
  delivery_failed: 'failed',
  queued: 'pending',
  sending: 'pending',
};

export function telnyxMessageRecord(r: Record<string, unknown>): CarrierMessageRecord | undefined {
  const id = r.uuid ?? r.id;
  const isMdr = r.record_type === 'message_detail_record' || (('cli' in r || 'cld' in r) && 'parts' in r);
  if (!isMdr || typeof id !== 'string' || id === '' || typeof r.status !== 'string') return undefined;
  return {
    carrier: 'telnyx',
    carrierMessageId: id,
    ourMessageId: messageIdFromUrl(typeof r.delivery_status_webhook_url === 'string' ? r.delivery_status_webhook_url : undefined),
    direction: r.direction === 'inbound' ? 'inbound' : 'outbound',
    status: STATUS[r.status.toLowerCase()] ?? 'unknown',
    carrierStatus: r.status,
    segments: partsOf(r.parts),
    at: timeOf(r.created_at),
  };
}
