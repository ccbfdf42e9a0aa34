import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { CARRIER_NAMES, type CarrierName } from '../../carriers/normalized-event.js';
import type { Encoding } from '../../telephony/segments.js';
import { isoTimestampSql } from '../../platform/database/cte-statement.js';
import { HELD } from '../numbers/phone-numbers.service.js';
import { CLAIM_TOO_OLD, RECEIPT_BEFORE_ANSWER, SendResolution } from './message-history-details.js';

export const MESSAGE_STATUSES = ['queued', 'scheduled', 'sending', 'sent', 'delivered', 'failed', 'received', 'cancelled'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

const ENCODINGS = ['GSM-7', 'UCS-2'] as const satisfies readonly Encoding[];
const at = (example: string) => ({ format: 'date-time', example });

/** A message as the REST API and customer events show it. */
@ApiSchema({ name: 'Message' })
export class MessageView {
  @ApiProperty({ example: 'msg_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['message'] }) record_type!: 'message';
  @ApiProperty({ enum: ['outbound', 'inbound'], example: 'outbound' }) direction!: 'outbound' | 'inbound';
  @ApiProperty({ example: '+15550001111' }) from!: string;
  @ApiProperty({ example: '+15550002222' }) to!: string;
  @ApiProperty({ example: 'Your code is 1234' }) text!: string;
  @ApiProperty({ enum: MESSAGE_STATUSES, example: 'queued', description: 'queued, scheduled, sending, sent, delivered, failed, cancelled (outbound) or received (inbound); delivered, failed and cancelled are final' })
  status!: MessageStatus;
  @ApiProperty({ type: 'integer', minimum: 1, example: 1, description: 'GSM-7: 160 for one, 153 per part; UCS-2: 70 / 67 (UTF-16 code units)' }) segments!: number;
  @ApiProperty({ enum: ENCODINGS, example: 'GSM-7' }) encoding!: Encoding;
  @ApiProperty({ enum: CARRIER_NAMES, example: 'telnyx' }) carrier!: CarrierName;
  @ApiProperty({ type: 'string', nullable: true, example: null, description: "The carrier's id of the message, once it accepted it" }) carrier_message_id!: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Why the message failed' }) error_code!: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: null }) error_detail!: string | null;
  @ApiProperty({ type: 'string', nullable: true, ...at('2026-12-01T09:00:00.000Z'), description: 'When a scheduled message is sent' }) send_at!: string | null;
  @ApiProperty({
    type: 'string',
    nullable: true,
    ...at('2026-12-01T09:00:01.000Z'),
    description:
      "While queued or scheduled: when it goes to the carrier, its sending number's pace permitting: the send slot it was given; before it has one, for a scheduled message its send_at, for a queued one the earliest its number's pace allows (the number's next free slot, never inside a carrier's Retry-After; now when nothing is ahead of it). Null once picked up",
  })
  expected_send_at!: string | null;
  @ApiProperty(at('2026-11-03T10:15:00.000Z')) created_at!: string;
  @ApiProperty(at('2026-11-03T10:15:01.000Z')) updated_at!: string;
  account_id?: string;
}

@ApiSchema({ name: 'StatusChange' })
export class StatusChange {
  @ApiProperty({ enum: MESSAGE_STATUSES, example: 'queued' }) status!: string;
  @ApiProperty(at('2026-11-03T10:15:00.000Z')) at!: string;
  @ApiProperty({
    required: false,
    example: 'found_by_receipt',
    description:
      "Only where the status alone does not say it: a send whose outcome was unknown (`outcome_unknown: <why>`, the carrier's answer lost) and how that was resolved " +
      `(${Object.values(SendResolution).map((d) => `\`${d}\``).join(', ')}: \`${SendResolution.optedOut}\` when the recipient opted out before the resend), ` +
      `a receipt that outran the carrier's answer (\`${RECEIPT_BEFORE_ANSWER}\`), or a send given back unsent and queued again because it could no longer keep its number's pace (\`${CLAIM_TOO_OLD}\`)`,
  })
  detail?: string;
}

/** A message with every status it went through, oldest first (GET /v2/messages/:id). */
@ApiSchema({ name: 'MessageWithHistory' })
export class MessageWithHistory extends MessageView {
  @ApiProperty({ type: [StatusChange] }) status_history!: StatusChange[];
}

/**
 * A queued message not yet given a send slot (just accepted, or back from a carrier's 429): the
 * earliest its number's pace allows, the next free slot (never inside a carrier's pause), now when
 * nothing is ahead of it. The message's slot is taken at dispatch from the same columns.
 */
const NEXT_FREE_SLOT = `(SELECT greatest(p.next_send_at, p.send_paused_until, now()) FROM phone_numbers p WHERE p.phone_number = from_number AND p.${HELD})`;

/** The SELECT / RETURNING list that yields a MessageView (plus account_id, stripped by toView). */
export const MESSAGE_COLUMNS = `id, 'message' AS record_type, direction, from_number AS "from", to_number AS "to", text, status,
  segments, encoding, carrier, carrier_message_id, error_code, error_detail, send_at,
  CASE status WHEN 'scheduled' THEN coalesce(send_slot, send_at) WHEN 'queued' THEN coalesce(send_slot, ${NEXT_FREE_SLOT}) END AS expected_send_at,
  created_at, updated_at, account_id`;

/**
 * toView in SQL, over a row of MESSAGE_COLUMNS (a RETURNING of them): the payload of a customer
 * event written by the same statement as the change. A spec holds the two to one shape.
 */
export const MESSAGE_VIEW_JSON = `jsonb_build_object('id', id, 'record_type', record_type, 'direction', direction, 'from', "from", 'to', "to",
  'text', text, 'status', status, 'segments', segments, 'encoding', encoding, 'carrier', carrier,
  'carrier_message_id', carrier_message_id, 'error_code', error_code, 'error_detail', error_detail,
  'send_at', ${isoTimestampSql('send_at')}, 'expected_send_at', ${isoTimestampSql('expected_send_at')}, 'created_at', ${isoTimestampSql('created_at')}, 'updated_at', ${isoTimestampSql('updated_at')})`;

/** Dates as ISO strings and no internal columns: what a customer sees, stable across replays. */
export function toView(row: MessageView & { account_id?: string }): MessageView {
  const { account_id: _accountId, ...view } = row;
  const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : (v as string | null));
  return { ...view, send_at: iso(view.send_at), expected_send_at: iso(view.expected_send_at), created_at: iso(view.created_at) as string, updated_at: iso(view.updated_at) as string };
}

/** Terminal statuses: the first terminal word from the carrier wins. */
export const TERMINAL_STATUSES: MessageStatus[] = ['delivered', 'failed', 'cancelled'];
/** Statuses from which dispatch may still move the message. */
export const UNSENT_STATUSES: MessageStatus[] = ['queued', 'scheduled', 'sending'];
/** Statuses a message not yet picked up by dispatch has. */
export const WAITING_STATUSES: MessageStatus[] = ['queued', 'scheduled'];
