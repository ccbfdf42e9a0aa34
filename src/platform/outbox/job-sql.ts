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
 * `also`: more RETURNING columns, evaluated only for a row claimed, once its row lock is held.
 */
export function claimJobSql(job: string, when = 'true', also?: string): string {
  return `UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, ${NOTHING_LEFT_TO_RELAY}
           WHERE job_id = ${job} AND completed_at IS NULL AND failed_at IS NULL AND (${when})
           RETURNING data${also ? `, ${also}` : ''}`;
}

/**
 * claimJobSql for several jobs, in two CTE bodies. The first locks the jobs (`jobIds`, an SQL
 * text[] expression) that have no outcome yet, in job_id order, so two statements that share jobs
 * (twin runs in two batches) take their locks in one order and never wait on each other
 * crosswise; a job a twin completed meanwhile is re-read after the wait and left out.
 */
export function lockJobsSql(jobIds: string): string {
  return `SELECT id FROM outbox_jobs WHERE job_id = ANY (${jobIds}) AND completed_at IS NULL AND failed_at IS NULL ORDER BY job_id FOR UPDATE`;
}

/** The second: claims the jobs CTE `locked` holds; returns the job_id of each (the claims this run won). */
export function claimLockedJobsSql(locked: string): string {
  return `UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, ${NOTHING_LEFT_TO_RELAY}
           WHERE id IN (SELECT id FROM ${locked}) AND completed_at IS NULL AND failed_at IS NULL
           RETURNING job_id`;
}

/**
 * Completes an external job after its handler ran. Decides nothing: a completion after a
 * recorded failure (a stall taken for a death) keeps both stamps, as happened.
 */
export function completeJobSql(job: string): string {
  return completeJobsWhere(`job_id = ${job}`);
}

/** completeJobSql for every job id in `jobs`, an SQL text[] expression. */
export function completeJobsSql(jobs: string): string {
  return completeJobsWhere(`job_id = ANY (${jobs})`);
}

function completeJobsWhere(jobs: string): string {
  return `UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, ${NOTHING_LEFT_TO_RELAY} WHERE ${jobs} AND completed_at IS NULL RETURNING 1`;
}

/** The payload of a job that has no outcome yet: read without a lock, the guards come later. */
export function pendingJobSql(job: string): string {
  return `SELECT data FROM outbox_jobs WHERE job_id = ${job} AND completed_at IS NULL AND failed_at IS NULL`;
}
