import { Injectable, Logger } from '@nestjs/common';
import { CarrierUnavailableError, type SendResult } from '../carriers/message-sender.js';
import { MessageSenders } from '../carriers/message-senders.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { JOB_SPECS, JobName, type JobPayloads } from '../outbox/job-catalogue.js';
import { HandlesJob, type JobContext, type JobHandler } from '../outbox/job-handler.js';
import { MessageTransitions } from './message-transitions.js';

/**
 * Sends one outbound message. The carrier call happens outside any transaction; its outcome is
 * recorded by a guarded transition, so a second run (a crash after the carrier answered) records
 * nothing new. The carrier gets our message id as Idempotency-Key, which closes the double send
 * for carriers that honour it; README describes the window that remains.
 */
@Injectable()
@HandlesJob(JobName.DispatchMessage)
export class DispatchMessageHandler implements JobHandler<JobName.DispatchMessage> {
  private readonly logger = new Logger(DispatchMessageHandler.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly transitions: MessageTransitions,
    private readonly senders: MessageSenders,
  ) {}

  async handle({ messageId }: JobPayloads[JobName.DispatchMessage], { attempt }: JobContext): Promise<void> {
    const message = await this.uow.run((tx) => this.transitions.claimForDispatch(tx, messageId));
    if (!message) return;

    let result: SendResult;
    try {
      result = await this.senders.for(message.carrier).send({ id: message.id, from: message.from_number, to: message.to_number, text: message.text });
    } catch (err) {
      if (err instanceof CarrierUnavailableError && attempt >= JOB_SPECS[JobName.DispatchMessage].attempts) {
        this.logger.warn(`giving up on ${messageId} after ${attempt} attempts: ${err.message}`);
        await this.uow.run((tx) => this.transitions.markRejected(tx, messageId, 'carrier_unavailable', err.message));
        return;
      }
      throw err;
    }
    await this.uow.run((tx) =>
      result.outcome === 'accepted'
        ? this.transitions.markSent(tx, messageId, result.carrierMessageId)
        : this.transitions.markRejected(tx, messageId, result.errorCode, result.errorDetail),
    );
  }
}
