import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { ProcessCarrierEventJob } from './ingest.jobs.js';
import { UNFINISHED_JOBS_AUDIT_VIEW } from '../../platform/outbox/outbox-invariants.js';
import { Invariants, violations } from '../../platform/verify/invariants.js';

/**
 * Stored carrier events as other modules' invariants may read them; `normalized` is the
 * NormalizedEvent (src/ingest/normalized-event.ts), never carrier vocabulary.
 */
export const CARRIER_EVENTS_AUDIT_VIEW = `SELECT id, carrier, kind, normalized, processed_at, error, created_at FROM carrier_events`;

/** Ingest's promise: every stored carrier event is acted on, or is still being retried. */
@Injectable()
export class IngestInvariants implements OnModuleInit {
  constructor(
    private readonly invariants: Invariants,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const deadline = this.config.CARRIER_EVENT_RETRY_DEADLINE_SECONDS;
    this.invariants.register(
      'ingest.events_processed_by_deadline',
      `no carrier event is unprocessed, with no job retrying it, more than ${deadline} s after ingest (carrier event ids)`,
      (snapshot, limit) =>
        violations(
          snapshot,
          // Unprocessed past the retry deadline (failed ones included: someone must replay them)
          // and no unfinished processing job left that could still process it.
          `SELECT e.id FROM carrier_events e
            WHERE e.processed_at IS NULL
              AND e.created_at < now() - make_interval(secs => $1)
              -- waiting for a handler to ship is not late: carrier-events:list --unhandled shows it
              AND e.unhandled_since IS NULL
              AND NOT EXISTS (SELECT 1 FROM (${UNFINISHED_JOBS_AUDIT_VIEW}) j
                               WHERE j.name = $2 AND j.data->>'carrierEventId' = e.id)`,
          [deadline, ProcessCarrierEventJob.name],
          limit,
        ),
    );
  }
}
