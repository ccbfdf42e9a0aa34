import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { BillingModule } from '../billing/billing.module.js';
import { CarriersModule } from '../../carriers/carriers.module.js';
import { IdempotencyModule } from '../../platform/idempotency/idempotency.module.js';
import { IngestModule } from '../ingest/ingest.module.js';
import { NumbersModule } from '../numbers/numbers.module.js';
import { OutboxModule } from '../../platform/outbox/outbox.module.js';
import { RetentionModule } from '../../platform/retention/retention.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { DispatchMessageHandler, DispatchReplyHandler } from './dispatch-message.handler.js';
import { DispatchClaims } from './dispatch-claims.js';
import { MessageCancel } from './message-cancel.js';
import { MessageEffects } from './message-effects.js';
import { MessagingCarrierEvents } from './messaging-carrier-events.js';
import { MessagesAudit } from './messages-audit.js';
import { MessagingInvariants } from './messaging-invariants.js';
import { MessagesController } from './messages.controller.js';
import { MessagesQuery } from './messages.query.js';
import { MessagesRetention } from './messages-retention.js';
import { MessagesService } from './messages.service.js';
import { OptOutKeywords } from './opt-out-keywords.js';
import { ReceiptsAndInbound } from './receipts-and-inbound.js';
import { SendOutcomes } from './send-outcomes.js';
import { MessagingSettings } from './messaging-settings.js';
import { MessagingSettingsController } from './messaging-settings.controller.js';
import { declareJobs } from '../../platform/outbox/job-definition.js';
import { DispatchMessageJob, DispatchReplyJob } from './messaging.jobs.js';
// The customer event types this module emits (webhooks delivers them, knowing none by name).
import './messaging.events.js';

/** SMS: send (with Idempotency-Key), dispatch to carriers, receipts, inbound. */
@Module({
  imports: [AccountsModule, BillingModule, CarriersModule, IdempotencyModule, IngestModule, NumbersModule, OutboxModule, RetentionModule, WebhooksModule],
  controllers: [MessagesController, MessagingSettingsController],
  providers: [MessagesService, MessagesQuery, DispatchClaims, SendOutcomes, ReceiptsAndInbound, MessageCancel, MessageEffects, MessagingCarrierEvents, declareJobs(DispatchMessageJob, DispatchReplyJob), DispatchMessageHandler, DispatchReplyHandler, MessagingInvariants, OptOutKeywords, MessagingSettings, MessagesAudit, MessagesRetention],
  exports: [MessagesAudit],
})
export class MessagingModule {}
