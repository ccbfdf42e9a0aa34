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
import { claimRelease, recordFailedAttempt, recordReleased, RELEASE_LEASE_SECONDS, type ReleaseClaim } from './number-release-leases.js';
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
   * number with its failed attempts so far; undefined when it is not releasing. Its job claims the
   * number like any release run: while another run holds it (the job's own retry, say), it calls
   * nothing and runs again at that lease's end.
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
 *
 * One run at a time calls the carrier for a number: a run first claims it under a lease
 * (claimRelease, RELEASE_LEASE_SECONDS) and records its outcome under that claim's token only.
 * The job's own retry and the operator's retry job may both be due; the one that finds the other's
 * lease live calls nothing and is due again at the lease's end (one outbox row per lease), so a
 * holder that died is followed up even if its own job is spent.
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
    const claim = await this.uow.run((tx) => this.claim(tx, numberId));
    if (!claim) return;
    try {
      await this.releaseAtCarrier(claim);
    } catch (err) {
      const message = (err as Error).message;
      const recorded = await this.uow.run((tx) => recordFailedAttempt(tx, claim, message));
      if (!recorded) {
        this.logger.warn(`release of ${claim.phone_number} (${numberId}) at ${claim.carrier} failed (${message}), not recorded: another run holds it now, or it was released`);
        return;
      }
      this.logger.warn(`release of ${claim.phone_number} (${numberId}) at ${claim.carrier} failed (attempt ${attempt}); it stays releasing: ${message}`);
      if (err instanceof CarrierRefusedError) throw new PermanentJobError(message);
      throw err;
    }
    await this.uow.run(async (tx) => {
      const accountId = await recordReleased(tx, claim);
      if (accountId === undefined) return this.logger.warn(`release of ${numberId} confirmed by ${claim.carrier}, recorded by the run that took over its lease`);
      await this.events.emit(tx, accountId, 'number.released', await this.numbers.viewIn(tx, numberId));
    });
  }

  async onFinalFailure({ numberId }: PayloadOf<typeof ReleaseNumberJob>, error: string): Promise<void> {
    this.logger.error(`number ${numberId} stays releasing: its release failed for good (${error}); numbers:release-retry ${numberId} once the cause is fixed`);
  }

  private async releaseAtCarrier(number: ReleaseClaim): Promise<void> {
    const provider = this.providers.for(number.carrier);
    let carrierNumberId = number.carrier_number_id;
    if (!carrierNumberId) {
      const held = await provider.findHeld(number.phone_number);
      if (!held?.carrierNumberId) throw new NumberNotFoundAtCarrier(`${number.carrier} shows no number ${number.phone_number} in our account: not released there`);
      carrierNumberId = held.carrierNumberId;
      await this.uow.run((tx) => storeCarrierNumberId(tx, number.id, held.carrierNumberId!, held.country));
    }
    await provider.release({ phoneNumber: number.phone_number, carrierNumberId, country: number.country ?? undefined });
  }

  /**
   * The claim, or undefined when this run must not call the carrier. A number another run holds
   * gets a run at that lease's end (one per lease, however many twins find it); one with a call in
   * progress, a check again later. Either is written with the claim statement's transaction.
   */
  private async claim(tx: Tx, numberId: string): Promise<ReleaseClaim | undefined> {
    const outcome = await claimRelease(tx, numberId, RELEASE_LEASE_SECONDS);
    if (outcome.kind === 'claimed') return outcome.claim;
    if (outcome.kind === 'leased') {
      // run_at is the lease's end by the database clock, which the relay waits on too, so that run
      // finds it ended; 1 ms later, as the lease end read here is cut to milliseconds (the run must
      // not find it live: its follow-up would be this job id again, and written once only).
      const at = new Date(outcome.until.getTime() + 1);
      await this.outbox.enqueue(tx, { job: ReleaseNumberJob, data: { numberId }, jobId: `release-${numberId}-lease-${outcome.holder}`, runAt: at });
    } else if (outcome.kind === 'busy') {
      const at = new Date(Date.now() + this.config.NUMBER_RELEASE_RECHECK_SECONDS * 1000);
      await this.outbox.enqueue(tx, { job: ReleaseNumberJob, data: { numberId }, jobId: `release-${numberId}-${at.getTime()}`, runAt: at });
    }
    return undefined;
  }
}
