import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AfterCommitJobs } from './after-commit-jobs.js';
import { Housekeeping } from './housekeeping.js';
import { JobRegistry } from './job-registry.js';
import { JobRunner } from './job-runner.js';
import { JobWorkers } from './job-workers.js';
import { OutboxInvariants } from './outbox-invariants.js';
import { OutboxMetrics } from './outbox-metrics.js';
import { OutboxRelay } from './outbox-relay.js';
import { OutboxService } from './outbox.service.js';
import { declareJobs } from './job-definition.js';
import { ProbeHandler, ProbeJob } from './probe.handler.js';
import { Queues } from './queues.js';
import { RelayWakeup } from './relay-wakeup.js';
import { RetentionModule } from '../retention/retention.module.js';
import { OutboxRetention } from './outbox-retention.js';

/** The transactional outbox: enqueue in a transaction, relay to BullMQ, run, recover. */
@Module({
  imports: [DiscoveryModule, RetentionModule],
  providers: [Housekeeping, RelayWakeup, OutboxService, OutboxRelay, OutboxMetrics, Queues, JobRegistry, JobRunner, JobWorkers, AfterCommitJobs, declareJobs(ProbeJob), ProbeHandler, OutboxInvariants, OutboxRetention],
  exports: [Housekeeping, OutboxService, OutboxRelay, JobWorkers, AfterCommitJobs, Queues, JobRegistry],
})
export class OutboxModule {}
