const CTE_NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * One SQL statement assembled from common table expressions that several modules contribute,
 * each naming only its own tables: a transition and all its side effects (history, usage,
 * customer event, deliveries, jobs) in one round trip, atomic on its own. A CTE may read only
 * the ones added before it, so a fragment that depends on another takes that one's name.
 *
 * Parameters are numbered as they are added, so fragments never agree on `$n` by hand.
 */
export class CteStatement {
  private readonly ctes: string[] = [];
  private readonly names = new Set<string>();
  readonly params: unknown[] = [];
  /** CTEs that insert outbox jobs, each returning one row per new job (see OutboxService). */
  readonly jobCtes: string[] = [];
  /**
   * Set by the caller before the fragments are added: the job (by name) whose new rows this
   * process will run right after the statement returns (AfterCommitJobs). Only for an autocommit
   * statement, which has committed when it returns.
   */
  jobRunAfterCommit?: string;
  /** CTEs that insert jobs this process runs after commit, each returning job_id and name per new job. */
  readonly afterCommitJobCtes: string[] = [];
  /**
   * CTEs of (job_id, prefetched jsonb): what this statement already holds about the subject of an
   * after-commit job it created (JobContext.prefetched), so that job's run need not read it back.
   */
  readonly afterCommitPrefetchCtes: string[] = [];

  /** A placeholder for `value`, with an optional cast (`text[]`, `int`, …). */
  param(value: unknown, cast?: string): string {
    this.params.push(value);
    return cast ? `$${this.params.length}::${cast}` : `$${this.params.length}`;
  }

  /**
   * Adds `name AS (sql)`; returns the name. A name used twice is a bug in the fragments.
   * `materialized`: computed once, where PostgreSQL would otherwise fold a SELECT read once into
   * the query that reads it (and, inside a nested loop, run it again for every outer row).
   */
  with(name: string, sql: string, { materialized = false } = {}): string {
    if (!CTE_NAME.test(name)) throw new Error(`not a plain CTE name: ${JSON.stringify(name)}`);
    if (this.names.has(name)) throw new Error(`CTE ${name} is added twice`);
    this.names.add(name);
    this.ctes.push(`${name} AS ${materialized ? 'MATERIALIZED ' : ''}(${sql})`);
    return name;
  }

  has(name: string): boolean {
    return this.names.has(name);
  }

  /** SQL counting the outbox jobs this statement inserted (0 when none of its CTEs can). */
  newJobsCount(): string {
    return this.jobCtes.length === 0 ? '0' : this.jobCtes.map((name) => `(SELECT count(*) FROM ${name})`).join(' + ');
  }

  /**
   * SQL of the jsonb array of new jobs this process runs after commit, [{"name","jobId"}], with
   * "prefetched" (null where no prefetch CTE has the job) when the statement has prefetch CTEs.
   */
  afterCommitJobs(): string {
    if (this.afterCommitJobCtes.length === 0) return `'[]'::jsonb`;
    const rows = this.afterCommitJobCtes.map((cte) => `SELECT name, job_id FROM ${cte}`).join(' UNION ALL ');
    if (this.afterCommitPrefetchCtes.length === 0) {
      return `(SELECT coalesce(jsonb_agg(jsonb_build_object('name', name, 'jobId', job_id)), '[]'::jsonb) FROM (${rows}) AS after_commit)`;
    }
    const prefetched = this.afterCommitPrefetchCtes.map((cte) => `SELECT job_id, prefetched FROM ${cte}`).join(' UNION ALL ');
    return `(SELECT coalesce(jsonb_agg(jsonb_build_object('name', a.name, 'jobId', a.job_id, 'prefetched', p.prefetched)), '[]'::jsonb)
               FROM (${rows}) AS a LEFT JOIN (${prefetched}) AS p ON p.job_id = a.job_id)`;
  }

  /** The statement: every CTE, then the final SELECT. */
  text(finalSelect: string): string {
    return this.ctes.length === 0 ? finalSelect : `WITH ${this.ctes.join(',\n')}\n${finalSelect}`;
  }
}

/** A timestamptz as JSON shows our dates: ISO 8601 in UTC with milliseconds, as Date.toISOString(). */
export function isoTimestampSql(expr: string): string {
  return `to_char(${expr} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
