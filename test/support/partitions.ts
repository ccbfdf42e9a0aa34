import type pg from 'pg';
import { waitFor } from './wait.js';

/** The partition of carrier_events (or `table`) holding a row, by the row's id. */
export async function partitionOf(pool: pg.Pool, id: string, table = 'carrier_events'): Promise<string> {
  const { rows } = await pool.query(`SELECT tableoid::regclass::text AS name FROM ${table} WHERE id = $1`, [id]);
  return rows[0]?.name;
}

/**
 * Splits the partition of `table` that holds the instant `at` into two, [from, at) and [at, to),
 * the rows it held moved into them: a partition boundary where a test wants one (a second from now,
 * not next midnight). Detached and re-attached plainly (a test's own database, nothing running).
 */
export async function splitPartitionAt(pool: pg.Pool, at: Date, table = 'carrier_events'): Promise<{ before: string; after: string }> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      `SELECT c.relname AS name, b[1]::timestamptz AS "from", b[2]::timestamptz AS "to"
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), $$FROM \\('([^']*)'\\) TO \\('([^']*)'\\)$$) AS b
        WHERE i.inhparent = $1::regclass AND b[1]::timestamptz <= $2 AND $2 < b[2]::timestamptz`,
      [table, at],
    );
    const old = rows[0] as { name: string; from: Date; to: Date };
    if (!old) throw new Error(`no partition of ${table} holds ${at.toISOString()}`);
    await client.query(`ALTER TABLE ${table} DETACH PARTITION ${old.name}`);
    await client.query(`ALTER TABLE ${old.name} RENAME TO ${old.name}_split`);
    const made = await client.query(`SELECT onceline_add_partition($1, $2, $3) AS before, onceline_add_partition($1, $3, $4) AS after`, [table, old.from, at, old.to]);
    await client.query(`INSERT INTO ${table} SELECT * FROM ${old.name}_split`);
    await client.query(`DROP TABLE ${old.name}_split`);
    await client.query('COMMIT');
    return made.rows[0];
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Makes sure a partition of `table` holds the instant `at`: a test that plants a row in the past
 * (an hour old, a minute old) needs yesterday's partition in the first hour of a day, which a
 * database made today has none of. Adds the part of `at`'s UTC day that no partition holds.
 */
export async function partitionHolding(pool: pg.Pool, table: string, at: Date): Promise<void> {
  const { rows } = await pool.query<{ from: string; to: string }>(
    `SELECT b[1] AS "from", b[2] AS "to" FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), $$FROM \\(([^)]*)\\) TO \\(([^)]*)\\)$$) AS b
      WHERE i.inhparent = $1::regclass AND b IS NOT NULL`,
    [table],
  );
  const bound = (value: string) => (value === 'MINVALUE' ? -Infinity : value === 'MAXVALUE' ? Infinity : new Date(value.replace(/^'|'$/g, '')).getTime());
  const ranges = rows.map((r) => ({ from: bound(r.from), to: bound(r.to) }));
  const t = at.getTime();
  if (ranges.some((r) => r.from <= t && t < r.to)) return;
  const day = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  const from = Math.max(day, ...ranges.filter((r) => r.to <= t).map((r) => r.to));
  const to = Math.min(day + 86_400_000, ...ranges.filter((r) => r.from > t).map((r) => r.from));
  await pool.query(`SELECT onceline_add_partition($1, $2, $3)`, [table, new Date(from), new Date(to)]);
}

/**
 * A partition boundary of `table` `ms` from now (splitPartitionAt): its time, the partitions
 * either side, and passed(), which resolves once the clock is past it.
 */
export async function boundaryIn(pool: pg.Pool, table: string, ms: number): Promise<{ at: Date; before: string; after: string; passed: () => Promise<number> }> {
  const at = new Date(Date.now() + ms);
  const parts = await splitPartitionAt(pool, at, table);
  return { at, ...parts, passed: () => waitFor(() => Date.now(), (now) => now > at.getTime() + 5, { what: 'the boundary to pass' }) };
}

/** Resolves once one session of this database waits for an advisory lock (a twin guard's, held by the test). */
export function waitingOnAdvisoryLock(pool: pg.Pool, what: string): Promise<number> {
  const waiting = async () =>
    Number((await pool.query(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)).rows[0].count);
  return waitFor(waiting, (n) => n === 1, { what });
}

/**
 * Takes, in the open transaction `query` runs in, the advisory lock a twin guard takes for `key` (the
 * guard's name and key, as 0052's onceline_twin_lock spelled it: 'usage-record:<kind>:<resource>',
 * 'call:<carrier>:<session>', 'call-timeline:<carrier event id>'): a lock the test owns, which the
 * guard must wait on, by the key every version of it locks.
 */
export async function lockTwinKey(query: (sql: string, params: unknown[]) => Promise<unknown>, key: string): Promise<void> {
  await query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [key]);
}
