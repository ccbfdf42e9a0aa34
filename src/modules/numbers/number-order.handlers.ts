import { Injectable, Logger } from '@nestjs/common';
import { CarrierUnavailableError } from '../../carriers/message-sender.js';
import { NumberProviders } from '../../carriers/number-providers.js';
import type { OrderPlacement } from '../../carriers/number-provider.js';
import type { CarrierName } from '../../carriers/carrier-name.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { queryRows } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { PlaceNumberOrderJob, PollNumberOrderJob } from './numbers.jobs.js';
import { HandlesJob, type JobContext, type JobHandler } from '../../platform/outbox/job-handler.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { NumberOrderTransitions } from './number-order-transitions.js';

/** How long one run may call the carrier before another may (a run that died). */
const PLACING_LEASE_SECONDS = 60;

/**
 * Places one order at its carrier, outside any transaction, under a lease no other run calls
 * the carrier during. A repeat (BullMQ retry after a lost answer, a run after a lease ran out)
 * calls the carrier again and relies on the carrier's idempotency: Telnyx finds the order by
 * customer_reference (our order id), Twilio and Vonage find the number already ours. The
 * outcome is recorded by a guarded transition, so it is recorded once.
 */
@Injectable()
@HandlesJob(PlaceNumberOrderJob)
export class PlaceNumberOrderHandler implements JobHandler<typeof PlaceNumberOrderJob> {
  private readonly logger = new Logger(PlaceNumberOrderHandler.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly transitions: NumberOrderTransitions,
    private readonly providers: NumberProviders,
    private readonly outbox: OutboxService,
    private readonly config: AppConfig,
  ) {}

  async handle({ orderId }: PayloadOf<typeof PlaceNumberOrderJob>, { attempt }: JobContext): Promise<void> {
    const outcome = await this.uow.run(async (tx) => {
      const claimed = await this.transitions.claimForPlacing(tx, orderId, PLACING_LEASE_SECONDS);
      // Another run holds the lease: one run at its end follows up, in case the holder died.
      if (claimed.kind === 'leased') await this.outbox.enqueue(tx, { job: PlaceNumberOrderJob, data: { orderId }, jobId: `place-${orderId}-${claimed.until.getTime()}`, runAt: claimed.until });
      return claimed;
    });
    if (outcome.kind !== 'claimed') return;
    const order = outcome.claim;
    let placement: OrderPlacement;
    try {
      placement = await this.providers.for(order.carrier).order(order.id, order.country, order.phoneNumbers);
    } catch (err) {
      if (err instanceof CarrierUnavailableError && attempt >= PlaceNumberOrderJob.attempts) {
        this.logger.warn(`giving up on order ${orderId} after ${attempt} attempts: ${err.message}`);
        await this.uow.run((tx) => this.transitions.settle(tx, orderId, { numbers: [], error: `carrier unavailable: ${err.message}` }));
        return;
      }
      await this.uow.run((tx) => this.transitions.releaseLease(tx, orderId, outcome.lease)).catch((releaseErr: Error) => this.logger.warn(`lease on ${orderId} not given back: ${releaseErr.message}`));
      throw err;
    }
    await this.uow.run(async (tx) => {
      if (placement.outcome === 'pending') await this.transitions.recordPending(tx, orderId, placement.carrierOrderId, this.config.NUMBER_ORDER_POLL_SECONDS);
      else await this.transitions.settle(tx, orderId, placement);
    });
  }
}

/**
 * Asks the carrier about an order still pending: its number_order.complete webhook is late or
 * lost. Settles it through the same guarded transition the webhook uses (whichever comes first
 * wins, once); still pending: another poll, up to NUMBER_ORDER_MAX_POLLS, then failed.
 */
@Injectable()
@HandlesJob(PollNumberOrderJob)
export class PollNumberOrderHandler implements JobHandler<typeof PollNumberOrderJob> {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly transitions: NumberOrderTransitions,
    private readonly providers: NumberProviders,
    private readonly outbox: OutboxService,
    private readonly config: AppConfig,
  ) {}

  async handle({ orderId, poll, carrierOrderId }: PayloadOf<typeof PollNumberOrderJob>): Promise<void> {
    const [order] = await this.uow.run((tx) => queryRows<{ carrier: CarrierName; carrier_order_id: string | null }>(tx, `SELECT carrier, carrier_order_id FROM number_orders WHERE id = $1 AND status = 'pending'`, [orderId]));
    if (!order) return;
    // Without the carrier's order id (a callback that came before the placing run's answer), Telnyx finds it by our id.
    const placement = await this.providers.for(order.carrier).orderStatus({ orderId, carrierOrderId: order.carrier_order_id ?? carrierOrderId });
    await this.uow.run(async (tx) => {
      if (placement.outcome === 'settled') return void (await this.transitions.settle(tx, orderId, placement));
      if (poll === 0) return; // asked once for a callback: the regular polls go on
      if (poll >= this.config.NUMBER_ORDER_MAX_POLLS) return void (await this.transitions.settle(tx, orderId, { numbers: [], error: `the carrier did not complete the order in ${poll} polls` }));
      const next = poll + 1;
      await this.outbox.enqueue(tx, { job: PollNumberOrderJob, data: { orderId, poll: next }, jobId: `poll-${orderId}-${next}`, runAt: new Date(Date.now() + this.config.NUMBER_ORDER_POLL_SECONDS * 1000) });
    });
  }
}
