import type { EntityManager } from 'typeorm';
import { queryRows } from '../database/tx.js';
import type { PartitionInfo } from './partition-plan.js';

/**
 * The partitions of `table`, oldest first, with their bounds read back from the catalog
 * (pg_get_expr of the bound: `FOR VALUES FROM ('…') TO ('…')`, or `FROM (MINVALUE)`).
 */
export async function readPartitions(manager: EntityManager, table: string): Promise<PartitionInfo[]> {
  const rows = await queryRows<{ name: string; from: Date | null; to: Date; bytes: string; rows_estimate: string | null; detach_pending: boolean }>(
    manager,
    `SELECT c.relname AS name, b[1]::timestamptz AS "from", b[2]::timestamptz AS "to",
            pg_total_relation_size(c.oid) AS bytes, nullif(c.reltuples, -1)::bigint AS rows_estimate, i.inhdetachpending AS detach_pending
       FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid
       CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), $$FROM \\((?:'([^']*)'|MINVALUE)\\) TO \\('([^']*)'\\)$$) AS b
      WHERE i.inhparent = $1::regclass
      ORDER BY b[2]::timestamptz`,
    [table],
  );
  return rows.map((r) => ({
    name: r.name,
    from: r.from,
    to: r.to,
    bytes: Number(r.bytes),
    rowsEstimate: r.rows_estimate === null ? null : Number(r.rows_estimate),
    detachPending: r.detach_pending,
  }));
}

/** Tables named as partitions of `table` that are not attached: left by a run that died between detach and drop. */
export async function readOrphans(manager: EntityManager, table: string): Promise<string[]> {
  const rows = await queryRows<{ name: string }>(
    manager,
    `SELECT c.relname AS name FROM pg_class c
      WHERE c.relkind = 'r' AND c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = $1::regclass)
        AND (left(c.relname, length($2) + 2) = $2 || '_p' OR c.relname = $2 || '_legacy') AND NOT c.relispartition`,
    [table, table],
  );
  return rows.map((r) => r.name);
}
