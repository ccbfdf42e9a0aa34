import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { PartitionedTables } from '../../platform/retention/partitioned-tables.js';

/**
 * usage_records, the billing ledger, is partitioned by time (migration 0052), USAGE_PARTITION_PERIOD_SECONDS
 * a partition. A ledger row owes no work, but it is never dropped without an export first: a
 * partition older than USAGE_RETENTION_HOURS goes only once recorded exports (`usage:export`,
 * usage_exports) cover its whole period, each with the row count the ledger still holds for its
 * period (usage_partition_exported; a row recorded late makes the export cover nothing until the
 * period is exported again). docs/retention.md, *usage_records*.
 */
@Injectable()
export class UsageRetention implements OnModuleInit {
  constructor(
    private readonly tables: PartitionedTables,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.tables.register({
      table: 'usage_records',
      unfinished: 'false',
      releasable: 'usage_partition_exported(p.name::regclass, p.from_at, p.to_at)',
      heldUntil: 'exports whose counts match cover its period (usage:export)',
      retentionHours: this.config.USAGE_RETENTION_HOURS,
      periodSeconds: this.config.USAGE_PARTITION_PERIOD_SECONDS,
    });
  }
}
