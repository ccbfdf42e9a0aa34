import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { invalidField } from '../../platform/http/validation.js';
import { newId, IdPrefix } from '../../platform/ids.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { fingerprint, IdempotencyKeys, type StoredResponse } from '../../platform/idempotency/idempotency-keys.js';
import { PhoneNumbers } from '../numbers/phone-numbers.service.js';
import { DispatchMessageJob } from './messaging.jobs.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { MessageCancel } from './message-cancel.js';
import { recordHistory } from './message-moves.js';
import { optedOutSql, recipientOptedOut } from './opt-out-keywords.js';
import { MESSAGE_COLUMNS, toView, type MessageView } from './message-view.js';
import { countSegments } from '../../telephony/segments.js';

export interface SendMessageRequest {
  from: string;
  to: string;
  text: string;
  send_at?: string;
}

export const MAX_SCHEDULE_DAYS = 30;


/**
 * Accepts outbound messages. The message, its history, its dispatch job and (with an
 * Idempotency-Key) the stored response commit in one transaction: all of it or none of it.
 */
@Injectable()
export class MessagesService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly numbers: PhoneNumbers,
    private readonly outbox: OutboxService,
    private readonly keys: IdempotencyKeys,
    private readonly cancels: MessageCancel,
  ) {}

  async send(accountId: string, request: SendMessageRequest, idempotencyKey?: string): Promise<StoredResponse & { replayed: boolean }> {
    const sendAt = this.parseSendAt(request.send_at);
    return this.uow.run(async (tx) => {
      if (idempotencyKey) {
        const claim = await this.keys.claim(tx, accountId, idempotencyKey, fingerprint('POST', '/v2/messages', request));
        if (claim.kind === 'replay') return { ...claim.response, replayed: true };
      }
      const message = await this.insertOutbound(tx, accountId, request, sendAt);
      const response: StoredResponse = { status: 202, body: { data: message } };
      if (idempotencyKey) await this.keys.complete(tx, accountId, idempotencyKey, response);
      return { ...response, replayed: false };
    });
  }

  private async insertOutbound(tx: Tx, accountId: string, request: SendMessageRequest, sendAt?: Date): Promise<MessageView> {
    const number = await this.numbers.findOwned(tx, accountId, request.from);
    if (!number) throw invalidField('/from', `from must be one of your phone numbers; ${request.from} is not`);
    const { encoding, segments } = countSegments(request.text);
    const status = sendAt ? 'scheduled' : 'queued';
    // WHERE NOT opted out: a handset that replied STOP gets nothing accepted for it. (A STOP
    // committing after this is caught by the dispatch claim's own guard.)
    const { rows } = await exec<MessageView & { account_id: string }>(
      tx,
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, send_at)
       SELECT $1, $2, 'outbound', $3, $4, $5, $6, $7, $8, $9, $10 WHERE NOT ${optedOutSql('$2::text', '$3::text', '$4::text')}
       RETURNING ${MESSAGE_COLUMNS}`,
      [newId(IdPrefix.Message), accountId, request.from, request.to, request.text, status, segments, encoding, number.carrier, sendAt ?? null],
    );
    if (rows.length === 0) throw recipientOptedOut(request.to);
    const message = toView(rows[0]);
    await recordHistory(tx, message.id, status);
    await this.outbox.enqueue(tx, { job: DispatchMessageJob, data: { messageId: message.id }, jobId: `dispatch-${message.id}`, runAt: sendAt });
    return message;
  }

  /** POST /v2/messages/:id/cancel: the message cancelled, or why not (404, 409). */
  async cancel(accountId: string, messageId: string): Promise<MessageView> {
    const outcome = await this.uow.run((tx) => this.cancels.cancel(tx, accountId, messageId));
    if (!outcome) throw new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: `no outbound message ${messageId}` });
    if (!outcome.cancelled) {
      throw new ConflictException({ code: 'message_not_cancellable', title: 'Message not cancellable', detail: `message ${messageId} is ${outcome.previous}: only a queued or scheduled message can be cancelled` });
    }
    return outcome.cancelled;
  }

  private parseSendAt(sendAt?: string): Date | undefined {
    if (sendAt === undefined) return undefined;
    const when = new Date(sendAt);
    const now = Date.now();
    if (when.getTime() <= now) throw invalidField('/send_at', 'send_at must be in the future');
    if (when.getTime() > now + MAX_SCHEDULE_DAYS * 86_400_000) throw invalidField('/send_at', `send_at must be at most ${MAX_SCHEDULE_DAYS} days ahead`);
    return when;
  }
}
