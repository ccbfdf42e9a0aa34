import { Injectable } from '@nestjs/common';
import { UsageLedger } from '../billing/usage-ledger.js';
import type { SettledBy } from '../billing/usage-cause.dto.js';
import { causeSql, segmentRuleSql, type CauseEventColumns } from '../billing/usage-causes.js';
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
 * its own. The moves (DispatchClaims, SendOutcomes, ReceiptsAndInbound, MessageCancel) write messaging's rows (the message, its history, its number's
 * slots, its next dispatch job) and hands the changed rows here, so "where is an SMS billed, and
 * what does its customer hear" is this file.
 */
@Injectable()
export class MessageEffects {
  constructor(
    private readonly usage: UsageLedger,
    private readonly events: CustomerEvents,
  ) {}

  /**
   * The carrier accepted an outbound message: billed per segment, `message.sent`. `settledBy`: its
   * answer to our send, a lookup, or an answer that came after the lease was taken over (no carrier
   * event: the cause names the carrier's message id).
   */
  async sent(tx: Tx, message: MessageRow, settledBy: SettledBy): Promise<void> {
    await this.usage.record(tx, {
      accountId: message.account_id, kind: 'sms_outbound_segments', resourceId: message.id, quantity: message.segments,
      cause: {
        resource: { type: 'message', id: message.id }, transition: 'sending → sent', settled_by: settledBy, carrier: message.carrier,
        carrier_resource_id: message.carrier_message_id, carrier_events: [], price_rule: { unit: 'segment', segments: message.segments, encoding: message.encoding },
      },
    });
    await this.announce(tx, message, 'message.sent');
  }

  /**
   * sent, as a fragment of a receipt's statement, for the rows of CTE `settled` (MESSAGE_COLUMNS,
   * `settled_by`, and the receipt's event: `cause_event_id`, `cause_carrier_event_id`,
   * `cause_occurred_at`): billed per segment, the receipt named as the cause (its announcement is the statement's).
   */
  billOutboundCtes(stmt: CteStatement, settled: string): void {
    const event: CauseEventColumns = { id: 'cause_event_id', carrierEventId: 'cause_carrier_event_id', role: 'receipt', occurredAt: 'cause_occurred_at' };
    this.billCtes(stmt, settled, 'sms_outbound_segments', { transition: `'sending → sent'`, settledBy: 'settled_by', event });
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
   * `typed` (MESSAGE_COLUMNS and `type`, one of `types`): each announced as its type, with the
   * consent changes the same moves made, when they made some (CTE `consent`: account_id, type,
   * payload; a carrier's "recipient opted out" in a failed receipt), in one emission. Billed
   * nothing here: a receipt bills only the send it settles (billOutboundCtes).
   */
  announceTypedCtes(stmt: CteStatement, typed: string, types: readonly CustomerEventType[], consent?: string): void {
    if (!consent) return void this.events.emitFromCte(stmt, typed, types, MESSAGE_VIEW_JSON);
    this.announceWithEventsCtes(stmt, 'msg_typed', `SELECT account_id, type, ${MESSAGE_VIEW_JSON} AS payload FROM ${typed}`, types, consent, ['message.opted_out']);
  }

  /**
   * announceCtes for the rows of CTE `changed`, with the consent changes the same move made (CTE
   * `consent`: account_id, type, payload; a carrier's "recipient opted out"), in one emission.
   */
  announceWithConsentCtes(stmt: CteStatement, changed: string, type: CustomerEventType, consent: string | undefined): void {
    if (!consent) return this.announceCtes(stmt, changed, type);
    this.announceWithEventsCtes(stmt, 'msg_with_consent', `SELECT account_id, ${stmt.param(type, 'text')} AS type, ${MESSAGE_VIEW_JSON} AS payload FROM ${changed}`, [type], consent, ['message.opted_out']);
  }

  /**
   * Inbound messages as the statement recorded them (CTE `received`, MESSAGE_COLUMNS, and the
   * delivering event: `cause_event_id`, `cause_carrier_event_id`, `cause_occurred_at`): billed per segment.
   */
  billInboundCtes(stmt: CteStatement, received: string): void {
    const event: CauseEventColumns = { id: 'cause_event_id', carrierEventId: 'cause_carrier_event_id', role: 'inbound', occurredAt: 'cause_occurred_at' };
    this.billCtes(stmt, received, 'sms_inbound_segments', { transition: `'→ received'`, event });
  }

  /** Billed per segment, for the rows of CTE `rows`, with their cause. */
  private billCtes(stmt: CteStatement, rows: string, kind: 'sms_outbound_segments' | 'sms_inbound_segments', cause: { transition: string; settledBy?: string; event: CauseEventColumns }): void {
    const causeJson = causeSql(stmt, {
      resource: { type: 'message', id: 'id' }, ...cause, carrier: 'carrier', carrierResourceId: 'carrier_message_id', rule: segmentRuleSql('segments', 'encoding'),
    });
    this.usage.recordFromCte(stmt, rows, kind, { accountId: 'account_id', resourceId: 'id', quantity: 'segments', cause: causeJson });
  }

  /**
   * Inbound messages announced, `message.received` each, with the consent changes their keywords
   * made (CTE `consent`: account_id, type, payload), in the same statement.
   */
  announceInboundCtes(stmt: CteStatement, received: string, consent: string): void {
    const moves = `SELECT account_id, 'message.received' AS type, ${MESSAGE_VIEW_JSON} AS payload FROM ${received}`;
    this.announceWithEventsCtes(stmt, 'msg_announced', moves, ['message.received'], consent, ['message.opted_out', 'message.opted_in']);
  }

  /**
   * The customer events of one statement's moves (`moves`: a query of account_id, type, payload;
   * of `types`) and of the consent changes it made (CTE `consent`, of `consentTypes`), as the one
   * emission a statement has (CustomerEvents.emitFromCte writes its jobs once), from CTE `name`.
   */
  private announceWithEventsCtes(stmt: CteStatement, name: string, moves: string, types: readonly CustomerEventType[], consent: string, consentTypes: readonly CustomerEventType[]): void {
    const announced = stmt.with(name, `${moves}\n       UNION ALL SELECT account_id, type, payload FROM ${consent}`);
    this.events.emitFromCte(stmt, announced, [...types, ...consentTypes], 'payload');
  }
}
