import 'reflect-metadata';
import { plainToInstance, Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsNumber, IsOptional, IsString, Matches, Max, Min, validateSync, ValidateBy } from 'class-validator';
import { isLoopbackUrl } from '../net/loopback.js';
import {
  DEV_STRIPE_WEBHOOK_SECRET, DEV_TELNYX_API_KEY, DEV_TELNYX_CONNECTION_ID, DEV_TWILIO_ACCOUNT_SID, DEV_TWILIO_AUTH_TOKEN,
  DEV_VONAGE_API_KEY, DEV_VONAGE_API_SECRET, DEV_VONAGE_SIGNATURE_SECRET, DEV_TELNYX_MESSAGING_PROFILE_ID, DEV_VONAGE_APPLICATION_ID,
} from '../../telephony/dev-credentials.js';
import { DEFAULT_SANDBOX_TELNYX_SEED, telnyxDevKeyPair } from '../../telephony/telnyx-dev-key.js';

/** A number ('' and unset: undefined); IsInt or IsNumber beside it says which numbers a setting takes. */
const toNumber = ({ value }: { value: unknown }) => (value === undefined || value === '' ? undefined : Number(value));
const toInt = toNumber;
/** 'true' / 'false'; anything else is left as it is, for IsBoolean to refuse by name. */
const toBoolean = ({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value === '' ? undefined : value);
const URL_RE = /^[a-z][a-z0-9+.-]*:\/\/.+/i;
const SCHEDULE_RE = /^\d+(,\d+)*$/;
/** How long our carrier client waits for a send's answer by default (CARRIER_SEND_TIMEOUT_MS; a dispatch lease must outlast it). */
export const CARRIER_SEND_TIMEOUT_MS = 10_000;

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

  /**
   * The address the HTTP server listens on: this machine only unless set (the Docker image and
   * docker-compose set 0.0.0.0). Development credentials are accepted from loopback peers only,
   * whatever this says.
   */
  @Matches(/^[A-Za-z0-9.:_-]+$/, { message: 'must be an IP address or a host name' })
  HOST = '127.0.0.1';

  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  PUBLIC_BASE_URL?: string;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  @IsOptional() @Matches(/^[A-Za-z0-9+/]{43}=$/, { message: 'must be the base64 of a raw 32-byte Ed25519 public key' })
  TELNYX_PUBLIC_KEY?: string;

  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  TELNYX_API_URL?: string;

  @IsOptional() @IsString()
  TELNYX_API_KEY = DEV_TELNYX_API_KEY;

  /** The Call Control application id sent as `connection_id` on every dial. */
  @IsOptional() @IsString()
  TELNYX_CONNECTION_ID = DEV_TELNYX_CONNECTION_ID;

  /** The Messaging Profile numbers we order are put on (their messaging webhooks come to us). */
  @IsOptional() @IsString()
  TELNYX_MESSAGING_PROFILE_ID = DEV_TELNYX_MESSAGING_PROFILE_ID;

  @IsOptional() @IsString()
  TWILIO_ACCOUNT_SID = DEV_TWILIO_ACCOUNT_SID;

  /** Sends always use it as set (a wrong one only gets our request refused); webhooks: see twilioWebhookAuthToken. */
  @IsOptional() @IsString()
  TWILIO_AUTH_TOKEN = DEV_TWILIO_AUTH_TOKEN;

  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  TWILIO_API_URL?: string;

  /** The HS256 secret Vonage signs webhooks with; webhooks: see vonageSignatureSecret. */
  @IsOptional() @IsString()
  VONAGE_SIGNATURE_SECRET = DEV_VONAGE_SIGNATURE_SECRET;

  /** Vonage API base without a path (production https://api.nexmo.com); we call $VONAGE_API_URL/v1/messages. */
  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  VONAGE_API_URL?: string;

  @IsOptional() @IsString()
  VONAGE_API_KEY = DEV_VONAGE_API_KEY;

  @IsOptional() @IsString()
  VONAGE_API_SECRET = DEV_VONAGE_API_SECRET;

  /** Vonage's Numbers API base (production https://rest.nexmo.com); VONAGE_API_URL (the sandbox) unless set. */
  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  VONAGE_NUMBERS_API_URL?: string;

  /** The Vonage application numbers we buy are linked to (its inbound and status URLs are ours). */
  @IsOptional() @IsString()
  VONAGE_APPLICATION_ID = DEV_VONAGE_APPLICATION_ID;
  /** Stripe webhook signing secret (`Stripe-Signature`); see stripeWebhookSecret for the development value. */
  @IsOptional() @Matches(/^whsec_[A-Za-z0-9+/=_-]+$/, { message: 'must be a Stripe webhook signing secret (whsec_...)' })
  STRIPE_WEBHOOK_SECRET = DEV_STRIPE_WEBHOOK_SECRET;

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

  /**
   * Seed phrase of the sandbox's Telnyx signing key pair: the app derives the matching public key
   * (see telnyxPublicKey). The sandbox's other settings are its own (src/sandbox/sandbox-config.ts).
   */
  @IsString()
  SANDBOX_TELNYX_SEED = DEFAULT_SANDBOX_TELNYX_SEED;

  /** Requests per minute allowed for one API key. */
  @Transform(toInt) @Min(1) @IsInt()
  API_RATE_LIMIT_PER_MINUTE = 600;

  /**
   * Failed API-key authentications (a presented key that is unknown or revoked) allowed per client
   * address per minute; past it, a wrong key is answered 429 + Retry-After instead of 401. A valid
   * key is never refused for its address's failures (one address cannot lock out a real key).
   */
  @Transform(toInt) @Min(1) @IsInt()
  API_AUTH_FAILURES_PER_MINUTE = 10;

  /**
   * Hot-path statements as named prepared statements (src/platform/database/statements.ts); false
   * behind a pooler that cannot keep them, such as PgBouncer in transaction mode before 1.21.
   */
  @Transform(toBoolean) @IsBoolean()
  DATABASE_PREPARED_STATEMENTS = true;

  /** Database connections one process keeps at most (one pool: the lanes' budgets and the reserve below share it). */
  @Transform(toInt) @Min(3) @Max(1000) @IsInt()
  DATABASE_POOL_SIZE = 20;

  /**
   * Connections the realtime lane (call events and commands, join timeouts, inbound events'
   * processing) may hold at once; its runs wait in memory for one. The pool's other connections
   * beyond both lanes' budgets are reserved for the customer API, ingest and the relay.
   */
  @Transform(toInt) @Min(1) @IsInt()
  @ValidateBy({
    name: 'leavesAReserve',
    validator: {
      validate: (value, args) => {
        const config = args?.object as AppConfig;
        return typeof value === 'number' && value + config.DATABASE_BULK_CONNECTIONS <= config.DATABASE_POOL_SIZE - 2;
      },
      defaultMessage: () => 'with DATABASE_BULK_CONNECTIONS must leave at least 2 of DATABASE_POOL_SIZE for the API and ingest',
    },
  })
  DATABASE_REALTIME_CONNECTIONS = 8;

  /** Connections the bulk lane (customer webhook deliveries, outbound dispatch, transcripts, housekeeping) may hold at once. */
  @Transform(toInt) @Min(1) @IsInt()
  DATABASE_BULK_CONNECTIONS = 6;

  /** Relay: rows claimed per transaction. */
  @Transform(toInt) @Min(1) @Max(10000) @IsInt()
  OUTBOX_BATCH_SIZE = 500;

  /** Relay: fallback poll interval when no NOTIFY arrives. */
  @Transform(toInt) @Min(10) @IsInt()
  OUTBOX_POLL_MS = 250;

  /** Recovery: a relayed job not shown done in Postgres after this long is handed to Redis again. */
  @Transform(toInt) @Min(1) @IsInt()
  OUTBOX_REDRIVE_AFTER_SECONDS = 60;

  /**
   * Retention of outbox_jobs: a day's partition is dropped once it is older than this and none of
   * its jobs is without an outcome (migration 0043; no rows are deleted). Fractional hours are
   * for compressed soaks, not production.
   */
  @Transform(toNumber) @Min(0.001) @IsNumber()
  OUTBOX_RETENTION_HOURS = 72;

  /**
   * Retention of carrier_events, the dedupe record (docs/contract.md, *Retention*): a partition
   * is dropped once its whole period is older than this and none of its events is unprocessed.
   * At least the longest retry horizon a carrier or Stripe documents (Stripe: up to three days).
   * Fractional hours are for compressed soaks (bench/), not production.
   */
  @Transform(toNumber) @Min(0.001) @IsNumber()
  CARRIER_EVENTS_RETENTION_HOURS = 96;

  /** The period of a new time partition (carrier_events, outbox_jobs): a day, chosen by bench/partition-period.mjs (docs/retention.md). */
  @Transform(toInt) @Min(1) @IsInt()
  PARTITION_PERIOD_SECONDS = 86_400;

  /** Partitions the relay's maintenance keeps made ahead of the current one (an insert with no partition for its time fails). */
  @Transform(toInt) @Min(1) @Max(1000) @IsInt()
  PARTITIONS_AHEAD = 2;

  /**
   * How long a worker's hold on a job lasts without renewal (BullMQ renews it every half); a
   * worker killed mid-job has its job handed to another within about 1.5 times this long
   * (BullMQ's stalled-job check runs every half of it).
   */
  @Transform(toInt) @Min(1000) @IsInt()
  WORKER_LOCK_DURATION_MS = 6000;

  /** Worker concurrency per queue. */
  @Transform(toInt) @Min(1) @Max(1000) @IsInt()
  WORKER_CONCURRENCY = 20;

  /**
   * Jobs a worker process may run at once right after the statement that created them (a new
   * event's processing in the `all` process that stored it, a new event's first webhook attempts:
   * see AfterCommitJobs), beside WORKER_CONCURRENCY; beyond it, new jobs go through the relay and
   * Redis to any worker; 0 sends every job that way. A place is a small object (and, for a first
   * webhook attempt, its prefetched delivery) held until the run ends; the path through the relay
   * and Redis costs more CPU per job, so a bound that sends jobs there while this process still
   * keeps up slows everything (docs/benchmarks-method.md, "How many jobs run after commit").
   */
  @Transform(toInt) @Min(0) @Max(1000) @IsInt()
  WORKER_AFTER_COMMIT_JOBS = 512;

  /**
   * The realtime lane's own after-commit places (call events' processing, call commands, an
   * inbound event's processing), apart from WORKER_AFTER_COMMIT_JOBS, which then bounds the bulk
   * lane (customer webhook first attempts): a slow customer endpoint that fills those never sends
   * a ring plan's next step through the relay. 0 sends every realtime job through the relay.
   */
  @Transform(toInt) @Min(0) @Max(1000) @IsInt()
  WORKER_REALTIME_AFTER_COMMIT_JOBS = 512;

  /**
   * The lease on the outbox row of a job run after commit: the row is written due this far ahead,
   * and the process running it pushes that forward every third of it while the run lasts
   * (AfterCommitJobs), so a run that outlasts it (a slow customer endpoint) is never taken twice,
   * and the rows of a process that died (SIGKILL) are due for the relay, and so for any worker,
   * within this long. 6 s: a dead process's work resumes within 10 s (the relay's pass included;
   * npm run bench:sigkill), at one renewal statement every 2 s per process.
   */
  @Transform(toInt) @Min(1) @Max(3600) @IsInt()
  WORKER_AFTER_COMMIT_GRACE_SECONDS = 6;

  /**
   * Dispatch: how long a run's claim on a message lasts. No other run calls the carrier for that
   * message before it ends (a stalled job's twin, a redrive), so it must outlast the carrier send
   * timeout; a run that died has its message sent again about this long after it claimed it.
   */
  @Transform(toInt) @Min(1) @Max(3600) @IsInt()
  @ValidateBy({
    name: 'outlastsTheSendTimeout',
    validator: {
      validate: (value, args) => typeof value === 'number' && value * 1000 > (args?.object as AppConfig).CARRIER_SEND_TIMEOUT_MS,
      defaultMessage: (args) => `must be longer than the carrier send timeout (CARRIER_SEND_TIMEOUT_MS = ${(args?.object as AppConfig).CARRIER_SEND_TIMEOUT_MS} ms)`,
    },
  })
  DISPATCH_LEASE_SECONDS = 60;

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

  /** Carrier events: how long after ingest an out-of-order event keeps being retried before it fails. */
  @Transform(toInt) @Min(1) @IsInt()
  CARRIER_EVENT_RETRY_DEADLINE_SECONDS = 3600;

  /** Carrier events: first retry delay of an out-of-order event (doubles each time, with jitter). */
  @Transform(toInt) @Min(1) @IsInt()
  CARRIER_EVENT_RETRY_BASE_MS = 1000;

  /** Carrier events: the longest wait between two retries. */
  @Transform(toInt) @Min(1) @IsInt()
  CARRIER_EVENT_RETRY_MAX_DELAY_SECONDS = 300;

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

  /** Seconds between polls of a carrier order still pending (Telnyx number_order.complete late). */
  @Transform(toInt) @Min(1) @Max(86400) @IsInt()
  NUMBER_ORDER_POLL_SECONDS = 60;

  /** Polls of a pending order before it is written off as failed. */
  @Transform(toInt) @Min(1) @Max(10000) @IsInt()
  NUMBER_ORDER_MAX_POLLS = 1440;

  /** Seconds between checks whether a releasing number's call has ended. */
  @Transform(toInt) @Min(1) @Max(3600) @IsInt()
  NUMBER_RELEASE_RECHECK_SECONDS = 10;

  /** How carriers reach us, without a trailing slash (paths are appended to it). */
  get publicBaseUrl(): string {
    return (this.PUBLIC_BASE_URL ?? `http://127.0.0.1:${this.PORT}`).replace(/\/$/, '');
  }

  /** Where we call Telnyx: the sandbox unless configured (production https://api.telnyx.com/v2). */
  get telnyxApiUrl(): string {
    return (this.TELNYX_API_URL ?? `http://127.0.0.1:${this.SANDBOX_PORT}/v2`).replace(/\/$/, '');
  }

  /** Where we call Twilio: the sandbox unless configured (production https://api.twilio.com). */
  get twilioApiUrl(): string {
    return (this.TWILIO_API_URL ?? `http://127.0.0.1:${this.SANDBOX_PORT}/twilio`).replace(/\/$/, '');
  }

  /**
   * The key Telnyx webhooks are verified with. Unset, it is the sandbox's dev key, but only while
   * we send to a loopback Telnyx API (the sandbox): a deployment pointed at the real Telnyx without
   * TELNYX_PUBLIC_KEY verifies nothing rather than trusting a published development key. Set to
   * that published key (the default seed's), it is trusted on the same terms.
   */
  get telnyxPublicKey(): string | undefined {
    const sandbox = isLoopbackUrl(this.telnyxApiUrl);
    if (!this.TELNYX_PUBLIC_KEY) return sandbox ? telnyxDevKeyPair(this.SANDBOX_TELNYX_SEED).publicKey : undefined;
    return trustedCredential(this.TELNYX_PUBLIC_KEY, telnyxDevKeyPair(DEFAULT_SANDBOX_TELNYX_SEED).publicKey, sandbox);
  }

  /**
   * The token Twilio webhooks are verified with: TWILIO_AUTH_TOKEN, except its published
   * development value while TWILIO_API_URL is not loopback (undefined: every Twilio webhook is
   * refused until the real token is set). Sending is not affected: see TWILIO_AUTH_TOKEN.
   */
  get twilioWebhookAuthToken(): string | undefined {
    return trustedCredential(this.TWILIO_AUTH_TOKEN, DEV_TWILIO_AUTH_TOKEN, isLoopbackUrl(this.twilioApiUrl));
  }

  /** Where we search, buy and cancel Vonage numbers. */
  get vonageNumbersApiUrl(): string {
    return (this.VONAGE_NUMBERS_API_URL ?? this.vonageApiUrl).replace(/\/$/, '');
  }

  /** Where we call Vonage: the sandbox unless configured (production https://api.nexmo.com). */
  get vonageApiUrl(): string {
    return (this.VONAGE_API_URL ?? `http://127.0.0.1:${this.SANDBOX_PORT}`).replace(/\/$/, '');
  }

  /**
   * The secret Vonage webhook tokens are verified with: VONAGE_SIGNATURE_SECRET, except its
   * published development value while VONAGE_API_URL is not loopback (undefined: every Vonage
   * webhook is refused until the real secret is set).
   */
  get vonageSignatureSecret(): string | undefined {
    return trustedCredential(this.VONAGE_SIGNATURE_SECRET, DEV_VONAGE_SIGNATURE_SECRET, isLoopbackUrl(this.vonageApiUrl));
  }

  /**
   * The secret Stripe webhooks are verified with: STRIPE_WEBHOOK_SECRET, except its published
   * development value outside a development deployment (undefined: every Stripe webhook is refused
   * until the real secret is set). We never call Stripe, so there is no Stripe API URL to tell the
   * sandbox by: a deployment is a development one while everything it talks to and is reached at
   * is this machine (PUBLIC_BASE_URL and every carrier API URL loopback). Anything pointed beyond
   * it is a real deployment, where a secret published in this repository protects nothing.
   */
  get stripeWebhookSecret(): string | undefined {
    return trustedCredential(this.STRIPE_WEBHOOK_SECRET, DEV_STRIPE_WEBHOOK_SECRET, this.isDevelopmentDeployment);
  }

  /**
   * Whether the credential this carrier's (or Stripe's) webhooks are verified with is a published
   * development one: the sandbox's Telnyx key (TELNYX_PUBLIC_KEY unset, or the default seed's),
   * the sandbox Twilio token, the development Vonage and Stripe secrets. Such a webhook is taken
   * only from a loopback peer (see developmentCredentialProblem).
   */
  isDevelopmentCredential(of: 'telnyx' | 'twilio' | 'vonage' | 'stripe'): boolean {
    switch (of) {
      case 'telnyx':
        return !this.TELNYX_PUBLIC_KEY || this.TELNYX_PUBLIC_KEY === telnyxDevKeyPair(DEFAULT_SANDBOX_TELNYX_SEED).publicKey;
      case 'twilio':
        return this.TWILIO_AUTH_TOKEN === DEV_TWILIO_AUTH_TOKEN;
      case 'vonage':
        return this.VONAGE_SIGNATURE_SECRET === DEV_VONAGE_SIGNATURE_SECRET;
      case 'stripe':
        return this.STRIPE_WEBHOOK_SECRET === DEV_STRIPE_WEBHOOK_SECRET;
    }
  }

  /** The webhook credentials in use that are development ones, for the start-up log. */
  get developmentWebhookCredentials(): string[] {
    const names = { telnyx: 'Telnyx webhook key (sandbox)', twilio: 'Twilio auth token (sandbox)', vonage: 'Vonage signature secret (development)', stripe: 'Stripe webhook secret (development)' } as const;
    const trusted = { telnyx: this.telnyxPublicKey, twilio: this.twilioWebhookAuthToken, vonage: this.vonageSignatureSecret, stripe: this.stripeWebhookSecret };
    return (['telnyx', 'twilio', 'vonage', 'stripe'] as const).filter((of) => trusted[of] !== undefined && this.isDevelopmentCredential(of)).map((of) => names[of]);
  }

  /** Reached at and talking to this machine only: the sandbox set-up of `npm start` and the tests. */
  get isDevelopmentDeployment(): boolean {
    return [this.publicBaseUrl, this.telnyxApiUrl, this.twilioApiUrl, this.vonageApiUrl, this.vonageNumbersApiUrl].every(isLoopbackUrl);
  }

  get webhookRetryScheduleSeconds(): number[] {
    return this.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number);
  }
}

/**
 * The contract's rule for a carrier credential: its published development value is accepted only
 * while that carrier's API URL points at this machine (the sandbox); anywhere else it is no
 * credential at all (undefined), so a forger who read this repository cannot sign webhooks.
 */
function trustedCredential(credential: string, developmentValue: string, apiIsSandbox: boolean): string | undefined {
  return credential === developmentValue && !apiIsSandbox ? undefined : credential;
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
    const lines = errors.map((e) => {
      const why = Object.values(e.constraints ?? {}).join('; ');
      return `${e.property}=${shown(e.property, env[e.property])}: ${why}`;
    });
    throw new ConfigError(`Invalid configuration: ${lines.join(', ')}`);
  }
  return config;
}
