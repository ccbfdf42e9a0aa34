import { defineJob } from '../../platform/outbox/job-definition.js';

/**
 * Runs one stored carrier event through the handler its owning module registered.
 * BullMQ retries only infrastructure errors (database gone mid-run); an out-of-order event's
 * retries are new outbox jobs with run_at, bounded by CARRIER_EVENT_RETRY_DEADLINE_SECONDS.
 * A new event's processing runs in the process that stored it, when that one is also a worker (`all`).
 */
export const ProcessCarrierEventJob = defineJob<{ carrierEventId: string }>({ name: 'process-carrier-event', queue: 'carrier-events', lane: 'realtime', urgency: 'soon', mode: 'transactional', attempts: 10, backoffMs: 1000, runsAfterCommit: true });
