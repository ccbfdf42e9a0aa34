import { Injectable, Logger } from '@nestjs/common';
import { NumberProviders } from '../../carriers/number-providers.js';
import type { CarrierName } from '../../carriers/carrier-name.js';
import { exec, queryRows, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { HandlesJob, type JobHandler } from '../../platform/outbox/job-handler.js';
import { StoreNumberIdsJob } from './numbers.jobs.js';

/** Stores the carrier's id of a number stored without one; an id stored meanwhile is kept (the same number's). */
export function storeCarrierNumberId(tx: Tx, numberId: string, carrierNumberId: string, country?: string): Promise<unknown> {
  // Only a number without an id: two runs finding it store it once.
  return exec(tx, `UPDATE phone_numbers SET carrier_number_id = $2, country = coalesce(country, $3) WHERE id = $1 AND carrier_number_id IS NULL`, [numberId, carrierNumberId, country ?? null]);
}

/**
 * After an order settled without the carrier's ids of the numbers it bought (Telnyx names only
 * its order lines): finds each number by the carrier's documented lookup and stores its id.
 * A number the carrier does not list yet makes the job retry; after the last attempt its id
 * stays missing, and its release looks it up (and fails visibly if it is still not found).
 */
@Injectable()
@HandlesJob(StoreNumberIdsJob)
export class StoreNumberIdsHandler implements JobHandler<typeof StoreNumberIdsJob> {
  private readonly logger = new Logger(StoreNumberIdsHandler.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly providers: NumberProviders,
  ) {}

  async handle({ orderId }: PayloadOf<typeof StoreNumberIdsJob>): Promise<void> {
    const numbers = await this.uow.run((tx) =>
      queryRows<{ id: string; phone_number: string; carrier: CarrierName }>(
        tx,
        `SELECT id, phone_number, carrier FROM phone_numbers WHERE order_id = $1 AND carrier_number_id IS NULL AND status IN ('active', 'releasing')`,
        [orderId],
      ),
    );
    const unlisted: string[] = [];
    for (const number of numbers) {
      const held = await this.providers.for(number.carrier).findHeld(number.phone_number);
      if (held?.carrierNumberId) await this.uow.run((tx) => storeCarrierNumberId(tx, number.id, held.carrierNumberId!, held.country));
      else unlisted.push(number.phone_number);
    }
    if (unlisted.length > 0) throw new Error(`the carrier does not list ${unlisted.join(', ')} among our numbers yet`);
  }

  async onFinalFailure({ orderId }: PayloadOf<typeof StoreNumberIdsJob>, error: string): Promise<void> {
    this.logger.warn(`order ${orderId}: carrier ids not stored (${error}); a release looks them up`);
  }
}
