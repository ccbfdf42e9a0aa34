import type { CteStatement } from '../../platform/database/cte-statement.js';
import type { OutboxService } from '../../platform/outbox/outbox.service.js';
import { DispatchMessageJob, DispatchReplyJob } from './messaging.jobs.js';

/**
 * The dispatch job of each existing message a statement's CTE `source` names, written by that
 * statement in the message's own queue: a compliance reply's (its auto_reply IS NOT NULL) in
 * `messaging-replies` (DispatchReplyJob), any other message's in `messaging` (DispatchMessageJob).
 * Every follow-up of a message's dispatch (its slot, a 429's resume, a claim given back, a live
 * lease's end, the check of an unknown outcome) is written here, so a reply's never waits behind
 * a backlog's jobs.
 *
 * `source`'s columns: `message_id`, `reply` (boolean: auto_reply IS NOT NULL, read by the same
 * statement), `run_at`. The job's id is `'dispatch-' || message_id` followed by `idSuffix` (SQL,
 * may read the source's columns): what makes it one job per follow-up (a slot, a lease).
 */
export function dispatchJobsFromCte(outbox: OutboxService, stmt: CteStatement, name: string, source: string, idSuffix: string): void {
  // jobsFromCte adds its own WHERE to its source: each queue's rows get a CTE of their own.
  for (const [lane, job, reply] of [['message', DispatchMessageJob, false], ['reply', DispatchReplyJob, true]] as const) {
    const rows = stmt.with(`${name}_${lane}_rows`, `SELECT * FROM ${source} WHERE reply = ${reply}`);
    outbox.jobsFromCte(stmt, `${name}_${lane}`, rows, job, {
      id: `'dispatch-' || message_id || ${idSuffix}`,
      data: `jsonb_build_object('messageId', message_id)`,
      runAt: 'run_at',
    });
  }
}
