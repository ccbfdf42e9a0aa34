import { Transform } from 'class-transformer';
import { IsInt, IsNumber, Max, Min } from 'class-validator';
import { CarrierTrafficSettings } from './carrier-traffic-settings.js';
import { toInt, toNumber } from './setting-parsers.js';

/**
 * Carrier events in: how many webhooks one process stores and verifies at once, how an
 * out-of-order event is retried, and how long the stored events (the dedupe record) are kept.
 */
export class IngestSettings extends CarrierTrafficSettings {
  /** Carrier events: how long after ingest an out-of-order event keeps being retried before it fails. */
  @Transform(toInt) @Min(1) @IsInt()
  CARRIER_EVENT_RETRY_DEADLINE_SECONDS = 3600;

  /** Carrier events: first retry delay of an out-of-order event (doubles each time, with jitter). */
  @Transform(toInt) @Min(1) @IsInt()
  CARRIER_EVENT_RETRY_BASE_MS = 1000;

  /** Carrier events: the longest wait between two retries. */
  @Transform(toInt) @Min(1) @IsInt()
  CARRIER_EVENT_RETRY_MAX_DELAY_SECONDS = 300;

  /**
   * Retention of carrier_events, the dedupe record (docs/contract.md, *Retention*): a partition
   * is dropped once its whole period is older than this and none of its events is unprocessed.
   * At least the longest retry horizon a carrier or Stripe documents (Stripe: up to three days).
   * Fractional hours are for compressed soaks (bench/), not production.
   */
  @Transform(toNumber) @Min(0.001) @IsNumber()
  CARRIER_EVENTS_RETENTION_HOURS = 96;

  /** Ingest: most webhooks stored by one transaction (concurrent deliveries share a commit). */
  @Transform(toInt) @Min(1) @Max(5000) @IsInt()
  INGEST_BATCH_MAX = 256;

  /** Ingest: most batch transactions running at once, per process, for calls' events and for the rest each (batched apart). */
  @Transform(toInt) @Min(1) @Max(64) @IsInt()
  INGEST_BATCH_CONCURRENCY = 2;

  /**
   * Ingest: most carrier deliveries one process verifies and stores at once. One more is answered
   * 503 + Retry-After at once, before any work on it: the carrier sends it again, where an
   * unbounded queue would make every delivery wait (and time out at the carrier, which then
   * retries them all). 0: no bound.
   */
  @Transform(toInt) @Min(0) @IsInt()
  INGEST_PENDING_MAX = 2048;

  /**
   * Ingest: runs of the realtime lane waiting for a database connection in this process past
   * which a new carrier delivery is answered 503 + Retry-After before any work on it (backpressure:
   * the carrier sends it again once the lane has caught up).
   */
  @Transform(toInt) @Min(0) @IsInt()
  INGEST_LANE_BACKLOG_MAX = 256;

  /** Ingest: worker threads that verify Ed25519 signatures off the event loop (0: verify inline). */
  @Transform(toInt) @Min(0) @Max(16) @IsInt()
  INGEST_VERIFY_THREADS = 1;
}
