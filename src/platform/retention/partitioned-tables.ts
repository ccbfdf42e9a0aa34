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
