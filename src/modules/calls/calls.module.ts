import { Module } from '@nestjs/common';
import { CarriersModule } from '../../carriers/carriers.module.js';
import { IdempotencyModule } from '../../platform/idempotency/idempotency.module.js';
import { OutboxModule } from '../../platform/outbox/outbox.module.js';
import { RetentionModule } from '../../platform/retention/retention.module.js';
import { AccountsModule } from '../accounts/accounts.module.js';
import { BillingModule } from '../billing/billing.module.js';
import { IngestModule } from '../ingest/ingest.module.js';
import { NumbersModule } from '../numbers/numbers.module.js';
import { SequentialRingModule } from '../sequential-ring/sequential-ring.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { CallCarrierEvents } from './call-carrier-events.js';
import { CallEventSets } from './call-event-sets.js';
import { CallStartsInSets } from './call-starts-in-sets.js';
import { CallEndsInSets } from './call-ends-in-sets.js';
import { CallControlCommands } from './call-control-commands.js';
import { CallCommandCompletions } from './call-command-completions.js';
import { CallCommandSends } from './call-command-sends.js';
import { CallControlCommandsHandler } from './call-control-commands.handler.js';
import { CallFlow } from './call-flow.js';
import { IncomingCalls } from './incoming-calls.js';
import { CallReplies } from './call-replies.js';
import { CallJoinTimeoutHandler, CallTranscriptHandler } from './call-timers.handlers.js';
import { CallTimeline } from './call-timeline.js';
import { CallTransitions } from './call-transitions.js';
import { CallsController } from './calls.controller.js';
import { CallsInvariants } from './calls-invariants.js';
import { CallsAudit } from './calls-audit.js';
import { CallsQuery } from './calls.query.js';
import { CallsService } from './calls.service.js';
import { CallsRetention } from './calls-retention.js';
import { VoiceWebhooksController } from './voice-webhooks.controller.js';
import { declareJobs } from '../../platform/outbox/job-definition.js';
import { CallControlCommandsJob, CallJoinTimeoutJob, CallTranscriptJob } from './calls.jobs.js';
// The customer event types this module emits (webhooks delivers them, knowing none by name).
import './calls.events.js';

/**
 * Calls: call rows and legs, the hangup guard and the minutes it bills, the ring cursor's
 * compare-and-set (the plan's policy is SequentialRing's), call-control commands through the
 * outbox (or, for Twilio Voice, TwiML answered in the request), voicemail, transcripts, the
 * timeline, `POST /v2/calls`.
 */
@Module({
  imports: [AccountsModule, BillingModule, CarriersModule, IdempotencyModule, IngestModule, NumbersModule, OutboxModule, RetentionModule, SequentialRingModule, WebhooksModule],
  controllers: [CallsController, VoiceWebhooksController],
  providers: [
    CallCarrierEvents, CallEventSets, CallStartsInSets, CallEndsInSets, CallControlCommands, CallCommandSends, CallCommandCompletions, declareJobs(CallControlCommandsJob, CallJoinTimeoutJob, CallTranscriptJob), CallControlCommandsHandler, CallFlow, CallJoinTimeoutHandler, CallTranscriptHandler, CallTimeline, CallTransitions, CallsQuery, CallsService,
    CallReplies, IncomingCalls, CallsInvariants, CallsAudit, CallsRetention,
  ],
  exports: [CallsQuery, CallsAudit],
})
export class CallsModule {}
