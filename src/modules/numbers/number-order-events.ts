import { Injectable } from '@nestjs/common';
import type { NumberOrderCompleted } from '../../carriers/normalized-event.js';
import type { Tx } from '../../platform/database/tx.js';
import { HandlesCarrierEvent, type CarrierEventContext } from '../ingest/carrier-event-handlers.js';
import { NumberOrderTransitions } from './number-order-transitions.js';

/**
 * A carrier's asynchronous order completion (Telnyx number_order.complete), ingested like any
 * carrier event. It settles the order through the same guarded transition as the placing run
 * and the poll: a duplicate, a resend with a new event id or a reordered pair settles it once.
 * Read from the documented callback: our order id (customer_reference) and each number's
 * status; a callback that does not say how the order ended has the carrier asked at once.
 * A callback for an order that is not ours (another system's order on the same carrier account,
 * Telnyx's published example "MY REF 001") is kept, noted, and changes nothing.
 */
@Injectable()
export class NumberOrderEvents {
  constructor(private readonly transitions: NumberOrderTransitions) {}

  @HandlesCarrierEvent('number.order.completed')
  async completed(event: NumberOrderCompleted, tx: Tx, context: CarrierEventContext): Promise<string | void> {
    if (!event.orderId) return 'no customer_reference: not an order placed by us';
    const reference = JSON.stringify(event.orderId);
    if (!event.placement) {
      // Our stored event's id names the poll: a replay of this event asks no second time.
      const ask = { reference: event.orderId, carrier: event.carrier, carrierOrderId: event.carrierOrderId, eventId: context.carrierEventId };
      const asked = await this.transitions.askCarrierNow(tx, ask);
      if (asked === 'not_ours') return `no ${event.carrier} order of ours has customer_reference ${reference}: kept, not acted on`;
      if (asked === 'settled') return `order ${event.orderId} was settled already`;
      return `order ${event.orderId}: the callback does not say how it ended; the carrier is asked now`;
    }
    const settled = await this.transitions.settle(tx, event.orderId, { ...event.placement, carrier: event.carrier });
    if (!settled) return `order ${reference} was settled already, or no ${event.carrier} order of ours has that customer_reference`;
  }
}
