import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { PartitionedTables } from '../retention/partitioned-tables.js';

/**
 * outbox_jobs is partitioned by time (migration 0043): a day's partition is dropped once it is
 * older than OUTBOX_RETENTION_HOURS and none of its jobs is without an outcome (a pending job,
 * one scheduled weeks ahead, one still being retried keeps it).
 */
@Injectable()
export class OutboxRetention implements OnModuleInit {
  constructor(
    private readonly tables: PartitionedTables,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.tables.register({ table: 'outbox_jobs', unfinished: 'completed_at IS NULL AND failed_at IS NULL', retentionHours: this.config.OUTBOX_RETENTION_HOURS });
  }
}
