import type { CteStatement } from '../../platform/database/cte-statement.js';
import type { AttemptRef } from './delivery-scheduler.js';
import type { PostResult } from './webhook-http.js';

/** Characters of the customer's response kept on the attempt (up to 64 KiB is read). */
export const EXCERPT_CHARS = 2048;

/** What one attempt came to, and what its delivery becomes. */
export interface AttemptOutcome {
  ref: AttemptRef;
  status: 'delivered' | 'pending' | 'failed';
  /** When the next attempt runs (status pending). */
  nextAt: Date | null;
  result: PostResult;
  at: Date;
}

export function isSuccess(result: PostResult): boolean {
  const code = result.statusCode;
  return code !== undefined && code >= 200 && code < 300 && !result.error;
}

/**
 * The guarded record of attempts' outcomes (one, or a batch of successes) and their attempt
 * rows, as CTEs; returns the CTE of the deliveries it changed (id, status, endpoint_id), which
 * has no row for an outcome the guard let nothing through for.
 */
export function recordAttemptsCtes(stmt: CteStatement, outcomes: AttemptOutcome[]): string {
  const rows = outcomes.map(({ ref, status, nextAt, result, at }) => {
    const code = result.statusCode;
    const error = result.error ?? (isSuccess(result) ? null : code !== undefined ? `HTTP ${code}` : 'no response');
    return {
      id: ref.id, round: ref.round, attempt: ref.attempt, status, next_at: nextAt?.toISOString() ?? null, error,
      status_code: code ?? null, duration_ms: result.durationMs, excerpt: result.body.slice(0, EXCERPT_CHARS), at: at.toISOString(),
    };
  });
  // The deliveries' partitions: those of their events' times, from the earliest event to the
  // latest (ids of one prefix sort by time), so a batch of attempts of recent events reads one
  // partition or two, not every one (webhook_deliveries is partitioned by its event's id time).
  const eventIds = outcomes.map(({ ref }) => ref.eventId).sort();
  const partitions = () => `onceline_id_key(d.event_id) BETWEEN onceline_id_key_of(${stmt.param(eventIds[0], 'text')}) AND onceline_id_key_of(${stmt.param(eventIds[eventIds.length - 1], 'text')})`;
  const outcomesCte = stmt.with(
    'dlv_outcomes',
    `SELECT * FROM json_to_recordset(${stmt.param(JSON.stringify(rows), 'json')})
       AS o(id text, round int, attempt int, status text, next_at timestamptz, error text, status_code int, duration_ms int, excerpt text, at timestamptz)`,
  );
  // d.id = ANY: the deliveries by their key (a recordset joined alone lets the planner scan the
  // whole table, its size unseen in the recordset's estimate of 100 rows).
  // WHERE round, attempt_count, status: only the first run of an attempt records it (a twin job
  // run, or a job from an older round, changes nothing). A delivery parked while the call was in
  // flight stays parked unless the call succeeded. The attempt row is written from the updated
  // row, so only when the guard let the update through. (In SET, d.status is the old status.)
  const recorded = stmt.with(
    'dlv_recorded',
    `UPDATE webhook_deliveries d
        SET attempt_count = o.attempt,
            status = CASE WHEN o.status = 'delivered' OR d.status = 'pending' THEN o.status ELSE d.status END,
            next_attempt_at = CASE WHEN d.status = 'pending' THEN o.next_at ELSE NULL END,
            delivered_at = CASE WHEN o.status = 'delivered' THEN now() ELSE d.delivered_at END,
            failed_at = CASE WHEN o.status = 'failed' AND d.status = 'pending' THEN now() ELSE d.failed_at END,
            parked_at = CASE WHEN o.status = 'delivered' THEN NULL ELSE d.parked_at END,
            last_error = o.error, updated_at = now()
       FROM ${outcomesCte} o
      WHERE d.id = ANY (${stmt.param(rows.map((row) => row.id), 'text[]')}) AND ${partitions()} AND d.id = o.id
        AND d.round = o.round AND d.attempt_count = o.attempt - 1 AND d.status IN ('pending', 'parked')
      RETURNING d.id, d.status, d.endpoint_id, o.attempt, o.status_code, o.error, o.duration_ms, o.excerpt, o.at`,
  );
  stmt.with(
    'dlv_attempt_rows',
    `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, status_code, error, duration_ms, response_excerpt, at)
     SELECT id, attempt, status_code, error, duration_ms, excerpt, at FROM ${recorded}`,
  );
  return recorded;
}
