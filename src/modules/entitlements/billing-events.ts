import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { BillingEvent } from '../../carriers/billing-event.js';
import { exec } from '../../platform/database/tx.js';

/** Every verified billing-provider event, kept raw for the record. */
@Injectable()
export class BillingEvents {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Stores the event once (a redelivery adds nothing), committed on its own before the grant is
   * decided: the record stays whatever the grant's transaction does. It decides nothing: a
   * re-sent notification has a new event id, so only the entitlement's key tells a replay.
   */
  async record(event: BillingEvent): Promise<void> {
    // ON CONFLICT DO NOTHING on (provider, provider_event_id): the first copy is the record.
    await exec(
      this.dataSource.manager,
      `INSERT INTO billing_events (provider, provider_event_id, event_type, payload) VALUES ($1, $2, $3, $4::jsonb)
       ON CONFLICT (provider, provider_event_id) DO NOTHING`,
      [event.provider, event.providerEventId, event.providerEventType, event.payloadJson],
    );
  }
}
