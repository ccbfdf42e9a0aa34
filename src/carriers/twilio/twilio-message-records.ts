import type { CarrierMessageRecord, RecordStatus } from '../carrier-message-record.js';
import { partsOf, timeOf } from '../carrier-message-record.js';

/**
 * Twilio's Message resource as its message list (GET /2010-04-01/Accounts/{sid}/Messages.json,
 * `messages[]`) gives it, by the fields of `api.v2010.account.message`: `sid`, `direction`
 * (inbound, outbound-api, outbound-call, outbound-reply), `status` (message_enum_status),
 * `num_segments` (a string; 0 until a Messaging Service assigns a sender: not compared then),
 * `date_created`. It carries no reference of ours: matched by sid.
 */
const STATUS: Record<string, RecordStatus> = {
  delivered: 'delivered',
  read: 'delivered',
  received: 'received',
  sent: 'sent',
  partially_delivered: 'sent',
  failed: 'failed',
  undelivered: 'failed',
  canceled: 'failed',
  queued: 'pending',
  sending: 'pending',
  accepted: 'pending',
  scheduled: 'pending',
  receiving: 'pending',
};

export function twilioMessageRecord(r: Record<string, unknown>): CarrierMessageRecord | undefined {
  if (typeof r.sid !== 'string' || !/^(SM|MM)/.test(r.sid) || typeof r.status !== 'string') return undefined;
  return {
    carrier: 'twilio',
    carrierMessageId: r.sid,
    direction: r.direction === 'inbound' ? 'inbound' : 'outbound',
    status: STATUS[r.status] ?? 'unknown',
    carrierStatus: r.status,
    segments: partsOf(r.num_segments),
    at: timeOf(r.date_created),
  };
}
