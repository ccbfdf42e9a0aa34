import { Injectable } from '@nestjs/common';
import { CteStatement } from '../../platform/database/cte-statement.js';
import type { EventBatchRun } from '../ingest/carrier-event-handlers.js';
import type { OwnersOf } from '../numbers/phone-numbers.service.js';
import type { CarrierName, FailureReason } from '../../carriers/normalized-event.js';
import type { CustomerEventType } from '../webhooks/event-types.js';
import { MessageEffects } from './message-effects.js';
import { OptOutKeywords } from './opt-out-keywords.js';
import { MESSAGE_COLUMNS, TERMINAL_STATUSES } from './message-view.js';
import { RECEIPT_BEFORE_ANSWER, SendResolution } from './message-history-details.js';
import { carrierOptOutFailure } from './message-moves.js';

/** The columns of a MESSAGE_COLUMNS row, by name (a union of moves reads these from each side). */
const MOVE_VIEW_COLUMNS = `id, record_type, direction, "from", "to", text, status, segments, encoding, carrier, carrier_message_id, error_code, error_detail,
  send_at, expected_send_at, created_at, updated_at, account_id`;

/** A receipt's error as the receipt statement's input columns. */
function toErrorColumns(error: { errorCode?: string; errorDetail?: string }): { error_code: string | null; error_detail: string | null } {
  return { error_code: error.errorCode ?? null, error_detail: error.errorDetail ?? null };
}

/** The customer events a receipt's move announces: `message.<the status it moved to>`. */
const RECEIPT_EVENT_TYPES = ['message.sent', 'message.delivered', 'message.failed'] as const satisfies readonly CustomerEventType[];

/** A delivery receipt, in our words. */
export interface Receipt {
  carrier: CarrierName;
  carrierMessageId: string;
  /** The final word it reports; null for a word that moves nothing (queued, sending, unknown). */
  status: 'sent' | 'delivered' | 'failed' | null;
  /** The carrier's own word, kept in the note of a receipt that changed nothing. */
  carrierStatus: string;
  errorCode?: string;
  errorDetail?: string;
  /** The carrier's code in our words (a failed receipt's "recipient opted out" records the opt-out). */
  reason?: FailureReason;
  /** Our message id, as the carrier echoed our reference: the receipt names the message even before we know the carrier's id. */
  ourMessageId?: string;
  /** The carrier's id of the event, and when it says it happened: the cause of a charge the receipt settles. */
  carrierEventId?: string;
  occurredAt?: string;
}

export interface Inbound {
  id: string;
  carrier: CarrierName;
  carrierMessageId: string;
  from: string;
  to: string;
  text: string;
  segments: number;
  encoding: string;
  /** The carrier's id of the event, and when it says it happened: the cause of the charge. */
  carrierEventId?: string;
  occurredAt?: string;
}

/**
 * What the carrier tells us about messages, as fragments of the one statement a batch of its
 * events runs in (MessagingCarrierEvents): delivery receipts moving our outbound messages (and
 * settling a send whose answer was lost), and inbound messages recorded, billed and announced.
 */
@Injectable()
export class ReceiptsAndInbound {
  constructor(
    private readonly effects: MessageEffects,
    private readonly keywords: OptOutKeywords,
  ) {}

  /**
   * Delivery receipts for messages we sent, as fragments of one statement for a batch of events
   * (no two of one message: the batch's key keeps them apart). A receipt names its message by our
   * reference when the carrier echoed it (`ourMessageId`), else (or when the reference names no
   * message of that carrier's: a client_ref of someone else's) by the carrier's id. A receipt of
   * a final word is ready only once it finds its message (one that outran the dispatcher's commit
   * is retried, never explained away as a duplicate by a later read); it changes nothing (the note
   * says so) for a duplicate, a contradiction after a terminal status, or a 'sent' receipt after
   * markSent (which stamps the carrier id and 'sent' together). A non-final word (status NULL)
   * is always ready and changes nothing, except as below.
   *
   * A receipt (any word: the carrier holds the message) naming a message still `sending` with no
   * carrier id (no answer recorded) settles it: the carrier took it, whatever became of our request's answer. It is stamped with the
   * receipt's carrier id, its outcome is no longer unknown, and it moves as markSent would
   * (billed, `message.sent`, `sent` on the history with `found_by_receipt`, or
   * `receipt_before_answer` when its outcome was not unknown yet), then to the receipt's final
   * word if it has one (history and event of their own), in this same statement.
   *
   * A failed receipt saying the recipient opted out at the carrier (`reason`; Vonage reports it
   * only so) fails the message as `recipient_opted_out` (as markRejected does) and, when its move
   * changed the row, records the opt-out in this same statement (source `carrier`, opt_out_seq
   * bumped, one `message.opted_out` per consent change, announced with the receipts' events).
   */
  applyReceiptCtes(run: EventBatchRun, receipts: Receipt[]): void {
    const { stmt } = run;
    const optedOut = (r: Receipt) => r.status === 'failed' && r.reason === 'recipient_opted_out';
    const input = run.input(
      'carrier text, carrier_message_id text, status text, carrier_status text, error_code text, error_detail text, opted_out boolean, our_message_id text, carrier_event_id text, occurred_at text',
      receipts.map((r) => ({
        carrier: r.carrier, carrier_message_id: r.carrierMessageId, status: r.status, carrier_status: r.carrierStatus,
        ...(optedOut(r) ? toErrorColumns(carrierOptOutFailure(r.errorCode, r.errorDetail)) : toErrorColumns(r)), opted_out: optedOut(r),
        our_message_id: r.ourMessageId ?? null, carrier_event_id: r.carrierEventId ?? null, occurred_at: r.occurredAt ?? null,
      })),
    );
    // `rcpt_found` locks the messages these receipts name, in id order (two batches that share
    // messages never wait on each other crosswise): a twin receipt waits, then sees what this one
    // left (`previous`, `settles`: the locked row's, the newest committed version). Each row
    // carries its receipt's values under names of its own (the UPDATE's RETURNING reads the
    // message's columns unqualified). The ids as arrays too: the messages are found by their
    // primary or unique key, whatever the planner makes of the recordset.
    const looked = receipts.filter((r) => r.status !== null || r.ourMessageId !== undefined);
    stmt.with(
      'rcpt_found',
      `SELECT i.event_id AS rcpt_event_id, m.id AS found_id, m.status AS previous, m.direction = 'outbound' AS outbound,
              m.status = 'sending' AND m.carrier_message_id IS NULL AS settles, i.carrier_message_id AS rcpt_carrier_id,
              CASE WHEN m.status = 'sending' AND m.carrier_message_id IS NULL THEN coalesce(i.status, 'sent') ELSE i.status END AS rcpt_status,
              CASE WHEN m.outcome_unknown_since IS NOT NULL THEN ${stmt.param(SendResolution.byReceipt, 'text')} ELSE ${stmt.param(RECEIPT_BEFORE_ANSWER, 'text')} END AS settle_detail,
              i.error_code AS rcpt_error_code, i.error_detail AS rcpt_error_detail, i.opted_out AS rcpt_opted_out,
              i.carrier_event_id AS rcpt_carrier_event_id, i.occurred_at AS rcpt_occurred_at
         FROM ${input} i JOIN messages m ON m.carrier = i.carrier
              AND (m.id = i.our_message_id
                   OR (m.carrier_message_id = i.carrier_message_id
                       AND (i.our_message_id IS NULL OR NOT EXISTS (SELECT FROM messages r WHERE r.id = i.our_message_id AND r.carrier = i.carrier))))
        WHERE (i.status IS NOT NULL OR i.our_message_id IS NOT NULL)
          AND (m.id = ANY (${stmt.param(looked.flatMap((r) => (r.ourMessageId ? [r.ourMessageId] : [])), 'text[]')})
               OR (m.carrier = ANY (${stmt.param([...new Set(looked.map((r) => r.carrier))], 'text[]')})
                   AND m.carrier_message_id = ANY (${stmt.param(looked.map((r) => r.carrierMessageId), 'text[]')})))
        ORDER BY m.id FOR UPDATE OF m`,
    );
    // The guard, over a locked row `f`: only an outbound message that is not terminal and not
    // already at the receipt's status moves; the first terminal word wins.
    const moves = (f: string) => `${f}.outbound AND ${f}.rcpt_status IS NOT NULL AND ${f}.previous <> ALL(${stmt.param(TERMINAL_STATUSES, 'text[]')}) AND ${f}.previous <> ${f}.rcpt_status`;
    const applied = run.consume({
      ready: (i) => `(${i}.status IS NULL OR EXISTS (SELECT FROM rcpt_found f WHERE f.rcpt_event_id = ${i}.event_id))`,
      notReadyReason: (i) => `'no message carries ' || ${i}.carrier || ' id ' || ${i}.carrier_message_id || coalesce(' or is ' || ${i}.our_message_id, '') || ' yet'`,
      note: (i) =>
        `CASE WHEN NOT EXISTS (SELECT FROM rcpt_found f WHERE f.rcpt_event_id = ${i}.event_id AND ${moves('f')})
              THEN CASE WHEN ${i}.status IS NULL THEN 'carrier status ' || ${i}.carrier_status || ' changes nothing'
                        ELSE 'duplicate or superseded receipt (' || ${i}.carrier_status || ')' END END`,
    });
    const moved = stmt.with(
      'rcpt_moved',
      `UPDATE messages m SET status = f.rcpt_status, error_code = coalesce(f.rcpt_error_code, m.error_code),
              error_detail = coalesce(f.rcpt_error_detail, m.error_detail), updated_at = now(),
              carrier_message_id = CASE WHEN f.settles THEN f.rcpt_carrier_id ELSE m.carrier_message_id END,
              claimed_until = CASE WHEN f.settles THEN NULL ELSE m.claimed_until END,
              outcome_unknown_since = CASE WHEN f.settles THEN NULL ELSE m.outcome_unknown_since END
         FROM rcpt_found f JOIN ${applied} c ON c.consumed_event_id = f.rcpt_event_id
        WHERE m.id = f.found_id AND ${moves('f')}
       RETURNING ${MESSAGE_COLUMNS}, f.settles AS rcpt_settled, f.settle_detail AS rcpt_settle_detail, f.rcpt_opted_out,
                 f.rcpt_event_id, f.rcpt_carrier_event_id, f.rcpt_occurred_at`,
    );
    // Only a batch with an opted-out receipt writes consent (the usual receipt's statement stays as it was).
    const consent = receipts.some(optedOut)
      ? this.keywords.carrierOptOutCtes(stmt, stmt.with('rcpt_opted_out', `SELECT * FROM ${moved} WHERE rcpt_opted_out AND status = 'failed'`))
      : undefined;
    this.receiptSideEffectsCtes(stmt, moved, consent);
  }

  /**
   * What the receipts' moves (CTE `moved`: MESSAGE_COLUMNS, rcpt_settled, rcpt_settle_detail, the receipt's event ids)
   * write beside them. A settled message first as markSent would: billed, `sent` on the history
   * (with how it was settled), `message.sent` showing it sent; then every move to its own status
   * (a settled message that stopped at `sent` has no second one): history and `message.<status>`;
   * announced with the consent changes the moves made (CTE `consent`), in one emission.
   */
  private receiptSideEffectsCtes(stmt: CteStatement, moved: string, consent: string | undefined): void {
    const settled = stmt.with(
      'rcpt_settled',
      `SELECT id, record_type, direction, "from", "to", text, 'sent'::text AS status, segments, encoding, carrier, carrier_message_id,
              NULL::text AS error_code, NULL::text AS error_detail, send_at, expected_send_at, created_at, updated_at, account_id, rcpt_settle_detail,
              rcpt_settle_detail AS settled_by, rcpt_event_id AS cause_event_id, rcpt_carrier_event_id AS cause_carrier_event_id, rcpt_occurred_at AS cause_occurred_at
         FROM ${moved} WHERE rcpt_settled`,
    );
    this.effects.billOutboundCtes(stmt, settled);
    const further = `${moved} WHERE NOT (rcpt_settled AND status = 'sent')`;
    // One INSERT, in order: a settled message's `sent` before its final word.
    stmt.with(
      'msg_history',
      `INSERT INTO message_status_history (message_id, status, detail)
       SELECT id, status, detail FROM (
         SELECT id, status, rcpt_settle_detail AS detail, 0 AS step FROM ${settled}
         UNION ALL SELECT id, status, NULL, 1 FROM ${further}) h ORDER BY id, step`,
    );
    const announced = stmt.with(
      'msg_moves',
      `SELECT s.*, 'message.sent' AS type FROM (SELECT ${MOVE_VIEW_COLUMNS} FROM ${settled}) s
       UNION ALL SELECT f.*, 'message.' || f.status AS type FROM (SELECT ${MOVE_VIEW_COLUMNS} FROM ${further}) f`,
    );
    this.effects.announceTypedCtes(stmt, announced, RECEIPT_EVENT_TYPES, consent);
  }

  /**
   * Inbound messages, as fragments of one statement for a batch of events: each recorded once per
   * carrier message id when a number of ours receives it (`owners`), then billed and announced
   * (MessageEffects).
   */
  receiveInboundCtes(run: EventBatchRun, owners: OwnersOf, inbound: Inbound[]): void {
    const { stmt } = run;
    const input = run.input(
      'message_id text, carrier text, carrier_message_id text, from_number text, to_number text, text text, segments int, encoding text, carrier_event_id text, occurred_at text',
      inbound.map((m) => ({
        message_id: m.id, carrier: m.carrier, carrier_message_id: m.carrierMessageId, from_number: m.from, to_number: m.to, text: m.text, segments: m.segments, encoding: m.encoding,
        carrier_event_id: m.carrierEventId ?? null, occurred_at: m.occurredAt ?? null,
      })),
    );
    const owner = owners(input, 'to_number');
    const applied = run.consume({ note: (i) => `CASE WHEN NOT EXISTS (SELECT FROM ${owner} o WHERE o.event_id = ${i}.event_id) THEN 'no account owns ' || ${i}.to_number END` });
    // WHERE message_twin(...) IS NULL: a replayed or re-signed delivery inserts nothing, whichever
    // partition its twin is in (migration 0046: the key's advisory lock, then a fresh look). Two
    // batches sharing two carrier message ids in opposite orders can deadlock (PostgreSQL aborts one):
    // the input's rows are its events' (positional), not sorted by key. ON CONFLICT: the
    // partitions' unique indexes, a backstop (no target: the parent has none to name).
    const received = stmt.with(
      'msg_received',
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, carrier_message_id)
       SELECT i.message_id, o.account_id, 'inbound', i.from_number, i.to_number, i.text, 'received', i.segments, i.encoding, i.carrier, i.carrier_message_id
         FROM ${input} i JOIN ${owner} o ON o.event_id = i.event_id JOIN ${applied} c ON c.consumed_event_id = i.event_id
        WHERE message_twin(i.carrier, i.carrier_message_id) IS NULL
       ON CONFLICT DO NOTHING
       RETURNING ${MESSAGE_COLUMNS}`,
    );
    // Each billed with the event that delivered it as its cause.
    const billed = stmt.with(
      'msg_received_cause',
      `SELECT r.*, i.event_id AS cause_event_id, i.carrier_event_id AS cause_carrier_event_id, i.occurred_at AS cause_occurred_at FROM ${received} r JOIN ${input} i ON i.message_id = r.id`,
    );
    this.effects.billInboundCtes(stmt, billed);
    stmt.with('msg_history', `INSERT INTO message_status_history (message_id, status) SELECT id, 'received' FROM ${received}`);
    // A keyword's consent change is written by this same statement, and announced with the messages.
    const consent = this.keywords.applyCtes(stmt, received);
    this.effects.announceInboundCtes(stmt, received, consent);
  }
}
