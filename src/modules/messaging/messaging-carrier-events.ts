import { Injectable } from '@nestjs/common';
import { newId, IdPrefix } from '../../platform/ids.js';
import type { Tx } from '../../platform/database/tx.js';
import { HandlesCarrierEvent, RetryLaterError } from '../ingest/carrier-event-handlers.js';
import type { MessageReceived, MessageStatusChanged } from '../../carriers/normalized-event.js';
import { PhoneNumbers } from '../numbers/phone-numbers.service.js';
import { MessageTransitions } from './message-transitions.js';
import { countSegments } from '../../telephony/segments.js';

/** What Messaging does with the carrier events it owns: receipts and inbound SMS. */
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
  @HandlesCarrierEvent('message.status')
  async applyReceipt(event: MessageStatusChanged, tx: Tx): Promise<string | void> {
    if (event.status !== 'sent' && event.status !== 'delivered' && event.status !== 'failed') return `carrier status ${event.carrierStatus} changes nothing`;
    const outcome = await this.transitions.applyReceipt(tx, {
      carrier: event.carrier,
      carrierMessageId: event.carrierMessageId,
      status: event.status,
      errorCode: event.errorCode,
      errorDetail: event.errorDetail,
    });
    if (outcome === 'unknown_message') throw new RetryLaterError(`no message carries ${event.carrier} id ${event.carrierMessageId} yet`);
    if (outcome === 'unchanged') return `duplicate or superseded receipt (${event.carrierStatus})`;
  }

  /** An inbound SMS to a number nobody owns creates nothing; the event keeps the reason. */
  @HandlesCarrierEvent('message.received')
  async receive(event: MessageReceived, tx: Tx): Promise<string | void> {
    const owner = await this.numbers.findOwner(tx, event.to);
    if (!owner) return `no account owns ${event.to}`;
    const { encoding, segments } = countSegments(event.text);
    await this.transitions.receiveInbound(tx, {
      id: newId(IdPrefix.Message),
      accountId: owner.accountId,
      carrier: event.carrier,
      carrierMessageId: event.carrierMessageId,
      from: event.from,
      to: event.to,
      text: event.text,
      segments,
      encoding,
    });
  }
}
