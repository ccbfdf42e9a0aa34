import { Injectable } from '@nestjs/common';
import type { NumberOrderCompleted } from '../../carriers/normalized-event.js';
import type { Tx } from '../../platform/database/tx.js';
import { HandlesCarrierEvent } from '../ingest/carrier-event-handlers.js';
import { NumberOrderTransitions } from './number-order-transitions.js';

/**
 * A carrier's asynchronous order completion (Telnyx number_order.complete), ingested like any
 * carrier event. It settles the order through the same guarded transition as the placing run
 * and the poll: a duplicate, a resend with a new event id or a reordered pair settles it once.
 * Read from the documented callback: our order id (customer_reference) and each number's
 * status; a callback that does not say how the order ended has the carrier asked at once.
 */
@Injectable()
export class NumberOrderEvents {
  constructor(private readonly transitions: NumberOrderTransitions) {}

  @HandlesCarrierEvent('number.order.completed')
  async completed(event: NumberOrderCompleted, tx: Tx): Promise<string | void> {
    if (!event.orderId) return 'no customer_reference: not an order placed by us';
    if (!event.placement) {
      await this.transitions.askCarrierNow(tx, event.orderId, event.carrierOrderId, event.carrierEventId);
      return `order ${event.orderId}: the callback does not say how it ended; the carrier is asked now`;
    }
    const settled = await this.transitions.settle(tx, event.orderId, { ...event.placement, carrier: event.carrier });
    if (!settled) return `order ${event.orderId} was settled already (or is not a ${event.carrier} order of ours)`;
  }
}
