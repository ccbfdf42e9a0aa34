import { Transform } from 'class-transformer';
import { IsInt, IsNumber, IsOptional, Max, Min, ValidateBy } from 'class-validator';
import { WebhookSettings } from './webhook-settings.js';
import { toNumber, toInt } from './setting-parsers.js';

/** How long our carrier client waits for a send's answer by default (CARRIER_SEND_TIMEOUT_MS; a dispatch lease must outlast it). */
export const CARRIER_SEND_TIMEOUT_MS = 10_000;

/**
 * Messages and calls at the carriers: how a send is leased, timed out and resolved when its
 * outcome is unknown, how fast a number sends, and how long a call's commands, joins and
 * transcripts wait.
 */
export class CarrierTrafficSettings extends WebhookSettings {
  /**
   * Dispatch: how long a run's claim on a message lasts. No other run calls the carrier for that
   * message before it ends (a stalled job's twin, a redrive), so it must outlast the carrier send
   * timeout; a run that died has its message sent again about this long after it claimed it.
   */
  @Transform(toInt) @Min(1) @Max(3600) @IsInt()
  @ValidateBy({
    name: 'outlastsTheSendTimeout',
    validator: {
      validate: (value, args) => typeof value === 'number' && value * 1000 > (args?.object as CarrierTrafficSettings).CARRIER_SEND_TIMEOUT_MS,
      defaultMessage: (args) => `must be longer than the carrier send timeout (CARRIER_SEND_TIMEOUT_MS = ${(args?.object as CarrierTrafficSettings).CARRIER_SEND_TIMEOUT_MS} ms)`,
    },
  })
  DISPATCH_LEASE_SECONDS = 60;

  /**
   * Retention of messages and their status history (docs/contract.md, *Retention of messages and
   * customer events*): a day's partition is dropped once it is older than this and none of its
   * messages is still queued, scheduled, sending or of unknown outcome. Fractional hours are for
   * compressed soaks (bench/), not production.
   */
  @Transform(toNumber) @Min(0.001) @IsNumber()
  MESSAGES_RETENTION_HOURS = 720;

  /**
   * Dispatch: how long a send waits for the carrier's answer. A send with no answer by then may
   * have reached the carrier: its outcome is unknown and is resolved (SEND_OUTCOME_WINDOW_SECONDS),
   * never simply sent again. Tests set it short rather than waiting 10 s.
   */
  @Transform(toInt) @Min(100) @Max(120_000) @IsInt()
  CARRIER_SEND_TIMEOUT_MS = CARRIER_SEND_TIMEOUT_MS;

  /**
   * Dispatch: how long a send whose outcome is unknown waits for the carrier to show it (its
   * status webhook naming our message, or its lookup finding it) before it is sent again. The
   * lookups run at each third of it; longer closes more of the window a late receipt leaves
   * (docs/exactly-once.md), shorter resends a message the carrier really never took sooner.
   */
  @Transform(toInt) @Min(1) @Max(86_400) @IsInt()
  SEND_OUTCOME_WINDOW_SECONDS = 60;

  /**
   * Calls: how long one call-control command waits for the carrier's answer. A command not
   * answered in time is asked again under the same command_id, at once and then with backoff
   * (the carrier does it once, and a repeat gets the first answer), so a slow carrier costs a
   * ring hand-off this much, not a 10 s send timeout, and is never taken for a refusal.
   */
  @Transform(toInt) @Min(50) @Max(CARRIER_SEND_TIMEOUT_MS) @IsInt()
  CALL_COMMAND_TIMEOUT_MS = 800;

  /**
   * Messaging: segments per second for every number that has no rate of its own, instead of the
   * carrier's default for its type (src/modules/numbers/send-rates.ts). Unset in production;
   * tests and benchmarks that send bursts from one number set it high.
   */
  @IsOptional() @Transform(toNumber)
  @IsNumber({ allowNaN: false, allowInfinity: false, maxDecimalPlaces: 2 }, { message: 'must be a number of segments per second, at most 2 decimals (0.5 is one message every 2 s)' })
  @Min(0.01) @Max(1000)
  MESSAGE_SEND_RATE_DEFAULT?: number;

  /** Calls: a leg that answered but is not bridged this long after is hung up, and the ring plan moves on. */
  @Transform(toInt) @Min(1) @Max(600) @IsInt()
  DIAL_JOIN_TIMEOUT_SECONDS = 30;

  /** Calls: how long after the hangup the transcript is assembled (late fragments still count). */
  @Transform(toInt) @Min(0) @Max(600000) @IsInt()
  CALL_TRANSCRIPT_SETTLE_MS = 2000;

  /**
   * Retention of the call history (calls, call_legs, call_timeline, call_transcript_fragments,
   * call_command_sends; docs/contract.md, *Retention*): a period's partitions are dropped once the
   * period is older than this and no call begun in it is still live. Fractional hours are for
   * compressed soaks.
   */
  @Transform(toNumber) @Min(0.001) @IsNumber()
  CALLS_RETENTION_HOURS = 2_160;

  /** The period of a new partition of the call history: 7 days (90 days kept in about 15 partitions, which the dedupe guards probe). */
  @Transform(toInt) @Min(1) @IsInt()
  CALLS_PARTITION_PERIOD_SECONDS = 604_800;
}
