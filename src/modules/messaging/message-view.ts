import type { CarrierName } from '../../carriers/normalized-event.js';
import type { Encoding } from '../../telephony/segments.js';

export type MessageStatus = 'queued' | 'scheduled' | 'sending' | 'sent' | 'delivered' | 'failed' | 'received';

/** A message as the REST API and customer events show it. */
export interface MessageView {
  id: string;
  record_type: 'message';
  direction: 'outbound' | 'inbound';
  from: string;
  to: string;
  text: string;
  status: MessageStatus;
  segments: number;
  encoding: Encoding;
  carrier: CarrierName;
  carrier_message_id: string | null;
  error_code: string | null;
  error_detail: string | null;
  send_at: string | null;
  created_at: string;
  updated_at: string;
  account_id?: string;
}

/** The SELECT / RETURNING list that yields a MessageView (plus account_id, stripped by toView). */
export const MESSAGE_COLUMNS = `id, 'message' AS record_type, direction, from_number AS "from", to_number AS "to", text, status,
  segments, encoding, carrier, carrier_message_id, error_code, error_detail, send_at, created_at, updated_at, account_id`;

/** Dates as ISO strings and no internal columns: what a customer sees, stable across replays. */
export function toView(row: MessageView & { account_id?: string }): MessageView {
  const { account_id: _accountId, ...view } = row;
  const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : (v as string | null));
  return { ...view, send_at: iso(view.send_at), created_at: iso(view.created_at) as string, updated_at: iso(view.updated_at) as string };
}

/** Terminal statuses: the first terminal word from the carrier wins. */
export const TERMINAL_STATUSES: MessageStatus[] = ['delivered', 'failed'];
/** Statuses from which dispatch may still move the message. */
export const UNSENT_STATUSES: MessageStatus[] = ['queued', 'scheduled', 'sending'];
/** Statuses a message not yet picked up by dispatch has. */
export const WAITING_STATUSES: MessageStatus[] = ['queued', 'scheduled'];
