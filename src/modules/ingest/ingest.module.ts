import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { CarriersModule } from '../../carriers/carriers.module.js';
import { OutboxModule } from '../../platform/outbox/outbox.module.js';
import { AnsweredCarrierEvents } from './answered-carrier-events.js';
import { CarrierEventHandlers } from './carrier-event-handlers.js';
import { CarrierEventProcessor } from './carrier-event-processor.js';
import { OneStatementRuns } from './one-statement-runs.js';
import { OneStatementBatches } from './one-statement-batches.js';
import { CarrierEventWriter } from './carrier-event-writer.js';
import { CarrierEventsService } from './carrier-events.service.js';
import { IngestController } from './ingest.controller.js';
import { IngestInvariants } from './ingest-invariants.js';
import { IngestMetrics } from './ingest-metrics.js';
import { IngestService } from './ingest.service.js';
import { ProcessCarrierEventHandler } from './process-carrier-event.handler.js';
import { declareJobs } from '../../platform/outbox/job-definition.js';
import { ProcessCarrierEventJob } from './ingest.jobs.js';
import { RetentionModule } from '../../platform/retention/retention.module.js';
import { CarrierEventsRetention } from './carrier-events-retention.js';

/**
 * Carrier webhooks in, normalized events out to the method that declared their kind with
 * @HandlesCarrierEvent (a module imports this one for the decorator and RetryLaterError).
 */
@Module({
  imports: [CarriersModule, DiscoveryModule, OutboxModule, RetentionModule],
  controllers: [IngestController],
  providers: [IngestService, AnsweredCarrierEvents, CarrierEventWriter, IngestMetrics, CarrierEventHandlers, CarrierEventProcessor, OneStatementRuns, OneStatementBatches, CarrierEventsService, declareJobs(ProcessCarrierEventJob), ProcessCarrierEventHandler, IngestInvariants, CarrierEventsRetention],
  exports: [CarrierEventHandlers, CarrierEventsService, IngestService],
})
export class IngestModule {}
