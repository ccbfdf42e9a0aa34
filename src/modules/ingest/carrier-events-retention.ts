import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { PartitionedTables } from '../../platform/retention/partitioned-tables.js';

/**
 * carrier_events is partitioned by time (migration 0042) and kept CARRIER_EVENTS_RETENTION_HOURS:
 * the dedupe record must outlast every documented retry horizon (docs/contract.md, *Retention*).
 * An unprocessed event (pending, failed for good, or waiting for a handler: carrier-events:replay's
 * source) keeps its partition however old.
 */
@Injectable()
export class CarrierEventsRetention implements OnModuleInit {
  constructor(
    private readonly tables: PartitionedTables,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.tables.register({ table: 'carrier_events', unfinished: 'processed_at IS NULL', retentionHours: this.config.CARRIER_EVENTS_RETENTION_HOURS });
  }
}
