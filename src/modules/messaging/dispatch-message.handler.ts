import { Injectable, Logger } from '@nestjs/common';
import { CarrierThrottledError, CarrierUnavailableError, type SendResult } from '../../carriers/message-sender.js';
import { MessageSenders } from '../../carriers/message-senders.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { DispatchMessageJob } from './messaging.jobs.js';
import { HandlesJob, type JobContext, type JobHandler } from '../../platform/outbox/job-handler.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { MessageTransitions, type DispatchClaim } from './message-transitions.js';

/**
 * Sends one outbound message. The carrier call happens outside any transaction, under a lease
 * (DISPATCH_LEASE_SECONDS) no other run calls the carrier during; its outcome is recorded by a
 * guarded transition under the lease's token, so a second run (a crash after the carrier
 * answered, a run that lost its lease) records nothing new. The carrier gets our message id as
 * Idempotency-Key, which closes the double send for carriers that honour it; docs/exactly-once.md
 * describes the windows that remain.
 */
@Injectable()
@HandlesJob(DispatchMessageJob)
export class DispatchMessageHandler implements JobHandler<typeof DispatchMessageJob> {
  private readonly logger = new Logger(DispatchMessageHandler.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly transitions: MessageTransitions,
    private readonly senders: MessageSenders,
    private readonly outbox: OutboxService,
    private readonly config: AppConfig,
  ) {}

  async handle({ messageId }: PayloadOf<typeof DispatchMessageJob>, { attempt }: JobContext): Promise<void> {
    const claim = await this.claim(messageId);
    if (!claim) return;
    try {
      await this.sendAndRecord(claim, attempt);
    } catch (err) {
      // This run no longer calls the carrier: its lease goes back, so BullMQ's retry claims at
      // once. If that fails too, the lease simply runs out.
      await this.uow.run((tx) => this.transitions.releaseClaim(tx, claim)).catch((releaseErr: Error) => this.logger.warn(`lease on ${messageId} not given back: ${releaseErr.message}`));
      throw err;
    }
  }

  /**
   * The claim, or undefined when this run must not call the carrier: one autocommit statement,
   * or when another transaction holds the message's row (or a STOP/START of the number committed
   * while that statement waited for the number's row), the transaction that waits for it. A
   * message another run holds the lease of gets a run at the lease's end (one per lease, however
   * many twins find it), so a holder that died is followed up even if its own job is spent.
   */
  private async claim(messageId: string): Promise<DispatchClaim | undefined> {
    const [lease, rate] = [this.config.DISPATCH_LEASE_SECONDS, this.config.MESSAGE_SEND_RATE_DEFAULT];
    const outcome =
      (await this.transitions.claimNow(messageId, lease, rate)) ?? (await this.uow.run((tx) => this.transitions.claimForDispatch(tx, messageId, lease, rate)));
    if (outcome.kind === 'claimed') return outcome.claim;
    if (outcome.kind === 'leased') {
      // run_at is the lease's end by the database clock, which is also what the relay waits on,
      // so this run finds that lease ended. (If this process dies first, its own job is redriven and finds the lease again.)
      await this.uow.run((tx) =>
        this.outbox.enqueue(tx, { job: DispatchMessageJob, data: { messageId }, jobId: `dispatch-${messageId}-${outcome.holder}`, runAt: outcome.until }),
      );
    }
    return undefined;
  }

  private async sendAndRecord(message: DispatchClaim, attempt: number): Promise<void> {
    let result: SendResult;
    try {
      result = await this.senders.for(message.carrier).send({ id: message.id, from: message.from_number, to: message.to_number, text: message.text });
    } catch (err) {
      if (err instanceof CarrierThrottledError) {
        // Too fast for the carrier: back in the queue behind its Retry-After, under this run's
        // lease (so never sent twice), and this job is done (its follow-up is written with it).
        const resumeAt = await this.uow.run((tx) => this.transitions.requeueThrottled(tx, message, err.retryAfterSeconds));
        this.logger.warn(`carrier throttled ${message.from_number} sending ${message.id}: ${resumeAt ? `tried again from ${resumeAt.toISOString()}` : 'another run holds it now'}`);
        return;
      }
      if (err instanceof CarrierUnavailableError && attempt >= DispatchMessageJob.attempts) {
        this.logger.warn(`giving up on ${message.id} after ${attempt} attempts: ${err.message}`);
        await this.uow.run((tx) => this.transitions.markRejected(tx, message, 'carrier_unavailable', err.message));
        return;
      }
      throw err;
    }
    const recorded = await this.uow.run((tx) =>
      result.outcome === 'accepted'
        ? this.transitions.markSent(tx, message, result.carrierMessageId)
        : this.transitions.markRejected(tx, message, result.errorCode, result.errorDetail),
    );
    if (!recorded) this.logger.warn(`carrier answer for ${message.id} not recorded: the message moved on or another run took its lease`);
  }
}
