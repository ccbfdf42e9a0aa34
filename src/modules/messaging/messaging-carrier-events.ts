import { Injectable } from '@nestjs/common';
import { newId, IdPrefix } from '../../platform/ids.js';
import { HandlesCarrierEventInOneStatement, HandlesCarrierEventsInOneStatement, type EventBatchRun, type OneStatementRun } from '../ingest/carrier-event-handlers.js';
import type { MessageReceived, MessageStatusChanged } from '../../carriers/normalized-event.js';
import { PhoneNumbers, type OwnersOf } from '../numbers/phone-numbers.service.js';
import { MessageTransitions } from './message-transitions.js';
import { countSegments } from '../../telephony/segments.js';

/**
 * What Messaging does with the carrier events it owns: receipts and inbound SMS as the fragments
 * of one statement (the hot path: no BEGIN, no COMMIT, one round trip; inbound SMS in batches).
 */
@Injectable()
export class MessagingCarrierEvents {
  constructor(
    private readonly transitions: MessageTransitions,
    private readonly numbers: PhoneNumbers,
  ) {}

  /**
   * A receipt moves the message only through a guarded transition. Non-final words (queued,
   * sending) and words we do not know are kept on the carrier event, never acted on. A receipt for
   * a carrier id no message carries yet outran the dispatcher's commit: retry, never buffer.
   */
  @HandlesCarrierEventInOneStatement('message.status')
  applyReceipt(event: MessageStatusChanged, { stmt, consume }: OneStatementRun): void {
    if (event.status !== 'sent' && event.status !== 'delivered' && event.status !== 'failed') {
      consume({ note: stmt.param(`carrier status ${event.carrierStatus} changes nothing`, 'text') });
      return;
    }
    this.transitions.applyReceiptCtes(stmt, consume, {
      carrier: event.carrier,
      carrierMessageId: event.carrierMessageId,
      status: event.status,
      carrierStatus: event.carrierStatus,
      errorCode: event.errorCode,
      errorDetail: event.errorDetail,
    });
  }

  /** Inbound SMS, a batch in one statement. One to a number nobody owns creates nothing; its event keeps the reason. */
  @HandlesCarrierEventsInOneStatement('message.received')
  receive(events: MessageReceived[], run: EventBatchRun): void {
    const owners: OwnersOf = (rows, numberColumn) => this.numbers.ownersCte(run.stmt, 'msg_owner', rows, numberColumn);
    this.transitions.receiveInboundCtes(run, owners, events.map((event) => ({
      id: newId(IdPrefix.Message),
      carrier: event.carrier,
      carrierMessageId: event.carrierMessageId,
      from: event.from,
      to: event.to,
      text: event.text,
      ...countSegments(event.text),
    })));
  }
}
