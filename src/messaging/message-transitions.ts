import { Injectable } from '@nestjs/common';
import { UsageLedger } from '../billing/usage-ledger.js';
import { exec, type Tx } from '../database/tx.js';
import type { CarrierName } from '../ingest/normalized-event.js';
import { CustomerEvents } from '../webhooks/customer-events.js';
import type { CustomerEventType } from '../webhooks/event-types.js';
import { MESSAGE_COLUMNS, TERMINAL_STATUSES, toView, UNSENT_STATUSES, WAITING_STATUSES, type MessageStatus, type MessageView } from './message-view.js';

type Row = MessageView & { account_id: string };

/** What dispatch needs to call the carrier. */
export interface DispatchClaim {
  id: string;
  from_number: string;
  to_number: string;
  text: string;
  carrier: CarrierName;
}

/**
 * Every change of a message's status. Each is one UPDATE whose WHERE clause is the guard; the
 * status history, the usage row and the customer event are written in the same transaction,
 * only when that UPDATE changed a row. A duplicate or contradictory carrier report changes nothing.
 */
@Injectable()
export class MessageTransitions {
  constructor(
    private readonly usage: UsageLedger,
    private readonly events: CustomerEvents,
  ) {}

  /**
   * Claims an outbound message for a carrier call: queued|scheduled → sending (history, no event,
   * no charge), and one already `sending` (a run that died before recording the carrier's answer)
   * is claimed again as it is. Undefined when the message is gone or past sending: no call then.
   */
  async claimForDispatch(tx: Tx, messageId: string): Promise<DispatchClaim | undefined> {
    // FOR UPDATE in `claimed`: a twin run waits here and then sees what this one left. The UPDATE's
    // status IN (unsent) is the guard; only a message not yet picked up changes (and gets history).
    const { rows } = await exec<DispatchClaim & { previous: MessageStatus }>(
      tx,
      `WITH claimed AS (
         SELECT id, status AS previous FROM messages
          WHERE id = $1 AND direction = 'outbound' AND status = ANY($2::text[]) FOR UPDATE
       )
       UPDATE messages m SET status = 'sending',
              updated_at = CASE WHEN claimed.previous = ANY($3::text[]) THEN now() ELSE m.updated_at END
         FROM claimed WHERE m.id = claimed.id
       RETURNING m.id, m.from_number, m.to_number, m.text, m.carrier, claimed.previous`,
      [messageId, UNSENT_STATUSES, WAITING_STATUSES],
    );
    if (rows.length === 0) return undefined;
    const { previous, ...claim } = rows[0];
    if (WAITING_STATUSES.includes(previous)) await this.recordHistory(tx, messageId, 'sending');
    return claim;
  }

  /** The carrier accepted the message: stamped with its id, billed per segment, `message.sent`. */
  async markSent(tx: Tx, messageId: string, carrierMessageId: string): Promise<boolean> {
    // status IN (unsent): a second dispatch run (crash after the carrier answered) finds it sent already.
    const { rows } = await exec<Row>(
      tx,
      `UPDATE messages SET status = 'sent', carrier_message_id = $2, updated_at = now()
        WHERE id = $1 AND status = ANY($3::text[]) RETURNING ${MESSAGE_COLUMNS}`,
      [messageId, carrierMessageId, UNSENT_STATUSES],
    );
    if (rows.length === 0) return false;
    const message = rows[0];
    await this.recordHistory(tx, message.id, 'sent');
    await this.usage.record(tx, { accountId: message.account_id, kind: 'sms_outbound_segments', resourceId: message.id, quantity: message.segments });
    await this.emit(tx, message, 'message.sent');
    return true;
  }

  /** The carrier refused the send (its 4xx is an answer): failed, not billed, `message.failed`. */
  async markRejected(tx: Tx, messageId: string, errorCode: string, errorDetail: string): Promise<boolean> {
    // status IN (unsent): a message the carrier accepted is never failed by a late send error.
    const { rows } = await exec<Row>(
      tx,
      `UPDATE messages SET status = 'failed', error_code = $2, error_detail = $3, updated_at = now()
        WHERE id = $1 AND status = ANY($4::text[]) RETURNING ${MESSAGE_COLUMNS}`,
      [messageId, errorCode, errorDetail, UNSENT_STATUSES],
    );
    if (rows.length === 0) return false;
    await this.recordHistory(tx, messageId, 'failed');
    await this.emit(tx, rows[0], 'message.failed');
    return true;
  }

  /**
   * A delivery receipt for a message we sent. Returns 'applied', 'unchanged' (duplicate,
   * contradiction after a terminal status, or nothing to do) or 'unknown_message' (not stamped
   * with this carrier id yet: the caller retries later). The verdict comes from the one statement
   * that locks and moves the message: a stamp markSent has not committed yet is "unknown" (retry),
   * never explained away as a duplicate by a later read in a newer snapshot.
   */
  async applyReceipt(
    tx: Tx,
    receipt: { carrier: string; carrierMessageId: string; status: 'sent' | 'delivered' | 'failed'; errorCode?: string; errorDetail?: string },
  ): Promise<'applied' | 'unchanged' | 'unknown_message'> {
    // `found` locks the message this carrier id names (a twin receipt waits, then sees what this
    // one left); the UPDATE moves only an outbound one that is not terminal and not already at
    // the receipt's status: the first terminal word wins, and a 'sent' receipt never moves
    // anything (markSent stamps the carrier id and 'sent' together).
    // One row per message found; its columns are NULL when the UPDATE left it alone.
    const { rows } = await exec<Omit<Row, 'id'> & { id: string | null }>(
      tx,
      `WITH found AS (
         SELECT id AS found_id, status AS previous, direction = 'outbound' AS outbound FROM messages
          WHERE carrier = $1 AND carrier_message_id = $2 FOR UPDATE
       ), moved AS (
         UPDATE messages m SET status = $3, error_code = coalesce($4, error_code), error_detail = coalesce($5, error_detail), updated_at = now()
           FROM found
          WHERE m.id = found.found_id AND found.outbound AND found.previous <> ALL($6::text[]) AND found.previous <> $3
         RETURNING ${MESSAGE_COLUMNS}
       )
       SELECT moved.* FROM found LEFT JOIN moved ON moved.id = found.found_id`,
      [receipt.carrier, receipt.carrierMessageId, receipt.status, receipt.errorCode ?? null, receipt.errorDetail ?? null, TERMINAL_STATUSES],
    );
    if (rows.length === 0) return 'unknown_message';
    if (rows[0].id === null) return 'unchanged';
    const message = rows[0] as Row;
    await this.recordHistory(tx, message.id, receipt.status);
    await this.emit(tx, message, `message.${receipt.status}`);
    return 'applied';
  }

  /** Records an inbound message once per carrier message id; billed and announced only then. */
  async receiveInbound(
    tx: Tx,
    inbound: { id: string; accountId: string; carrier: string; carrierMessageId: string; from: string; to: string; text: string; segments: number; encoding: string },
  ): Promise<boolean> {
    // ON CONFLICT (carrier, carrier_message_id): a replayed or re-signed delivery inserts nothing.
    const { rows } = await exec<Row>(
      tx,
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, carrier_message_id)
       VALUES ($1, $2, 'inbound', $3, $4, $5, 'received', $6, $7, $8, $9)
       ON CONFLICT (carrier, carrier_message_id) DO NOTHING
       RETURNING ${MESSAGE_COLUMNS}`,
      [inbound.id, inbound.accountId, inbound.from, inbound.to, inbound.text, inbound.segments, inbound.encoding, inbound.carrier, inbound.carrierMessageId],
    );
    if (rows.length === 0) return false;
    await this.recordHistory(tx, inbound.id, 'received');
    await this.usage.record(tx, { accountId: inbound.accountId, kind: 'sms_inbound_segments', resourceId: inbound.id, quantity: inbound.segments });
    await this.emit(tx, rows[0], 'message.received');
    return true;
  }

  async recordHistory(tx: Tx, messageId: string, status: MessageStatus): Promise<void> {
    await exec(tx, `INSERT INTO message_status_history (message_id, status) VALUES ($1, $2)`, [messageId, status]);
  }

  private async emit(tx: Tx, row: Row, type: CustomerEventType): Promise<void> {
    await this.events.emit(tx, row.account_id, type, toView(row));
  }
}
