import { Injectable } from '@nestjs/common';
import { exec, type Tx } from '../../platform/database/tx.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { MessageEffects, type MessageRow } from './message-effects.js';
import { MESSAGE_COLUMNS, toView, WAITING_STATUSES, type MessageStatus, type MessageView } from './message-view.js';
import { newJobsCount } from '../../platform/outbox/statement-jobs.js';
import { moveSideEffectsCtes } from './message-moves.js';

/** A customer's cancel of a message not yet picked up: one statement that races the dispatch claim for the message's row. */
@Injectable()
export class MessageCancel {
  constructor(
    private readonly effects: MessageEffects,
    private readonly outbox: OutboxService,
  ) {}

  /**
   * Takes back a message dispatch has not picked up: queued|scheduled → cancelled, history and
   * `message.cancelled`, never billed. Undefined when the account has no such message; otherwise
   * the status it found and whether it cancelled it.
   */
  async cancel(tx: Tx, accountId: string, messageId: string): Promise<{ previous: MessageStatus; cancelled: MessageView | undefined } | undefined> {
    // FOR UPDATE in `found`: the dispatch claim locks the same row first, so one of the two goes
    // first and the other sees what it left. The UPDATE's WHERE is the guard: still waiting.
    const stmt = new CteStatement();
    stmt.with(
      'found',
      `SELECT id AS found_id, status AS previous FROM messages
        WHERE id = ${stmt.param(messageId, 'text')} AND account_id = ${stmt.param(accountId, 'text')} AND direction = 'outbound' FOR UPDATE`,
    );
    const cancelled = stmt.with(
      'cancelled',
      `UPDATE messages m SET status = 'cancelled', claimed_until = NULL, updated_at = now() FROM found
        WHERE m.id = found.found_id AND found.previous = ANY(${stmt.param(WAITING_STATUSES, 'text[]')})
       RETURNING ${MESSAGE_COLUMNS}`,
    );
    moveSideEffectsCtes(this.effects, stmt, cancelled, { status: 'cancelled', type: 'message.cancelled' });
    const { rows } = await exec<{ previous: MessageStatus; jobs: number; message: MessageRow | null }>(
      tx,
      stmt.text(`SELECT found.previous, (${newJobsCount(stmt)})::int AS jobs, (SELECT to_jsonb(c) FROM ${cancelled} c) AS message FROM found`),
      stmt.params,
    );
    if (rows.length === 0) return undefined;
    this.outbox.jobsWritten(rows[0].jobs, tx);
    return { previous: rows[0].previous, cancelled: rows[0].message ? toView(rows[0].message) : undefined };
  }
}
