import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { CarrierSettings } from './carrier-settings.js';
import { toInt, SCHEDULE_RE } from './setting-parsers.js';

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

  /** Customer webhooks: one attempt's whole budget (connect, send, read the response). */
  @Transform(toInt) @Min(100) @Max(120000) @IsInt()
  WEBHOOK_TIMEOUT_MS = 15000;

  get webhookRetryScheduleSeconds(): number[] {
    return this.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number);
  }
}
