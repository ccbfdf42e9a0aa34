import { ConflictException, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { CarrierRefusedError } from '../../carriers/number-provider.js';
import { NumberProviders } from '../../carriers/number-providers.js';
import type { CarrierName } from '../../carriers/carrier-name.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { exec, queryRows, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { ReleaseNumberJob } from './numbers.jobs.js';
import { storeCarrierNumberId } from './number-ids.js';
import { HandlesJob, PermanentJobError, type JobContext, type JobHandler } from '../../platform/outbox/job-handler.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { CustomerEvents } from '../webhooks/customer-events.js';
import type { PhoneNumberView } from './phone-number.dto.js';
import { PhoneNumbers } from './phone-numbers.service.js';

/** The carrier's documented lookup found no such number of ours: not released, an error to retry and show. */
export class NumberNotFoundAtCarrier extends Error {}

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

  /**
   * Operator: runs a releasing number's release again now (its failure's cause fixed). The
   * number with its failed attempts so far; undefined when it is not releasing.
   */
  async retry(numberId: string): Promise<FailingRelease | undefined> {
    return this.uow.run(async (tx) => {
      // Locks the number only while it is releasing: a release finishing meanwhile commits first, and then nothing is found.
      const [row] = await queryRows<FailingRelease>(
        tx,
        `SELECT id, phone_number, carrier, release_attempts, release_error FROM phone_numbers WHERE id = $1 AND status = 'releasing' FOR UPDATE`,
        [numberId],
      );
      if (row) await this.outbox.enqueue(tx, { job: ReleaseNumberJob, data: { numberId }, jobId: `release-${numberId}-retry-${Date.now()}` });
      return row;
    });
  }
}

/** A releasing number and how its release went so far. */
export interface FailingRelease {
  id: string;
  phone_number: string;
  carrier: CarrierName;
  release_attempts: number;
  release_error: string | null;
}

/**
 * Releases one releasing number at its carrier, once no call on it is in progress, by the
 * carrier's id of the number: the one stored when its order completed, or (a number stored
 * without one) the one the carrier's documented lookup finds, stored before the release so a
 * retry after a lost answer names the same number. The number becomes `released` (and
 * number.released is emitted) only after the carrier confirmed the release. A lookup that finds
 * nothing, a refusal or no answer is a failed attempt: the number stays `releasing`, the attempt
 * and its error are recorded (release_attempts, release_error; verify's numbers.release_failing),
 * and the job retries with backoff; a refusal is final until the operator runs
 * `numbers:release-retry`.
 */
@Injectable()
@HandlesJob(ReleaseNumberJob)
export class ReleaseNumberHandler implements JobHandler<typeof ReleaseNumberJob> {
  private readonly logger = new Logger(ReleaseNumberHandler.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly providers: NumberProviders,
    private readonly outbox: OutboxService,
    private readonly events: CustomerEvents,
    private readonly config: AppConfig,
    private readonly numbers: PhoneNumbers,
  ) {}

  async handle({ numberId }: PayloadOf<typeof ReleaseNumberJob>, { attempt }: JobContext): Promise<void> {
    const number = await this.uow.run((tx) => this.waitingRelease(tx, numberId));
    if (!number) return;
    try {
      await this.releaseAtCarrier(numberId, number);
    } catch (err) {
      const message = (err as Error).message;
      await this.uow.run((tx) =>
        // Only a number still releasing: a twin run that released it keeps it released, error-free.
        exec(tx, `UPDATE phone_numbers SET release_attempts = release_attempts + 1, release_error = left($2, 1000) WHERE id = $1 AND status = 'releasing'`, [numberId, message]),
      );
      this.logger.warn(`release of ${number.phone_number} (${numberId}) at ${number.carrier} failed (attempt ${attempt}); it stays releasing: ${message}`);
      if (err instanceof CarrierRefusedError) throw new PermanentJobError(message);
      throw err;
    }
    await this.uow.run(async (tx) => {
      // Only a releasing number: a twin run that released it too emits nothing.
      const { rows } = await exec<{ account_id: string }>(
        tx,
        `UPDATE phone_numbers SET status = 'released', released_at = now(), release_error = NULL WHERE id = $1 AND status = 'releasing' RETURNING account_id`,
        [numberId],
      );
      if (rows.length === 0) return;
      await this.events.emit(tx, rows[0].account_id, 'number.released', await this.numbers.viewIn(tx, numberId));
    });
  }

  async onFinalFailure({ numberId }: PayloadOf<typeof ReleaseNumberJob>, error: string): Promise<void> {
    this.logger.error(`number ${numberId} stays releasing: its release failed for good (${error}); numbers:release-retry ${numberId} once the cause is fixed`);
  }

  private async releaseAtCarrier(numberId: string, number: ReleasingNumber): Promise<void> {
    const provider = this.providers.for(number.carrier);
    let carrierNumberId = number.carrier_number_id;
    if (!carrierNumberId) {
      const held = await provider.findHeld(number.phone_number);
      if (!held?.carrierNumberId) throw new NumberNotFoundAtCarrier(`${number.carrier} shows no number ${number.phone_number} in our account: not released there`);
      carrierNumberId = held.carrierNumberId;
      await this.uow.run((tx) => storeCarrierNumberId(tx, numberId, held.carrierNumberId!, held.country));
    }
    await provider.release({ phoneNumber: number.phone_number, carrierNumberId, country: number.country ?? undefined });
  }

  /**
   * The number if it is releasing and free of calls; with a call in progress, a check again later
   * (no new call can start: a releasing number does not route).
   */
  private async waitingRelease(tx: Tx, numberId: string): Promise<ReleasingNumber | undefined> {
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
    if (!number.busy) return number as ReleasingNumber;
    const at = new Date(Date.now() + this.config.NUMBER_RELEASE_RECHECK_SECONDS * 1000);
    await this.outbox.enqueue(tx, { job: ReleaseNumberJob, data: { numberId }, jobId: `release-${numberId}-${at.getTime()}`, runAt: at });
    return undefined;
  }
}

interface ReleasingNumber {
  phone_number: string;
  carrier: CarrierName;
  carrier_number_id: string | null;
  country: string | null;
}
