import { Injectable } from '@nestjs/common';
import type { OrderedNumber } from '../../carriers/number-provider.js';
import type { CarrierName } from '../../carriers/carrier-name.js';
import { exec, queryRows, type Tx } from '../../platform/database/tx.js';
import { PollNumberOrderJob, StoreNumberIdsJob } from './numbers.jobs.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { CustomerEvents } from '../webhooks/customer-events.js';
import { readOrderView } from './number-order-view.js';
import type { NumberOrderView } from './number-order.dto.js';

/** What a run that may call the carrier needs to know about its order. */
export interface OrderClaim {
  id: string;
  accountId: string;
  carrier: CarrierName;
  country: string;
  phoneNumbers: string[];
}

export type PlacingClaim = { kind: 'claimed'; claim: OrderClaim; lease: Date } | { kind: 'leased'; until: Date } | { kind: 'settled' };

/** The order's moves: pending → success | failed exactly once, each one guarded UPDATE. */
@Injectable()
export class NumberOrderTransitions {
  constructor(
    private readonly events: CustomerEvents,
    private readonly outbox: OutboxService,
  ) {}

  /** Takes the lease to call the carrier for a pending order: no other run calls it until it ends. */
  async claimForPlacing(tx: Tx, orderId: string, leaseSeconds: number): Promise<PlacingClaim> {
    // Locks the order; the UPDATE moves only a pending order whose lease is free. `o` is the row
    // as locked: its status and lease say why nothing moved.
    const { rows } = await exec<{ claimed: boolean; status: string; placing_until: Date | null; account_id: string; carrier: OrderClaim['carrier']; country: string; numbers: string[] }>(
      tx,
      `WITH o AS (SELECT id, status, placing_until FROM number_orders WHERE id = $1 FOR UPDATE),
            taken AS (
              UPDATE number_orders n SET placing_until = date_trunc('milliseconds', now() + make_interval(secs => $2))
                FROM o WHERE n.id = o.id AND o.status = 'pending' AND (o.placing_until IS NULL OR o.placing_until <= now())
              RETURNING n.id, n.account_id, n.carrier, n.country, n.placing_until)
       SELECT (t.id IS NOT NULL) AS claimed, o.status, coalesce(t.placing_until, o.placing_until) AS placing_until, t.account_id, t.carrier, t.country,
              ARRAY(SELECT p.phone_number FROM phone_numbers p WHERE p.order_id = o.id AND p.status = 'ordering' ORDER BY p.phone_number) AS numbers
         FROM o LEFT JOIN taken t ON t.id = o.id`,
      [orderId, leaseSeconds],
    );
    const row = rows[0];
    if (!row || row.status !== 'pending') return { kind: 'settled' };
    if (!row.claimed) return { kind: 'leased', until: row.placing_until! };
    return { kind: 'claimed', lease: row.placing_until!, claim: { id: orderId, accountId: row.account_id, carrier: row.carrier, country: row.country, phoneNumbers: row.numbers } };
  }

  /** Gives the lease back (the run stopped calling the carrier), so a retry may claim it at once. */
  async releaseLease(tx: Tx, orderId: string, lease: Date): Promise<void> {
    // Only this run's lease (its end time, to the millisecond, is its token): never one a later run took.
    await exec(tx, `UPDATE number_orders SET placing_until = NULL WHERE id = $1 AND status = 'pending' AND placing_until = $2`, [orderId, lease]);
  }

  /** The carrier took the order and settles it later: its id is kept, and a poll is due in case its webhook is late. */
  async recordPending(tx: Tx, orderId: string, carrierOrderId: string, pollSeconds: number): Promise<boolean> {
    // Only a pending order: a completion that came first is never undone.
    const { affected } = await exec(tx, `UPDATE number_orders SET carrier_order_id = $2, placing_until = NULL WHERE id = $1 AND status = 'pending'`, [orderId, carrierOrderId]);
    if (affected === 1) {
      await this.outbox.enqueue(tx, { job: PollNumberOrderJob, data: { orderId, poll: 1 }, jobId: `poll-${orderId}-1`, runAt: new Date(Date.now() + pollSeconds * 1000) });
    }
    return affected === 1;
  }

  /**
   * A completion callback that does not say how the order ended: the carrier is asked about the
   * order now (one poll, `poll` 0), not at the next regular poll. Repeats of the callback (the
   * same stored event, `eventId`) ask once. `reference` is the carrier's text (Telnyx
   * customer_reference): it only selects our order, and the poll's job id is built from our ids
   * alone. Says what happened: asked, the order settled already, or no order of ours is `reference`.
   */
  async askCarrierNow(tx: Tx, ask: { reference: string; carrier: CarrierName; carrierOrderId?: string; eventId: string }): Promise<'asked' | 'settled' | 'not_ours'> {
    // A read: the poll asks only about an order still pending when it runs, and settle's guard records the outcome once.
    const [order] = await queryRows<{ id: string; status: string }>(tx, `SELECT id, status FROM number_orders WHERE id = $1 AND carrier = $2`, [ask.reference, ask.carrier]);
    if (!order) return 'not_ours';
    if (order.status !== 'pending') return 'settled';
    const data = { orderId: order.id, poll: 0, ...(ask.carrierOrderId && { carrierOrderId: ask.carrierOrderId }) };
    await this.outbox.enqueue(tx, { job: PollNumberOrderJob, data, jobId: `poll-${order.id}-event-${ask.eventId}` });
    return 'asked';
  }

  /**
   * Settles a pending order with what the carrier said about each number: bought ones become
   * the account's (active), the others (and any the carrier did not mention) failed. The order
   * is success when at least one was bought. order.completed or order.failed, once: only the
   * run whose UPDATE moved the order emits. Returns the order, or undefined when it was settled already.
   */
  async settle(tx: Tx, orderId: string, outcome: { carrierOrderId?: string; numbers: OrderedNumber[]; error?: string; carrier?: CarrierName }): Promise<NumberOrderView | undefined> {
    const bought = outcome.numbers.filter((n) => n.bought);
    const error = bought.length > 0 ? null : (outcome.error ?? outcome.numbers.find((n) => n.error)?.error ?? 'the carrier bought none of the numbers');
    const { rows } = await exec<{ account_id: string; status: 'success' | 'failed' }>(
      tx,
      // WHERE status = 'pending': the first settlement wins; a duplicate, late or replayed one changes nothing.
      `WITH settled AS (
         UPDATE number_orders SET status = $2, error = $3, completed_at = now(), placing_until = NULL, carrier_order_id = coalesce(carrier_order_id, $4)
          WHERE id = $1 AND status = 'pending' AND ($6::text IS NULL OR carrier = $6) RETURNING id, account_id, status),
       said AS (SELECT * FROM jsonb_to_recordset($5::jsonb) AS o(phone_number text, bought boolean, carrier_number_id text)),
       numbers AS (
         UPDATE phone_numbers p
            SET status = CASE WHEN x.bought THEN 'active' ELSE 'failed' END,
                carrier_number_id = x.carrier_number_id,
                activated_at = CASE WHEN x.bought THEN now() END
           FROM (SELECT q.id, coalesce(s.bought, false) AS bought, s.carrier_number_id
                   FROM settled JOIN phone_numbers q ON q.order_id = settled.id
                   LEFT JOIN said s ON s.phone_number = q.phone_number) x
          WHERE p.id = x.id AND p.status = 'ordering'
          RETURNING p.id)
       SELECT account_id, status, (SELECT count(*) FROM numbers) AS numbers FROM settled`,
      [
        orderId,
        bought.length > 0 ? 'success' : 'failed',
        error,
        outcome.carrierOrderId ?? null,
        JSON.stringify(outcome.numbers.map((n) => ({ phone_number: n.phoneNumber, bought: n.bought, carrier_number_id: n.carrierNumberId ?? null }))),
        outcome.carrier ?? null,
      ],
    );
    if (rows.length === 0) return undefined;
    // Bought numbers the carrier gave no id for (Telnyx) get it looked up and stored, for release.
    if (bought.some((n) => !n.carrierNumberId)) await this.outbox.enqueue(tx, { job: StoreNumberIdsJob, data: { orderId }, jobId: `number-ids-${orderId}` });
    const view = await readOrderView(tx, rows[0].account_id, orderId);
    await this.events.emit(tx, rows[0].account_id, rows[0].status === 'success' ? 'order.completed' : 'order.failed', view!);
    return view;
  }
}
