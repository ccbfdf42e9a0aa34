import { exec, type Tx } from '../../platform/database/tx.js';
import type { CteStatement } from '../../platform/database/cte-statement.js';
import type { CustomerEventType } from '../webhooks/event-types.js';
import type { MessageEffects } from './message-effects.js';
import type { MessageStatus } from './message-view.js';

/*
 * What the classes that change a message's status share (DispatchClaims, SendOutcomes,
 * ReceiptsAndInbound, MessageCancel). Every such change is one UPDATE whose WHERE clause is the
 * guard; the status history is written in the same transaction, and what the move bills and
 * announces (MessageEffects) too, only when that UPDATE changed a row. A duplicate or
 * contradictory carrier report changes nothing.
 */

/** Why a message was failed instead of taken for sending: its recipient opted out (the dispatch guard's refusal, on every path). */
export const REFUSED_OPTED_OUT = { code: 'recipient_opted_out', detail: 'the recipient replied with an opt-out keyword' } as const;

/**
 * How a message the carrier failed because its recipient opted out at the carrier (FailureReason
 * `recipient_opted_out`, in a send's answer or a receipt) shows it: `recipient_opted_out`, as the
 * dispatch guard's refusal does, with the carrier's own code and words in the detail.
 */
export function carrierOptOutFailure(errorCode: string | undefined, errorDetail: string | undefined): { errorCode: string; errorDetail: string } {
  return { errorCode: REFUSED_OPTED_OUT.code, errorDetail: [errorCode, errorDetail].filter(Boolean).join(': ') };
}

/** The history row and the customer event of a move, for the rows of CTE `changed` (MESSAGE_COLUMNS): every row to one `status`, announced as `type`. */
export function moveSideEffectsCtes(effects: MessageEffects, stmt: CteStatement, changed: string, move: { status: MessageStatus; type: CustomerEventType }): void {
  stmt.with('msg_history', `INSERT INTO message_status_history (message_id, status) SELECT id, ${stmt.param(move.status, 'text')} FROM ${changed}`);
  effects.announceCtes(stmt, changed, move.type);
}

/** One row of a message's status history, written by the caller's transaction. */
export async function recordHistory(tx: Tx, messageId: string, status: MessageStatus, detail?: string): Promise<void> {
  await exec(tx, `INSERT INTO message_status_history (message_id, status, detail) VALUES ($1, $2, $3)`, [messageId, status, detail ?? null]);
}
