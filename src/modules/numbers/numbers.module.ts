import { Module } from '@nestjs/common';
import { CarriersModule } from '../../carriers/carriers.module.js';
import { IdempotencyModule } from '../../platform/idempotency/idempotency.module.js';
import { OutboxModule } from '../../platform/outbox/outbox.module.js';
import { AccountsModule } from '../accounts/accounts.module.js';
import { BillingModule } from '../billing/billing.module.js';
import { NumberRentals } from './number-rentals.js';
import { IngestModule } from '../ingest/ingest.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { NumberOrderEvents } from './number-order-events.js';
import { PlaceNumberOrderHandler, PollNumberOrderHandler } from './number-order.handlers.js';
import { NumberOrderTransitions } from './number-order-transitions.js';
import { AvailablePhoneNumbersController, NumberOrdersController } from './number-orders.controller.js';
import { NumberOrders } from './number-orders.service.js';
import { NumberReleases, ReleaseNumberHandler } from './number-releases.js';
import { NumberSearchService } from './number-search.js';
import { PhoneNumbersController } from './phone-numbers.controller.js';
import { PhoneNumbers } from './phone-numbers.service.js';
import { declareJobs } from '../../platform/outbox/job-definition.js';
import { PlaceNumberOrderJob, PollNumberOrderJob, ReleaseNumberJob, StoreNumberIdsJob } from './numbers.jobs.js';
import { StoreNumberIdsHandler } from './number-ids.js';
import { NumbersInvariants } from './numbers-invariants.js';
// The customer event types this module emits (webhooks delivers them, knowing none by name).
import './numbers.events.js';

/**
 * Phone numbers: bought through the carrier (search, order, release) or assigned by an operator;
 * ownership (one holder per number) and the carrier each sends through.
 */
@Module({
  imports: [AccountsModule, BillingModule, CarriersModule, IdempotencyModule, IngestModule, OutboxModule, WebhooksModule],
  controllers: [PhoneNumbersController, AvailablePhoneNumbersController, NumberOrdersController],
  providers: [
    PhoneNumbers, NumberOrders, NumberOrderTransitions, declareJobs(PlaceNumberOrderJob, PollNumberOrderJob, ReleaseNumberJob, StoreNumberIdsJob), PlaceNumberOrderHandler, PollNumberOrderHandler, NumberReleases, ReleaseNumberHandler, StoreNumberIdsHandler, NumberSearchService, NumberOrderEvents, NumberRentals, NumbersInvariants,
  ],
  exports: [PhoneNumbers, NumberRentals, NumberOrders, NumberReleases, NumberSearchService, NumberOrderTransitions],
})
export class NumbersModule {}
