import { Transform } from 'class-transformer';
import { IsInt, IsNumber, IsOptional, IsString, Matches, Max, Min, ValidateBy } from 'class-validator';
import { CarrierSettings } from './carrier-settings.js';
import { toInt, toNumber, SCHEDULE_RE } from './setting-parsers.js';

/** Customer webhooks: how their deliveries are retried, bounded, parked and given up on. */
export class WebhookSettings extends CarrierSettings {
  @Matches(SCHEDULE_RE, { message: 'must be comma-separated whole seconds, e.g. 0,5,300' })
  WEBHOOK_RETRY_SCHEDULE = '0,5,300,1800,7200,18000,36000,50400,72000';

  @Transform(toInt) @Min(1) @IsInt()
  WEBHOOK_DISABLE_AFTER_FAILURES = 100;

  @IsOptional() @IsString()
  WEBHOOK_ALLOWED_CIDRS = '';

  /** Customer webhooks: how long deliveries of a disabled endpoint stay parked before they fail. */
  @Transform(toInt) @Min(1) @IsInt()
  WEBHOOK_PARKED_RETENTION_DAYS = 7;

  /**
   * Retention of customer events (outbound_events: GET /v2/events, redeliver's source;
   * docs/contract.md, *Retention of messages and customer events*): a day's partition is dropped
   * once it is older than this and none of its events still has a delivery pending or parked.
   */
  @Transform(toNumber) @Min(0.001) @IsNumber()
  CUSTOMER_EVENTS_RETENTION_HOURS = 720;

  /**
   * Retention of webhook deliveries and their attempts (GET /v2/webhook_endpoints/:id/deliveries):
   * a day's partition (by its event's day) is dropped once it is older than this and none of its
   * deliveries is pending or parked. No longer than the events' (a delivery's listing joins its event).
   */
  @Transform(toNumber) @Min(0.001) @IsNumber()
  @ValidateBy({
    name: 'notLongerThanItsEvents',
    validator: {
      validate: (value, args) => typeof value === 'number' && value <= (args?.object as WebhookSettings).CUSTOMER_EVENTS_RETENTION_HOURS,
      defaultMessage: (args) => `must not be longer than the events' retention (CUSTOMER_EVENTS_RETENTION_HOURS = ${(args?.object as WebhookSettings).CUSTOMER_EVENTS_RETENTION_HOURS})`,
    },
  })
  WEBHOOK_DELIVERIES_RETENTION_HOURS = 720;

  /** Customer webhooks: one attempt's whole budget (connect, send, read the response). */
  @Transform(toInt) @Min(100) @Max(120000) @IsInt()
  WEBHOOK_TIMEOUT_MS = 15000;

  get webhookRetryScheduleSeconds(): number[] {
    return this.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number);
  }
}
