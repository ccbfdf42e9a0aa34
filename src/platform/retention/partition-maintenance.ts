import { Injectable, Logger } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { queryRows } from '../database/tx.js';
import { readOrphans, readPartitions } from './partition-catalog.js';
import { partitionPlan, type PartitionInfo, type PartitionPlan } from './partition-plan.js';
import { PartitionedTables, type PartitionedTable } from './partitioned-tables.js';

/** Any constant works; it only has to be the same for every relay maintaining this database. */
const MAINTENANCE_LOCK_KEY = 7_271_044;

/** What one run did to one table. */
export interface MaintenanceResult {
  table: string;
  created: string[];
  dropped: string[];
  /** Past retention but still holding unfinished work (or, the usage ledger, not exported): kept. */
  held: string[];
}

/** One table's partitions and what the next run will do with them (retention:status). */
export interface TableRetention {
  table: string;
  retentionHours: number;
  periodSeconds: number;
  partitions: PartitionInfo[];
  plan: PartitionPlan;
  /** Of plan.expired: those holding unfinished work now, or not releasable (kept until it is done). */
  held: string[];
  /** What a held partition waits for (PartitionedTable.heldUntil). */
  heldUntil: string;
}

/**
 * Time partitions made ahead and dropped past retention, for every registered table, by the
 * relay's maintenance (one relay at a time: a session advisory lock; the others skip the run).
 *
 * A drop is DETACH PARTITION ... CONCURRENTLY then DROP TABLE, autocommit statements on one
 * connection (CONCURRENTLY cannot run in a transaction block; the parent has no default
 * partition, with which it is not allowed). The partition is first checked for unfinished work
 * (nothing there: skipped cheaply), and checked again once detached: from then on no insert or
 * update can reach it through the parent, so that second check is final; should it find work
 * after all (a row written meanwhile by a clock far behind), the partition is attached again.
 */
@Injectable()
export class PartitionMaintenance {
  private readonly logger = new Logger(PartitionMaintenance.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly tables: PartitionedTables,
    private readonly config: AppConfig,
  ) {}

  /** One maintenance run over every table; undefined when another relay holds the run. */
  async maintain(now = new Date()): Promise<MaintenanceResult[] | undefined> {
    const runner = this.dataSource.createQueryRunner();
    try {
      const manager = runner.manager;
      const [{ locked }] = await queryRows<{ locked: boolean }>(manager, 'SELECT pg_try_advisory_lock($1) AS locked', [MAINTENANCE_LOCK_KEY]);
      if (!locked) return undefined;
      try {
        const results: MaintenanceResult[] = [];
        for (const table of this.tables.all()) results.push(await this.maintainTable(manager, table, now));
        return results;
      } finally {
        await queryRows(manager, 'SELECT pg_advisory_unlock($1)', [MAINTENANCE_LOCK_KEY]);
      }
    } finally {
      await runner.release();
    }
  }

  /** Every registered table's partitions and the next run's plan, without changing anything. */
  async status(now = new Date()): Promise<TableRetention[]> {
    const manager = this.dataSource.manager;
    const out: TableRetention[] = [];
    for (const table of this.tables.all()) {
      const partitions = await readPartitions(manager, table.table);
      const settings = this.settings(table);
      const plan = partitionPlan(partitions, now, settings);
      const held: string[] = [];
      for (const p of plan.expired) if (await this.mustKeep(manager, p, table)) held.push(p.name);
      out.push({ table: table.table, retentionHours: table.retentionHours, periodSeconds: settings.periodSeconds, partitions, plan, held, heldUntil: table.heldUntil ?? 'its unfinished work is done' });
    }
    return out;
  }

  private settings(table: PartitionedTable) {
    return { periodSeconds: table.periodSeconds ?? this.config.PARTITION_PERIOD_SECONDS, ahead: this.config.PARTITIONS_AHEAD, retentionHours: table.retentionHours };
  }

  private async maintainTable(manager: EntityManager, table: PartitionedTable, now: Date): Promise<MaintenanceResult> {
    const result: MaintenanceResult = { table: table.table, created: [], dropped: [], held: [] };
    // A run that died mid-way: a detach left pending, or a detached table never dropped.
    for (const p of await readPartitions(manager, table.table)) {
      if (p.detachPending) await queryRows(manager, `ALTER TABLE ${ident(table.table)} DETACH PARTITION ${ident(p.name)} FINALIZE`);
    }
    for (const orphan of await readOrphans(manager, table.table)) {
      if (await this.mustKeep(manager, { name: orphan, from: null, to: null }, table)) this.logger.error(`${orphan}, detached from ${table.table}, holds unfinished work (or is not released): attach it again by hand`);
      else await this.drop(manager, orphan, result);
    }
    const partitions = await readPartitions(manager, table.table);
    const plan = partitionPlan(partitions, now, this.settings(table));
    for (const { from, to } of plan.create) {
      const [{ name }] = await queryRows<{ name: string }>(manager, 'SELECT onceline_add_partition($1, $2, $3) AS name', [table.table, from, to]);
      result.created.push(name);
    }
    for (const p of plan.expired) {
      // Cheap first look: most of the time a partition past retention owes nothing.
      if (await this.mustKeep(manager, p, table)) {
        result.held.push(p.name);
        continue;
      }
      await queryRows(manager, `ALTER TABLE ${ident(table.table)} DETACH PARTITION ${ident(p.name)} CONCURRENTLY`);
      if (await this.mustKeep(manager, p, table)) {
        await queryRows(manager, `ALTER TABLE ${ident(table.table)} ATTACH PARTITION ${ident(p.name)} FOR VALUES FROM (${p.from ? literal(p.from) : 'MINVALUE'}) TO (${literal(p.to)})`);
        this.logger.warn(`${p.name} received unfinished work while being detached: attached again`);
        result.held.push(p.name);
        continue;
      }
      await this.drop(manager, p.name, result);
    }
    if (result.created.length + result.dropped.length > 0) this.logger.log(`${table.table}: made ${result.created.join(', ') || 'none'}; dropped ${result.dropped.join(', ') || 'none'}`);
    return result;
  }

  private async drop(manager: EntityManager, name: string, result: MaintenanceResult): Promise<void> {
    await queryRows(manager, `DROP TABLE ${ident(name)}`);
    result.dropped.push(name);
  }

  /**
   * Whether the partition (or detached table) `name` must stay: it holds a row of unfinished work,
   * or the table's own release condition (`releasable`) does not hold of it.
   */
  private async mustKeep(manager: EntityManager, p: { name: string; from: Date | null; to: Date | null }, table: PartitionedTable): Promise<boolean> {
    const [{ owes }] = await queryRows<{ owes: boolean }>(manager, `SELECT EXISTS (SELECT FROM ${ident(p.name)} WHERE ${table.unfinished}) AS owes`);
    if (owes || !table.releasable) return owes;
    const [{ releasable }] = await queryRows<{ releasable: boolean }>(manager,
      `SELECT (${table.releasable}) AS releasable FROM (SELECT $1::text AS name, $2::timestamptz AS from_at, $3::timestamptz AS to_at) AS p`,
      [p.name, p.from, p.to],
    );
    return !releasable;
  }
}

/** A catalog name as an SQL identifier (names come from pg_class or our own registrations). */
function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function literal(at: Date): string {
  return `'${at.toISOString()}'`;
}
