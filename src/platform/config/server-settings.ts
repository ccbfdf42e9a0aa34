import 'reflect-metadata';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsNumber, IsOptional, Matches, Max, Min, ValidateBy } from 'class-validator';
import { toInt, toBoolean, toNumber, URL_RE } from './setting-parsers.js';

/**
 * The process's own settings: where it listens and is reached, what it connects to (PostgreSQL,
 * Redis) and how it shares those connections, the relay and the workers. The first of the
 * settings classes AppConfig is made of (app-config.ts says why they extend one another).
 */
export class ServerSettings {
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

  /**
   * PostgreSQL's plan_cache_mode for the app's connections (a startup option). The hot path's
   * prepared statements are CTEs of ten or more steps over partitioned tables: planned with their
   * values (`auto`'s first five runs on each connection, and for good where the generic plan's
   * estimate is higher, as with arrays) each run cost more to plan than to execute, 1.1 of the
   * 2.2 ms of PostgreSQL CPU a call event took at 5 calls (issue #43, docs/benchmarks.md). Their
   * keys are parameters of STABLE functions, so a generic plan prunes partitions as it starts.
   * `auto` sends no option: behind PgBouncer, which refuses startup options it is not told to
   * ignore (`ignore_startup_parameters = options`).
   */
  @IsIn(['force_generic_plan', 'auto', 'force_custom_plan'])
  DATABASE_PLAN_CACHE_MODE: 'force_generic_plan' | 'auto' | 'force_custom_plan' = 'force_generic_plan';

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
        const config = args?.object as ServerSettings;
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
   * keeps up slows everything (docs/architecture.md, "Jobs after commit, lanes and leases";
   * the runs behind it are in the git history of docs/benchmarks-method.md).
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

  /** How carriers reach us, without a trailing slash (paths are appended to it). */
  get publicBaseUrl(): string {
    return (this.PUBLIC_BASE_URL ?? `http://127.0.0.1:${this.PORT}`).replace(/\/$/, '');
  }
}
