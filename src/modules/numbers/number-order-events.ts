import { Injectable } from '@nestjs/common';
import type { NumberOrderCompleted } from '../../carriers/normalized-event.js';
import type { Tx } from '../../platform/database/tx.js';
import { HandlesCarrierEvent } from '../ingest/carrier-event-handlers.js';
import { NumberOrderTransitions } from './number-order-transitions.js';

/**
 * A carrier's asynchronous order completion (Telnyx number_order.complete), ingested like any
 * carrier event. It settles the order through the same guarded transition as the placing run
 * and the poll: a duplicate, a resend with a new event id or a reordered pair settles it once.
 */
@Injectable()
export class NumberOrderEvents {
  constructor(private readonly transitions: NumberOrderTransitions) {}

  @HandlesCarrierEvent('number.order.completed')
  async completed(event: NumberOrderCompleted, tx: Tx): Promise<string | void> {
    if (!event.orderId) return 'no customer_reference: not an order placed by us';
    if (event.placement.outcome === 'pending') return `order ${event.orderId} still pending at the carrier`;
    const settled = await this.transitions.settle(tx, event.orderId, { ...event.placement, carrier: event.carrier });
    if (!settled) return `order ${event.orderId} was settled already (or is not a ${event.carrier} order of ours)`;
  }
}
