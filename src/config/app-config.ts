import 'reflect-metadata';
import { plainToInstance, Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, validateSync } from 'class-validator';

const toInt = ({ value }: { value: unknown }) => (value === undefined || value === '' ? undefined : Number(value));
const URL_RE = /^[a-z][a-z0-9+.-]*:\/\/.+/i;
const SCHEDULE_RE = /^\d+(,\d+)*$/;

/**
 * Every environment variable the system reads, validated once at boot.
 * Nothing outside this file reads process.env: inject AppConfig instead.
 */
export class AppConfig {
  @Matches(/^postgres(ql)?:\/\/.+/, { message: 'must be a postgres:// URL' })
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/onceline';

  @Matches(/^rediss?:\/\/.+/, { message: 'must be a redis:// URL' })
  REDIS_URL = 'redis://127.0.0.1:6379';

  /** Key prefix for BullMQ; tests give each file its own so files can share one Redis. */
  @Matches(/^[A-Za-z0-9_-]+$/, { message: 'letters, digits, _ and - only' })
  QUEUE_PREFIX = 'onceline';

  @Transform(toInt) @Min(0) @Max(65535) @IsInt()
  PORT = 3000;

  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  PUBLIC_BASE_URL?: string;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  @IsOptional() @Matches(/^[A-Za-z0-9+/]{43}=$/, { message: 'must be the base64 of a raw 32-byte Ed25519 public key' })
  TELNYX_PUBLIC_KEY?: string;

  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  TELNYX_API_URL?: string;

  @IsOptional() @IsString()
  TELNYX_API_KEY?: string;

  @IsOptional() @IsString()
  TWILIO_ACCOUNT_SID?: string;

  @IsOptional() @IsString()
  TWILIO_AUTH_TOKEN?: string;

  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  TWILIO_API_URL?: string;

  @Transform(toInt) @Min(1) @Max(86400) @IsInt()
  WEBHOOK_TOLERANCE_SECONDS = 300;

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

  @Transform(toInt) @Min(0) @Max(65535) @IsInt()
  SANDBOX_PORT = 3100;

  /** Requests per minute allowed for one API key. */
  @Transform(toInt) @Min(1) @IsInt()
  API_RATE_LIMIT_PER_MINUTE = 600;

  /** Relay: rows claimed per transaction. */
  @Transform(toInt) @Min(1) @Max(10000) @IsInt()
  OUTBOX_BATCH_SIZE = 500;

  /** Relay: fallback poll interval when no NOTIFY arrives. */
  @Transform(toInt) @Min(10) @IsInt()
  OUTBOX_POLL_MS = 250;

  /** Recovery: a relayed job not shown done in Postgres after this long is handed to Redis again. */
  @Transform(toInt) @Min(1) @IsInt()
  OUTBOX_REDRIVE_AFTER_SECONDS = 60;

  /** Retention: finished outbox rows older than this are deleted. */
  @Transform(toInt) @Min(1) @IsInt()
  OUTBOX_RETENTION_HOURS = 72;

  /** Worker concurrency per queue. */
  @Transform(toInt) @Min(1) @Max(1000) @IsInt()
  WORKER_CONCURRENCY = 20;

  /** Carrier events: how long after ingest an out-of-order event keeps being retried before it fails. */
  @Transform(toInt) @Min(1) @IsInt()
  CARRIER_EVENT_RETRY_DEADLINE_SECONDS = 3600;

  /** Carrier events: first retry delay of an out-of-order event (doubles each time, with jitter). */
  @Transform(toInt) @Min(1) @IsInt()
  CARRIER_EVENT_RETRY_BASE_MS = 1000;

  /** Carrier events: the longest wait between two retries. */
  @Transform(toInt) @Min(1) @IsInt()
  CARRIER_EVENT_RETRY_MAX_DELAY_SECONDS = 300;

  get publicBaseUrl(): string {
    return this.PUBLIC_BASE_URL ?? `http://127.0.0.1:${this.PORT}`;
  }

  get webhookRetryScheduleSeconds(): number[] {
    return this.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number);
  }
}

export class ConfigError extends Error {}

/** Validates an environment into AppConfig; throws ConfigError naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined>): AppConfig {
  const known = Object.keys(new AppConfig());
  const input: Record<string, string> = {};
  for (const key of known) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const config = plainToInstance(AppConfig, input);
  const errors = validateSync(config, { skipMissingProperties: false, stopAtFirstError: true });
  if (errors.length > 0) {
    const lines = errors.map((e) => {
      const raw = env[e.property];
      const why = Object.values(e.constraints ?? {}).join('; ');
      return `${e.property}=${JSON.stringify(raw ?? '')}: ${why}`;
    });
    throw new ConfigError(`Invalid configuration: ${lines.join(', ')}`);
  }
  return config;
}
