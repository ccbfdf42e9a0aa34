import 'reflect-metadata';
import { plainToInstance, Transform } from 'class-transformer';
import { IsInt, IsNumber, Max, Min, validateSync } from 'class-validator';
import { IngestSettings } from './ingest-settings.js';
import { toInt, toNumber } from './setting-parsers.js';

export { CARRIER_SEND_TIMEOUT_MS } from './carrier-traffic-settings.js';

/**
 * Every environment variable the system reads, validated once at boot. Nothing outside
 * src/platform/config/ reads process.env: inject AppConfig instead.
 *
 * Declared by concern, one class per file, each extending the one before (class-validator and
 * class-transformer read a class's decorators together with its parents', so AppConfig, the
 * last, validates and exposes them all, as one class, to everything that injects it):
 * ServerSettings (the process, its connections, relay and workers) → CarrierSettings (carrier
 * APIs and credentials) → WebhookSettings (customer webhooks) → CarrierTrafficSettings (sends
 * and calls) → IngestSettings (carrier events in) → AppConfig (prices, number orders and releases).
 */
export class AppConfig extends IngestSettings {
  /** Price of one outbound SMS segment, in micro-units of USD. */
  @Transform(toInt) @Min(0) @IsInt()
  PRICE_SMS_OUTBOUND_SEGMENT_MICROS = 4000;

  /** Price of one inbound SMS segment, in micro-units of USD. */
  @Transform(toInt) @Min(0) @IsInt()
  PRICE_SMS_INBOUND_SEGMENT_MICROS = 4000;

  /** Price of one billable call minute (rounded up), in micro-units of USD. */
  @Transform(toInt) @Min(0) @IsInt()
  PRICE_CALL_MINUTE_MICROS = 7000;

  /** Monthly rental of one number, in micro-units of USD: one usage row per number per calendar month, not prorated. */
  @Transform(toInt) @Min(0) @IsInt()
  PRICE_NUMBER_MONTH_MICROS = 1_000_000;

  /**
   * Retention of usage_records, the billing ledger (docs/contract.md, *Retention*): a partition is
   * dropped once its whole period is older than this AND recorded exports (`onceline
   * usage:export`) whose row counts still match cover that period; never on age alone.
   */
  @Transform(toNumber) @Min(0.001) @IsNumber()
  USAGE_RETENTION_HOURS = 9_600;

  /** The period of a new usage_records partition: 30 days (the ledger is kept long; few partitions keep its dedupe guard cheap). */
  @Transform(toInt) @Min(1) @IsInt()
  USAGE_PARTITION_PERIOD_SECONDS = 2_592_000;

  /** Seconds between polls of a carrier order still pending (Telnyx number_order.complete late). */
  @Transform(toInt) @Min(1) @Max(86400) @IsInt()
  NUMBER_ORDER_POLL_SECONDS = 60;

  /** Polls of a pending order before it is written off as failed. */
  @Transform(toInt) @Min(1) @Max(10000) @IsInt()
  NUMBER_ORDER_MAX_POLLS = 1440;

  /** Seconds between checks whether a releasing number's call has ended. */
  @Transform(toInt) @Min(1) @Max(3600) @IsInt()
  NUMBER_RELEASE_RECHECK_SECONDS = 10;
}

export class ConfigError extends Error {}

/** A bad value as the error shows it: start-up errors reach logs, so secrets and URL passwords are masked. */
function shown(key: string, raw: string | undefined): string {
  if (raw === undefined) return '""';
  if (/(?<!PUBLIC_)KEY|TOKEN|SECRET|PASSWORD|SEED/.test(key)) return '"[redacted]"';
  return JSON.stringify(raw.replace(/(\/\/[^:/@]*:)[^@/]*@/, '$1***@'));
}

/** Validates an environment into AppConfig; throws ConfigError naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const known = Object.keys(new AppConfig());
  const input: Record<string, string> = {};
  for (const key of known) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const config = plainToInstance(AppConfig, input);
  const errors = validateSync(config, { skipMissingProperties: false, stopAtFirstError: true });
  if (errors.length > 0) {
    // In the order the settings are declared (class-validator lists a class's own before its parents').
    errors.sort((a, b) => known.indexOf(a.property) - known.indexOf(b.property));
    const lines = errors.map((e) => {
      const why = Object.values(e.constraints ?? {}).join('; ');
      return `${e.property}=${shown(e.property, env[e.property])}: ${why}`;
    });
    throw new ConfigError(`Invalid configuration: ${lines.join(', ')}`);
  }
  return config;
}
