import { Injectable } from '@nestjs/common';
import { newId, IdPrefix } from '../../platform/ids.js';
import { HandlesCarrierEventsInOneStatement, type EventBatchRun } from '../ingest/carrier-event-handlers.js';
import type { MessageReceived, MessageStatusChanged } from '../../carriers/normalized-event.js';
import { PhoneNumbers, type OwnersOf } from '../numbers/phone-numbers.service.js';
import { ReceiptsAndInbound, type Receipt } from './receipts-and-inbound.js';
import { countSegments } from '../../telephony/segments.js';

/** A receipt's word the message can move to (any other changes nothing). */
const isFinal = (event: MessageStatusChanged): event is MessageStatusChanged & { status: Receipt['status'] & string } =>
  event.status === 'sent' || event.status === 'delivered' || event.status === 'failed';

/** The message a receipt moves, when it can move one: by our reference, else by the carrier's id for a final word. */
function receiptKey(event: MessageStatusChanged): string | undefined {
  if (event.ourMessageId) return `msg:${event.ourMessageId}`;
  return isFinal(event) ? `${event.carrier}:${event.carrierMessageId}` : undefined;
}

/**
 * What Messaging does with the carrier events it owns: receipts and inbound SMS, each kind in
 * batches, as the fragments of one statement (the hot path: no BEGIN, no COMMIT, one round trip).
 */
@Injectable()
export class MessagingCarrierEvents {
  constructor(
    private readonly statements: ReceiptsAndInbound,
    private readonly numbers: PhoneNumbers,
  ) {}

  /**
   * Receipts, a batch in one statement. A receipt moves the message only through a guarded
   * transition. Non-final words (queued, sending) and words we do not know are kept on the carrier
   * event, never acted on. A receipt for a carrier id no message carries yet outran the
   * dispatcher's commit: retry, never buffer. `key`: two receipts of one message never share a
   * statement (one UPDATE would apply only one of them); the later goes into the next. A receipt
   * naming our message by its reference is keyed by it, whatever its word: any word settles a
   * message still `sending` (ReceiptsAndInbound.applyReceiptCtes).
   */
  @HandlesCarrierEventsInOneStatement('message.status', { key: receiptKey })
  applyReceipt(events: MessageStatusChanged[], run: EventBatchRun): void {
    this.statements.applyReceiptCtes(run, events.map((event) => ({
      carrier: event.carrier,
      carrierMessageId: event.carrierMessageId,
      status: isFinal(event) ? event.status : null,
      carrierStatus: event.carrierStatus,
      errorCode: event.errorCode,
      errorDetail: event.errorDetail,
      reason: event.reason,
      ourMessageId: event.ourMessageId,
      carrierEventId: event.carrierEventId,
      occurredAt: event.occurredAt,
    })));
  }

  /** Inbound SMS, a batch in one statement. One to a number nobody owns creates nothing; its event keeps the reason. */
  @HandlesCarrierEventsInOneStatement('message.received')
  receive(events: MessageReceived[], run: EventBatchRun): void {
    const owners: OwnersOf = (rows, numberColumn) => this.numbers.ownersCte(run.stmt, 'msg_owner', rows, numberColumn);
    this.statements.receiveInboundCtes(run, owners, events.map((event) => ({
      id: newId(IdPrefix.Message),
      carrier: event.carrier,
      carrierMessageId: event.carrierMessageId,
      from: event.from,
      to: event.to,
      text: event.text,
      ...countSegments(event.text),
      carrierEventId: event.carrierEventId,
      occurredAt: event.occurredAt,
    })));
  }
}
