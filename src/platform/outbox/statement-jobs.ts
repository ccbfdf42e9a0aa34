import type { CteStatement } from '../database/cte-statement.js';

const parts = new WeakMap<CteStatement, StatementJobs>();

/**
 * The outbox's part of one statement assembled from fragments (CteStatement): the CTEs that
 * insert its jobs, and which of those this process runs right after the statement returns.
 * Kept here, keyed by the statement, so the database layer knows nothing of jobs.
 */
export class StatementJobs {
  /**
   * CTEs that insert outbox jobs a relay must be woken for, each returning one row per new job
   * (OutboxService.jobsFromCte; not those a relay's poll finds before they fall due).
   */
  readonly jobCtes: string[] = [];
  /**
   * Set by the caller before the fragments are added: the jobs (by name) whose new rows this
   * process will run right after the statement returns (AfterCommitJobs). Only for an autocommit
   * statement, which has committed when it returns.
   */
  readonly runAfterCommit = new Set<string>();
  /** CTEs that insert jobs this process runs after commit, each returning job_id and name per new job. */
  readonly afterCommitJobCtes: string[] = [];
  /** Of afterCommitJobCtes, those that also return their jobs' `data`: the run here starts from it (AfterCommitJob.payload). */
  readonly afterCommitPayloadCtes = new Set<string>();
  /**
   * CTEs of (job_id, prefetched jsonb): what this statement already holds about the subject of an
   * after-commit job it created (JobContext.prefetched), so that job's run need not read it back.
   */
  readonly afterCommitPrefetchCtes: string[] = [];

  static of(stmt: CteStatement): StatementJobs {
    let part = parts.get(stmt);
    if (!part) parts.set(stmt, (part = new StatementJobs()));
    return part;
  }
}

/** SQL counting the outbox jobs `stmt` inserted that a relay must be woken for (0 when none of its CTEs can). */
export function newJobsCount(stmt: CteStatement): string {
  const { jobCtes } = StatementJobs.of(stmt);
  return jobCtes.length === 0 ? '0' : jobCtes.map((name) => `(SELECT count(*) FROM ${name})`).join(' + ');
}

/**
 * SQL of the jsonb array of new jobs this process runs after `stmt` commits, [{"name","jobId"}],
 * with "prefetched" (null where no prefetch CTE has the job) when the statement has prefetch CTEs.
 */
export function afterCommitJobs(stmt: CteStatement): string {
  const { afterCommitJobCtes, afterCommitPrefetchCtes, afterCommitPayloadCtes } = StatementJobs.of(stmt);
  if (afterCommitJobCtes.length === 0) return `'[]'::jsonb`;
  const rows = afterCommitJobCtes.map((cte) => `SELECT name, job_id, ${afterCommitPayloadCtes.has(cte) ? 'data' : 'NULL::jsonb'} AS payload FROM ${cte}`).join(' UNION ALL ');
  const withPayload = afterCommitPayloadCtes.size > 0 ? ` || CASE WHEN a.payload IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('payload', a.payload) END` : '';
  if (afterCommitPrefetchCtes.length === 0) {
    return `(SELECT coalesce(jsonb_agg(jsonb_build_object('name', a.name, 'jobId', a.job_id)${withPayload}), '[]'::jsonb) FROM (${rows}) AS a)`;
  }
  const prefetched = afterCommitPrefetchCtes.map((cte) => `SELECT job_id, prefetched FROM ${cte}`).join(' UNION ALL ');
  return `(SELECT coalesce(jsonb_agg(jsonb_build_object('name', a.name, 'jobId', a.job_id, 'prefetched', p.prefetched)${withPayload}), '[]'::jsonb)
               FROM (${rows}) AS a LEFT JOIN (${prefetched}) AS p ON p.job_id = a.job_id)`;
}
