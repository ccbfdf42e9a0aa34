import { Injectable } from '@nestjs/common';
import { UniqueRegistry } from '../registry.js';

/** A time-partitioned table whose module owns its retention (its parent is a row of partitioned_tables). */
export interface PartitionedTable {
  /** The partitioned parent, PARTITION BY RANGE (created_at). */
  table: string;
  /**
   * SQL predicate over one of its rows: work still owed (an unprocessed carrier event). A partition
   * holding such a row is never dropped, however old: it waits until nothing in it is owed.
   */
  unfinished: string;
  /** A partition is dropped once its whole period is older than this (and nothing in it is owed). */
  retentionHours: number;
  /** The period of its new partitions, when not PARTITION_PERIOD_SECONDS (the usage ledger's is longer). */
  periodSeconds?: number;
  /**
   * SQL, when age and nothing owed are not enough to drop a partition: a boolean expression over
   * `p.name` (the partition's name, text), `p.from_at` and `p.to_at` (its range [from, to),
   * timestamptz; NULL when not known: the legacy partition's start, or both for a detached table
   * left by a dead run), true when the partition may go (the usage ledger: a matching export
   * covers its period). Checked before the detach and again, finally, after it.
   */
  releasable?: string;
  /** What a partition past retention waits for, as retention:status says it (default: unfinished work). */
  heldUntil?: string;
}

/** The partitioned tables modules register; the relay's maintenance and retention:status read them. */
@Injectable()
export class PartitionedTables {
  private readonly tables = new UniqueRegistry<string, PartitionedTable>('partitioned table');

  register(table: PartitionedTable): void {
    this.tables.register(table.table, table);
  }

  all(): PartitionedTable[] {
    return [...this.tables].map(([, table]) => table);
  }
}

/**
 * SQL: the time since which every row of a table kept `retentionHours` is still there. Maintenance
 * drops a partition only once its whole period is older than the retention, so a row whose
 * partition key is at least this young is kept; an older one may be gone. A check that counts a
 * kept row's partners in such a table (verify's "exactly one event per …") looks only at rows
 * whose partners are this young.
 */
export function keptSince(retentionHours: number): string {
  return `(now() - make_interval(secs => ${retentionHours * 3600}))`;
}
