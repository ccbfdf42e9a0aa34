import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { PartitionedTables } from '../../platform/retention/partitioned-tables.js';

/** Deliveries still owed: pending (being retried) or parked (their endpoint disabled). */
const OWED_DELIVERIES = `SELECT event_id, id FROM webhook_deliveries WHERE status IN ('pending', 'parked')`;

/**
 * outbound_events (customer events) are partitioned by their id's time, webhook_deliveries by
 * their event's, webhook_delivery_attempts by their delivery's (migration 0047): an event, its
 * deliveries and their attempts age out together. Events are kept CUSTOMER_EVENTS_RETENTION_HOURS,
 * deliveries and attempts WEBHOOK_DELIVERIES_RETENTION_HOURS (docs/contract.md, *Retention of
 * messages and customer events*). A delivery still owed keeps its partition, its event's (the
 * payload every attempt sends) and its attempts' however old.
 */
@Injectable()
export class WebhooksRetention implements OnModuleInit {
  constructor(
    private readonly tables: PartitionedTables,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const deliveries = this.config.WEBHOOK_DELIVERIES_RETENTION_HOURS;
    // The subqueries read each deliveries partition's partial index of its owed rows (event_id, id).
    this.tables.register({ table: 'outbound_events', unfinished: `id IN (SELECT event_id FROM (${OWED_DELIVERIES}) owed)`, retentionHours: this.config.CUSTOMER_EVENTS_RETENTION_HOURS });
    this.tables.register({ table: 'webhook_deliveries', unfinished: `status IN ('pending', 'parked')`, retentionHours: deliveries });
    this.tables.register({ table: 'webhook_delivery_attempts', unfinished: `delivery_id IN (SELECT id FROM (${OWED_DELIVERIES}) owed)`, retentionHours: deliveries });
  }
}
