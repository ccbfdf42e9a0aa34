const CTE_NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * One SQL statement assembled from common table expressions that several modules contribute,
 * each naming only its own tables: a transition and all its side effects in one round trip,
 * atomic on its own. A CTE may read only the ones added before it, so a fragment that depends
 * on another takes that one's name. What a contributor must remember about its own fragments
 * (the outbox's job CTEs, say) it keeps itself, keyed by the statement (StatementJobs).
 *
 * Parameters are numbered as they are added, so fragments never agree on `$n` by hand.
 */
export class CteStatement {
  private readonly ctes: string[] = [];
  private readonly names = new Set<string>();
  readonly params: unknown[] = [];

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

  /** The statement: every CTE, then the final SELECT. */
  text(finalSelect: string): string {
    return this.ctes.length === 0 ? finalSelect : `WITH ${this.ctes.join(',\n')}\n${finalSelect}`;
  }
}

/** A timestamptz as JSON shows our dates: ISO 8601 in UTC with milliseconds, as Date.toISOString(). */
export function isoTimestampSql(expr: string): string {
  return `to_char(${expr} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
