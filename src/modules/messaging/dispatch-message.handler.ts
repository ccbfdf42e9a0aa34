import { Injectable, Logger } from '@nestjs/common';
import { CarrierThrottledError, CarrierUnavailableError, SendOutcomeUnknownError, type FoundSend, type OutboundMessage, type SendResult } from '../../carriers/message-sender.js';
import { MessageSenders } from '../../carriers/message-senders.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { DispatchMessageJob, DispatchReplyJob } from './messaging.jobs.js';
import { HandlesJob, type JobContext, type JobHandler } from '../../platform/outbox/job-handler.js';
import { DispatchClaims, type DispatchClaim } from './dispatch-claims.js';
import { SendResolution } from './message-history-details.js';
import { SendOutcomes } from './send-outcomes.js';
import { claimTooOld } from './sender-pacing.js';

/** A lookup starts this much before the lease that may have sent (the carrier's clock and ours differ). */
const LOOKUP_CLOCK_MARGIN_MS = 60_000;

/**
 * Sends one outbound message. The carrier call happens outside any transaction, under a lease
 * (DISPATCH_LEASE_SECONDS) no other run calls the carrier during; its outcome is recorded by a
 * guarded transition under the lease's token, so a second run (a crash after the carrier
 * answered, a run that lost its lease) records nothing new.
 *
 * No carrier deduplicates a send for us, so a send that may have reached the carrier is never
 * simply sent again. Its outcome is unknown (persisted: `outcome_unknown_since`) when the request
 * got no answer that decides (SendOutcomeUnknownError), and when a run takes over a lease that
 * ended without being given back (its holder died between the carrier's accept and its answer).
 * A run holding such a message resolves it: a receipt naming our message settles it on its own
 * (ReceiptsAndInbound.applyReceiptCtes); the run asks the carrier's lookup, and when it shows
 * nothing, waits (its lease and a job run to the next check) until SEND_OUTCOME_WINDOW_SECONDS
 * have passed with nothing shown, and only then sends again. docs/exactly-once.md gives the
 * window left per carrier.
 */
@Injectable()
@HandlesJob(DispatchMessageJob)
export class DispatchMessageHandler implements JobHandler<typeof DispatchMessageJob> {
  private readonly logger = new Logger(DispatchMessageHandler.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly claims: DispatchClaims,
    private readonly outcomes: SendOutcomes,
    private readonly senders: MessageSenders,
    private readonly config: AppConfig,
  ) {}

  async handle({ messageId }: PayloadOf<typeof DispatchMessageJob>, context: JobContext): Promise<void> {
    const askedAt = Date.now();
    const claim = await this.claim(messageId);
    if (claim) await this.sendClaimed(claim, askedAt, context);
  }

  /**
   * Makes the send a claim took (`askedAt`: when this process asked for it, by its own clock), or
   * resolves one whose outcome is unknown. A first send held too long after its claim was decided
   * is given back unsent instead (claimTooOld): sent now, together with others held up alike, it
   * would reach the carrier faster than the number's rate.
   */
  async sendClaimed(claim: DispatchClaim, askedAt: number, { attempt }: Pick<JobContext, 'attempt'>): Promise<void> {
    if (!claim.unknown_since && claimTooOld(askedAt, claim.decided_at)) {
      const again = await this.uow.run((tx) => this.outcomes.requeueStale(tx, claim));
      this.logger.warn(`claim of ${claim.id} held too long to keep ${claim.from_number}'s pace: ${again ? 'queued again' : 'another run holds it now'}`);
      return;
    }
    try {
      if (claim.unknown_since) await this.resolve(claim, claim.unknown_since, attempt);
      else await this.sendAndRecord(claim, attempt);
    } catch (err) {
      // Only a send the carrier did not take gives its lease back (so BullMQ's retry claims at
      // once, as "not sent"). Any other failure (recording an answer, a lookup's statement) leaves
      // the lease to run out: the run that takes it over then counts the send's outcome unknown.
      if (err instanceof CarrierUnavailableError) {
        await this.uow.run((tx) => this.outcomes.releaseClaim(tx, claim)).catch((releaseErr: Error) => this.logger.warn(`lease on ${claim.id} not given back: ${releaseErr.message}`));
      }
      throw err;
    }
  }

  /**
   * The claim, or undefined when this run must not call the carrier: one autocommit statement,
   * or when another transaction holds the message's row (or a STOP/START of the number committed
   * while that statement waited for the number's row), the transaction that waits for it. A
   * message another run holds the lease of gets a run at the lease's end, written by the claim
   * statement itself, in the message's queue (DispatchClaims: `lease_end`).
   */
  private async claim(messageId: string): Promise<DispatchClaim | undefined> {
    const [lease, rate] = [this.config.DISPATCH_LEASE_SECONDS, this.config.MESSAGE_SEND_RATE_DEFAULT];
    const outcome =
      (await this.claims.claimNow(messageId, lease, rate)) ?? (await this.uow.run((tx) => this.claims.claimForDispatch(tx, messageId, lease, rate)));
    return outcome.kind === 'claimed' ? outcome.claim : undefined;
  }

  /**
   * A message whose send may have reached the carrier: found by the carrier's lookup → sent
   * (`found_by_lookup`); else continueResolving decides from the database clock: wait for the
   * next check, send again (the window passed with nothing shown), or fail (nothing shown after
   * the resends). A lookup that cannot be made shows nothing, and buys a second window.
   */
  private async resolve(message: DispatchClaim, unknownSince: Date, attempt: number): Promise<void> {
    const outbound = this.outbound(message);
    const since = new Date(unknownSince.getTime() - this.config.DISPATCH_LEASE_SECONDS * 1000 - LOOKUP_CLOCK_MARGIN_MS);
    let found: FoundSend | undefined;
    let lookupFailed = false;
    try {
      found = await this.senders.for(message.carrier).findSent(outbound, since);
    } catch (err) {
      if (!(err instanceof CarrierUnavailableError)) throw err;
      lookupFailed = true;
      this.logger.warn(`lookup of ${message.id} at ${message.carrier} failed: ${err.message}`);
    }
    if (found) {
      const recorded = await this.uow.run((tx) => this.outcomes.markSent(tx, message, found.carrierMessageIds, SendResolution.byLookup));
      if (!recorded) this.logger.warn(`${message.carrier} shows ${message.id}, but it was settled meanwhile or every id it lists is another message's`);
      if (recorded) return;
    }
    const step = await this.uow.run((tx) =>
      this.outcomes.continueResolving(tx, message, { windowSeconds: this.config.SEND_OUTCOME_WINDOW_SECONDS, leaseSeconds: this.config.DISPATCH_LEASE_SECONDS, lookupFailed }),
    );
    if (step === 'resend') {
      this.logger.warn(`${message.carrier} showed nothing of ${message.id} within ${this.config.SEND_OUTCOME_WINDOW_SECONDS} s: sending it again`);
      await this.sendAndRecord(message, attempt);
    }
  }

  private outbound(message: DispatchClaim): OutboundMessage {
    return { id: message.id, from: message.from_number, to: message.to_number, text: message.text };
  }

  private async sendAndRecord(message: DispatchClaim, attempt: number): Promise<void> {
    let result: SendResult;
    try {
      result = await this.senders.for(message.carrier).send(this.outbound(message));
    } catch (err) {
      if (err instanceof SendOutcomeUnknownError) {
        // It may be at the carrier: never a failure, never "not sent". Resolved by a later run.
        const marked = await this.uow.run((tx) => this.outcomes.markOutcomeUnknown(tx, message, err.message, this.config.SEND_OUTCOME_WINDOW_SECONDS));
        this.logger.warn(`send of ${message.id} to ${message.carrier}: ${err.message}; ${marked ? 'resolving before any resend' : 'another run holds it now'}`);
        return;
      }
      if (err instanceof CarrierThrottledError) {
        // Too fast for the carrier: back in the queue behind its Retry-After, under this run's
        // lease (so never sent twice), and this job is done (its follow-up is written with it).
        const resumeAt = await this.uow.run((tx) => this.outcomes.requeueThrottled(tx, message, err.retryAfterSeconds));
        this.logger.warn(`carrier throttled ${message.from_number} sending ${message.id}: ${resumeAt ? `tried again from ${resumeAt.toISOString()}` : 'another run holds it now'}`);
        return;
      }
      if (err instanceof CarrierUnavailableError && attempt >= DispatchMessageJob.attempts) {
        this.logger.warn(`giving up on ${message.id} after ${attempt} attempts: ${err.message}`);
        await this.uow.run((tx) => this.outcomes.markRejected(tx, message, { errorCode: 'carrier_unavailable', errorDetail: err.message }));
        return;
      }
      throw err;
    }
    const recorded = await this.uow.run((tx) =>
      result.outcome === 'accepted'
        ? this.outcomes.markSent(tx, message, result.carrierMessageId)
        : this.outcomes.markRejected(tx, message, result),
    );
    if (!recorded) this.logger.warn(`carrier answer for ${message.id} not recorded: the message moved on or another run took its lease`);
  }
}

/** A compliance reply's dispatch (DispatchReplyJob, its own queue): the same run as any message's. */
@Injectable()
@HandlesJob(DispatchReplyJob)
export class DispatchReplyHandler implements JobHandler<typeof DispatchReplyJob> {
  constructor(private readonly dispatch: DispatchMessageHandler) {}

  handle(payload: PayloadOf<typeof DispatchReplyJob>, context: JobContext): Promise<void> {
    return this.dispatch.handle(payload, context);
  }
}
