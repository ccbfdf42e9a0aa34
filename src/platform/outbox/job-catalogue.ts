import type { Lane } from '../database/connection-budget.js';

/**
 * Every queue and job in the system, with the payload each job carries. A job is handled by
 * exactly one @JobHandler provider; JobRegistry fails boot otherwise.
 */
export enum QueueName {
  System = 'system',
  /** Outbound message dispatch to carriers. */
  Messaging = 'messaging',
  /** Customer webhook deliveries: slow customer servers only ever hold up each other. */
  Webhooks = 'webhooks',
  /** Processing of ingested carrier webhooks. */
  CarrierEvents = 'carrier-events',
  /** Call-control commands and call timers: dead air waits behind nothing else. */
  Calls = 'calls',
  /** Number orders, polls and releases at the carriers. */
  Numbers = 'numbers',
}

export enum JobName {
  /** Diagnostics and benchmarks: records one probe_runs row per run. */
  Probe = 'probe',
  /** Sends one outbound message through its number's carrier (external: guards its own writes). */
  DispatchMessage = 'dispatch-message',
  /** One HTTP attempt of one customer webhook delivery (external: guards its own writes). */
  WebhookDeliveryAttempt = 'webhook-delivery-attempt',
  /** Fails an endpoint's deliveries parked longer than WEBHOOK_PARKED_RETENTION_DAYS. */
  WebhookParkedExpiry = 'webhook-parked-expiry',
  /** Runs one stored carrier event through the handler its owning module registered. */
  ProcessCarrierEvent = 'process-carrier-event',
  /** Sends call-control commands (dial, answer, bridge, hangup, ...) in order (external: at least once, each with its command id). */
  CallControlCommands = 'call-commands',
  /** A leg that answered but was not bridged within DIAL_JOIN_TIMEOUT_SECONDS is written off. */
  CallJoinTimeout = 'call-join-timeout',
  /** Assembles an ended call's transcript from its fragments; `call.transcribed` once. */
  CallTranscript = 'call-transcript',
  /** Places one number order at its carrier (external: the carrier's own idempotency makes a repeat buy nothing twice). */
  PlaceNumberOrder = 'place-number-order',
  /** Asks the carrier about an order still pending (Telnyx number_order.complete is late). */
  PollNumberOrder = 'poll-number-order',
  /** Releases one number at its carrier once no call is in progress on it (external). */
  ReleaseNumber = 'release-number',
}

export interface JobPayloads {
  [JobName.Probe]: { label?: string };
  [JobName.DispatchMessage]: { messageId: string };
  [JobName.WebhookDeliveryAttempt]: { deliveryId: string; round: number; attempt: number };
  [JobName.WebhookParkedExpiry]: { endpointId: string };
  [JobName.ProcessCarrierEvent]: { carrierEventId: string };
  /** `commands`: the Calls module's CallCommand list (platform does not know carrier types). */
  [JobName.CallControlCommands]: { callId: string | null; commands: object[] };
  [JobName.CallJoinTimeout]: { callId: string; legId: string };
  [JobName.CallTranscript]: { callId: string };
  [JobName.PlaceNumberOrder]: { orderId: string };
  /** `poll`: 1 for the first poll; the order is written off as failed after NUMBER_ORDER_MAX_POLLS. */
  [JobName.PollNumberOrder]: { orderId: string; poll: number };
  [JobName.ReleaseNumber]: { numberId: string };
}

export interface JobSpec {
  queue: QueueName;
  /**
   * realtime: what a caller hears or waits for (call events and commands, join timeouts, an
   * inbound event's processing); bulk: what can wait (customer webhooks, outbound dispatch,
   * transcripts, housekeeping). Each lane has its own after-commit places and its own database
   * connection budget (DATABASE_REALTIME_CONNECTIONS, DATABASE_BULK_CONNECTIONS), so bulk work
   * never holds up a ring plan.
   */
  lane: Lane;
  /**
   * Waits for its lane's connections ahead of the lane's other work: a caller hears it (call
   * commands, join timeouts). A run after commit may say otherwise (AfterCommitJob.urgent): the
   * job that processes a call's event also processes an inbound SMS, which is not urgent, but a
   * run from Redis cannot tell them apart before it reads the event.
   */
  urgent?: boolean;
  /**
   * transactional: the handler's writes and the job's completion commit together, so a job
   * redelivered by Redis runs its transaction once. external: the handler talks to the outside
   * world, is at least once, and must guard its own writes.
   */
  mode: 'transactional' | 'external';
  /** BullMQ attempts before the job is recorded failed in Postgres. */
  attempts: number;
  /** Base of the exponential backoff between attempts. */
  backoffMs: number;
  /**
   * May be run by the worker process whose autocommit statement created it, right after that
   * statement returned, instead of going through the relay and Redis (AfterCommitJobs); its row
   * is leased for WORKER_AFTER_COMMIT_GRACE_SECONDS (renewed while the run lasts) before the relay may hand it to Redis.
   */
  runsAfterCommit?: boolean;
}

export const JOB_SPECS: { [K in JobName]: JobSpec } = {
  [JobName.Probe]: { lane: 'bulk', queue: QueueName.System, mode: 'transactional', attempts: 5, backoffMs: 200 },
  // Carrier 408/429/5xx and transport errors retry with backoff (~4 min in all); then the message fails.
  [JobName.DispatchMessage]: { lane: 'bulk', queue: QueueName.Messaging, mode: 'external', attempts: 8, backoffMs: 1000 },
  // BullMQ retries only infrastructure errors here; the customer's retry schedule is one outbox job per attempt.
  // The first attempt of an event's deliveries runs in the worker that created them (one hop less).
  [JobName.WebhookDeliveryAttempt]: { lane: 'bulk', queue: QueueName.Webhooks, mode: 'external', attempts: 5, backoffMs: 1000, runsAfterCommit: true },
  [JobName.WebhookParkedExpiry]: { lane: 'bulk', queue: QueueName.Webhooks, mode: 'transactional', attempts: 5, backoffMs: 1000 },
  // BullMQ retries only infrastructure errors (database gone mid-run); an out-of-order event's
  // retries are new outbox jobs with run_at, bounded by CARRIER_EVENT_RETRY_DEADLINE_SECONDS.
  // A new event's processing runs in the process that stored it, when that one is also a worker (`all`).
  [JobName.ProcessCarrierEvent]: { lane: 'realtime', urgent: true, queue: QueueName.CarrierEvents, mode: 'transactional', attempts: 10, backoffMs: 1000, runsAfterCommit: true },
  // Carrier 5xx and transport errors repeat the same commands with the same command ids (~1 min in all).
  // Sent by the process whose transaction decided them, right after its commit (the outbox row is the backstop).
  [JobName.CallControlCommands]: { lane: 'realtime', urgent: true, queue: QueueName.Calls, mode: 'external', attempts: 8, backoffMs: 250, runsAfterCommit: true },
  [JobName.CallJoinTimeout]: { lane: 'realtime', urgent: true, queue: QueueName.Calls, mode: 'transactional', attempts: 10, backoffMs: 1000 },
  [JobName.CallTranscript]: { lane: 'bulk', queue: QueueName.Calls, mode: 'transactional', attempts: 10, backoffMs: 1000 },
  // Carrier 408/429/5xx and transport errors retry with backoff, then the order fails (nothing bought is lost: a repeat finds it).
  [JobName.PlaceNumberOrder]: { lane: 'bulk', queue: QueueName.Numbers, mode: 'external', attempts: 8, backoffMs: 1000 },
  [JobName.PollNumberOrder]: { lane: 'bulk', queue: QueueName.Numbers, mode: 'external', attempts: 8, backoffMs: 1000 },
  [JobName.ReleaseNumber]: { lane: 'bulk', queue: QueueName.Numbers, mode: 'external', attempts: 8, backoffMs: 1000 },
};

export function queueOf(name: JobName): QueueName {
  return JOB_SPECS[name].queue;
}

/** BullMQ rejects jobIds containing ':' or made only of digits. */
export const JOB_ID_PATTERN = /^(?!\d+$)[A-Za-z0-9_.-]{1,200}$/;
