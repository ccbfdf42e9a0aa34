import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { NumberProviders } from '../../carriers/number-providers.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { exec, queryRows, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { ReleaseNumberJob } from './numbers.jobs.js';
import { HandlesJob, type JobHandler } from '../../platform/outbox/job-handler.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { CustomerEvents } from '../webhooks/customer-events.js';
import type { PhoneNumberView } from './phone-number.dto.js';
import { PhoneNumbers } from './phone-numbers.service.js';

/**
 * Releasing a number: it stops routing at once (releasing), and is released at the carrier once
 * no call is in progress on it; number.released once, when the carrier let it go.
 */
@Injectable()
export class NumberReleases {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly outbox: OutboxService,
    private readonly numbers: PhoneNumbers,
  ) {}

  /** The number as it now is (releasing, or already releasing/released: a repeat changes nothing). */
  async request(accountId: string, numberId: string): Promise<PhoneNumberView> {
    return this.uow.run(async (tx) => {
      const { rows } = await exec<PhoneNumberView & { was: string; moved: boolean }>(
        tx,
        // Locks the account's number; moves it only while active. `was` is the status as locked.
        `WITH n AS (SELECT id, status FROM phone_numbers WHERE id = $1 AND account_id = $2 FOR UPDATE),
              moved AS (UPDATE phone_numbers p SET status = 'releasing' FROM n WHERE p.id = n.id AND n.status = 'active' RETURNING p.id)
         SELECT n.status AS was, EXISTS (SELECT FROM moved) AS moved FROM n`,
        [numberId, accountId],
      );
      const row = rows[0];
      if (!row || row.was === 'failed') throw new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: 'no phone number with this id' });
      if (row.was === 'ordering') throw new ConflictException({ code: 'order_in_progress', title: 'Order in progress', detail: 'the number is still being ordered; release it once its order completed' });
      if (row.moved) await this.outbox.enqueue(tx, { job: ReleaseNumberJob, data: { numberId }, jobId: `release-${numberId}` });
      return this.numbers.viewIn(tx, numberId);
    });
  }
}

/** Releases one releasing number at its carrier, once no call on it is in progress. */
@Injectable()
@HandlesJob(ReleaseNumberJob)
export class ReleaseNumberHandler implements JobHandler<typeof ReleaseNumberJob> {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly providers: NumberProviders,
    private readonly outbox: OutboxService,
    private readonly events: CustomerEvents,
    private readonly config: AppConfig,
    private readonly numbers: PhoneNumbers,
  ) {}

  async handle({ numberId }: PayloadOf<typeof ReleaseNumberJob>): Promise<void> {
    const number = await this.uow.run((tx) => this.waitingRelease(tx, numberId));
    if (!number) return;
    await this.providers.for(number.carrier).release({ phoneNumber: number.phone_number, carrierNumberId: number.carrier_number_id ?? undefined, country: number.country ?? undefined });
    await this.uow.run(async (tx) => {
      // Only a releasing number: a twin run that released it too emits nothing.
      const { rows } = await exec<{ account_id: string }>(
        tx,
        `UPDATE phone_numbers SET status = 'released', released_at = now() WHERE id = $1 AND status = 'releasing' RETURNING account_id`,
        [numberId],
      );
      if (rows.length === 0) return;
      await this.events.emit(tx, rows[0].account_id, 'number.released', await this.numbers.viewIn(tx, numberId));
    });
  }

  /**
   * The number if it is releasing and free of calls; with a call in progress, a check again later
   * (no new call can start: a releasing number does not route).
   */
  private async waitingRelease(tx: Tx, numberId: string) {
    const [number] = await queryRows(
      tx,
      // The calls table is read, never written, here: is a call on this number still going?
      `SELECT p.phone_number, p.carrier, p.carrier_number_id, p.country,
              EXISTS (SELECT FROM calls c WHERE c.account_id = p.account_id AND (c.to_number = p.phone_number OR c.from_number = p.phone_number)
                                            AND c.status IN ('ringing', 'in_progress')) AS busy
         FROM phone_numbers p WHERE p.id = $1 AND p.status = 'releasing'`,
      [numberId],
    );
    if (!number) return undefined;
    if (!number.busy) return number as { phone_number: string; carrier: 'telnyx' | 'twilio' | 'vonage'; carrier_number_id: string | null; country: string | null };
    const at = new Date(Date.now() + this.config.NUMBER_RELEASE_RECHECK_SECONDS * 1000);
    await this.outbox.enqueue(tx, { job: ReleaseNumberJob, data: { numberId }, jobId: `release-${numberId}-${at.getTime()}`, runAt: at });
    return undefined;
  }
}
