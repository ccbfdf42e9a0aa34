/**
 * The two statements that give a job its outcome in Postgres, shared by JobRunner's own
 * transaction and by handlers that run a whole job as one statement. `$job` is the placeholder
 * of the job id.
 */

/**
 * A job given its outcome before any relay published it (run after commit, AfterCommitJobs) has
 * nothing left to relay: relayed_at is stamped so the relay never hands it to Redis. Such a row
 * keeps redrive_at NULL, which tells it from a relayed one.
 */
const NOTHING_LEFT_TO_RELAY = 'relayed_at = coalesce(relayed_at, now())';

/**
 * Claims a transactional job: only one run moves completed_at off NULL (a twin run blocks on the
 * row lock until the first commits, then finds nothing to claim); `when` holds the claim back.
 */
export function claimJobSql(job: string, when = 'true'): string {
  return `UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, ${NOTHING_LEFT_TO_RELAY}
           WHERE job_id = ${job} AND completed_at IS NULL AND failed_at IS NULL AND (${when})
           RETURNING data`;
}

/**
 * Completes an external job after its handler ran. Decides nothing: a completion after a
 * recorded failure (a stall taken for a death) keeps both stamps, as happened.
 */
export function completeJobSql(job: string): string {
  return `UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, ${NOTHING_LEFT_TO_RELAY} WHERE job_id = ${job} AND completed_at IS NULL RETURNING 1`;
}

/** The payload of a job that has no outcome yet: read without a lock, the guards come later. */
export function pendingJobSql(job: string): string {
  return `SELECT data FROM outbox_jobs WHERE job_id = ${job} AND completed_at IS NULL AND failed_at IS NULL`;
}
