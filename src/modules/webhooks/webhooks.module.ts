import { Module, type OnModuleInit } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { Housekeeping } from '../../platform/outbox/housekeeping.js';
import { OutboxModule } from '../../platform/outbox/outbox.module.js';
import { RetentionModule } from '../../platform/retention/retention.module.js';
import { CustomerEvents } from './customer-events.js';
import { DeliveredAttempts } from './delivered-attempts.js';
import { DeliveryAttemptHandler } from './delivery-attempt.handler.js';
import { DeliveryScheduler } from './delivery-scheduler.js';
import { EndpointHealth } from './endpoint-health.js';
import { EndpointsController } from './endpoints.controller.js';
import { EndpointsService } from './endpoints.service.js';
import { EventsController } from './events.controller.js';
import { EventsService } from './events.service.js';
import { ParkedExpiryHandler } from './parked-expiry.handler.js';
import { WebhooksInvariants } from './webhooks-invariants.js';
import { WebhooksRetention } from './webhooks-retention.js';
import { declareJobs } from '../../platform/outbox/job-definition.js';
import { WebhookDeliveryAttemptJob, WebhookParkedExpiryJob } from './webhooks.jobs.js';

/**
 * Customer webhooks: events written with the change (CustomerEvents.emit), endpoints, signed
 * delivery with retries, endpoint health and parking. Other modules use CustomerEvents only.
 * The relay role's housekeeping fails deliveries parked past the retention, whichever way they
 * were parked (an endpoint's expiry chain only covers what was parked while it ran).
 */
@Module({
  imports: [OutboxModule, AccountsModule, RetentionModule],
  controllers: [EndpointsController, EventsController],
  providers: [CustomerEvents, DeliveryScheduler, EndpointHealth, EndpointsService, EventsService, declareJobs(WebhookDeliveryAttemptJob, WebhookParkedExpiryJob), DeliveryAttemptHandler, DeliveredAttempts, ParkedExpiryHandler, WebhooksInvariants, WebhooksRetention],
  exports: [CustomerEvents, EndpointsService],
})
export class WebhooksModule implements OnModuleInit {
  constructor(
    private readonly housekeeping: Housekeeping,
    private readonly deliveries: DeliveryScheduler,
  ) {}

  onModuleInit(): void {
    this.housekeeping.register('webhook-parked-expiry', (tx) => this.deliveries.expireParked(tx));
  }
}
