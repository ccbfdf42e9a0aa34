import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { exec } from '../../platform/database/tx.js';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { WebhookParkedExpiryJob } from './webhooks.jobs.js';
import { HandlesJob, type JobContext, type JobHandler } from '../../platform/outbox/job-handler.js';
import { DeliveryScheduler } from './delivery-scheduler.js';

/**
 * Fails an endpoint's deliveries parked longer than the retention, then, while some stay parked,
 * schedules itself for when the oldest of them expires. Started when the endpoint is disabled;
 * the guarantee is the sweep registered by WebhooksModule, which covers every endpoint.
 */
@Injectable()
@HandlesJob(WebhookParkedExpiryJob)
export class ParkedExpiryHandler implements JobHandler<typeof WebhookParkedExpiryJob> {
  constructor(
    private readonly scheduler: DeliveryScheduler,
    private readonly config: AppConfig,
  ) {}

  async handle({ endpointId }: PayloadOf<typeof WebhookParkedExpiryJob>, { tx }: JobContext): Promise<void> {
    await this.scheduler.expireParked(tx!, endpointId);
    // An earlier read may decide this: a delivery it cannot see yet (parked by a transaction not
    // committed, or after the chain ends) is failed by the housekeeping sweep, not by the chain.
    const { rows } = await exec<{ oldest: Date | null }>(
      tx!,
      `SELECT min(parked_at) AS oldest FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'parked'`,
      [endpointId],
    );
    const oldest = rows[0]?.oldest;
    if (oldest) {
      const due = new Date(new Date(oldest).getTime() + this.config.WEBHOOK_PARKED_RETENTION_DAYS * 86_400_000 + 1000);
      await this.scheduler.scheduleParkedExpiry(tx!, endpointId, due);
    }
  }
}
