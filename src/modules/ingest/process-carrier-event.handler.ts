import { Injectable } from '@nestjs/common';
import type { Tx } from '../../platform/database/tx.js';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { ProcessCarrierEventJob } from './ingest.jobs.js';
import { HandlesJob, type JobContext, type JobHandler, type RunOutcome } from '../../platform/outbox/job-handler.js';
import { CarrierEventProcessor, type CallLock } from './carrier-event-processor.js';
import type { StoredCarrierEvent } from './carrier-event-handlers.js';
import { OneStatementRuns } from './one-statement-runs.js';

/** Worker side of ingest: the event's processing commits with the job's completion. */
@Injectable()
@HandlesJob(ProcessCarrierEventJob)
export class ProcessCarrierEventHandler implements JobHandler<typeof ProcessCarrierEventJob> {
  constructor(
    private readonly processor: CarrierEventProcessor,
    private readonly oneStatement: OneStatementRuns,
  ) {}

  /**
   * Inbound SMS, receipts and ignored events: the job in one statement (OneStatementRuns). Run
   * right after ingest stored the event, it comes prefetched (StoredCarrierEvent).
   */
  runInOneStatement(jobId: string, context?: JobContext): Promise<RunOutcome | undefined> {
    return this.oneStatement.run(jobId, context?.prefetched as StoredCarrierEvent | undefined);
  }

  /**
   * The call's lock (CarrierEventProcessor.lockCallSql) is taken by the job's claim, in the same
   * statement: one round trip less. The claim writes only the job's row, and the lock reads of
   * the event only whether it is a call's and processed yet (processed_at, once set, stays set:
   * `processed` is for good, and the run ends there; a stale "not yet" only takes a lock for
   * nothing); the event and the call's earlier events are read after the lock is held, by
   * lockEvent's own statement.
   */
  withClaim(data: string): string {
    return this.processor.lockCallSql(`(${data}->>'carrierEventId')`);
  }

  async handle(data: PayloadOf<typeof ProcessCarrierEventJob>, { tx, claimed }: JobContext): Promise<void> {
    await this.processor.process(tx!, data.carrierEventId, { callLock: claimed as CallLock | null });
  }

  /** Infrastructure errors outlasted every attempt: the event joins the failed list, replayable. */
  async onFinalFailure(data: PayloadOf<typeof ProcessCarrierEventJob>, error: string, tx: Tx): Promise<void> {
    await this.processor.recordJobGaveUp(tx, data.carrierEventId, error);
  }
}
