import { Injectable } from '@nestjs/common';
import { UsageLedger } from '../billing/usage-ledger.js';
import type { CteStatement } from '../../platform/database/cte-statement.js';
import type { Tx } from '../../platform/database/tx.js';
import { CustomerEvents } from '../webhooks/customer-events.js';
import type { CustomerEventType } from '../webhooks/event-types.js';
import { MESSAGE_VIEW_JSON, toView, type MessageView } from './message-view.js';

/** A message's row as a move's RETURNING gives it (MESSAGE_COLUMNS). */
export type MessageRow = MessageView & { account_id: string };

/**
 * What a message's move bills and announces: its usage row and its customer event. Each is
 * written by the move's own statement or transaction, for the rows that move changed, never on
 * its own. MessageTransitions writes messaging's rows (the message, its history, its number's
 * slots, its next dispatch job) and hands the changed rows here, so "where is an SMS billed, and
 * what does its customer hear" is this file.
 */
@Injectable()
export class MessageEffects {
  constructor(
    private readonly usage: UsageLedger,
    private readonly events: CustomerEvents,
  ) {}

  /** The carrier accepted an outbound message: billed per segment, `message.sent`. */
  async sent(tx: Tx, message: MessageRow): Promise<void> {
    await this.usage.record(tx, { accountId: message.account_id, kind: 'sms_outbound_segments', resourceId: message.id, quantity: message.segments });
    await this.announce(tx, message, 'message.sent');
  }

  /** sent, as a fragment of a receipt's statement, for the rows of CTE `settled` (MESSAGE_COLUMNS): billed per segment (its announcement is the statement's). */
  billOutboundCtes(stmt: CteStatement, settled: string): void {
    this.usage.recordFromCte(stmt, settled, 'sms_outbound_segments', { accountId: 'account_id', resourceId: 'id', quantity: 'segments' });
  }

  /** A move that bills nothing (the carrier refused it): its customer event. */
  async announce(tx: Tx, message: MessageRow, type: CustomerEventType): Promise<void> {
    await this.events.emit(tx, message.account_id, type, toView(message));
  }

  /** announce, as a fragment of the move's statement, for the rows of CTE `changed` (MESSAGE_COLUMNS). */
  announceCtes(stmt: CteStatement, changed: string, type: CustomerEventType): void {
    this.events.emitFromCte(stmt, changed, type, MESSAGE_VIEW_JSON);
  }

  /**
   * announceCtes for rows that moved each to a status of its own (a batch of receipts), CTE
   * `typed` (MESSAGE_COLUMNS and `type`, one of `types`): each announced as its type. Billed
   * nothing here: a receipt bills only the send it settles (billOutboundCtes).
   */
  announceTypedCtes(stmt: CteStatement, typed: string, types: readonly CustomerEventType[]): void {
    this.events.emitFromCte(stmt, typed, types, MESSAGE_VIEW_JSON);
  }

  /**
   * announceCtes for the rows of CTE `changed`, with the consent changes the same move made (CTE
   * `consent`: account_id, type, payload; a carrier's "recipient opted out"), in one emission.
   */
  announceWithConsentCtes(stmt: CteStatement, changed: string, type: CustomerEventType, consent: string | undefined): void {
    if (!consent) return this.announceCtes(stmt, changed, type);
    const announced = stmt.with(
      'msg_with_consent',
      `SELECT account_id, ${stmt.param(type, 'text')} AS type, ${MESSAGE_VIEW_JSON} AS payload FROM ${changed}
       UNION ALL SELECT account_id, type, payload FROM ${consent}`,
    );
    this.events.emitFromCte(stmt, announced, [type, 'message.opted_out'], 'payload');
  }

  /** Inbound messages as the statement recorded them (CTE `received`, MESSAGE_COLUMNS): billed per segment. */
  billInboundCtes(stmt: CteStatement, received: string): void {
    this.usage.recordFromCte(stmt, received, 'sms_inbound_segments', { accountId: 'account_id', resourceId: 'id', quantity: 'segments' });
  }

  /**
   * Inbound messages announced, `message.received` each, with the consent changes their keywords
   * made (CTE `consent`: account_id, type, payload), in the same statement.
   */
  announceInboundCtes(stmt: CteStatement, received: string, consent: string): void {
    const announced = stmt.with(
      'msg_announced',
      `SELECT account_id, 'message.received' AS type, ${MESSAGE_VIEW_JSON} AS payload FROM ${received}
       UNION ALL SELECT account_id, type, payload FROM ${consent}`,
    );
    this.events.emitFromCte(stmt, announced, ['message.received', 'message.opted_out', 'message.opted_in'], 'payload');
  }
}
