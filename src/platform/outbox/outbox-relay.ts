import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { exec } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { Housekeeping } from './housekeeping.js';
import { PartitionMaintenance } from '../retention/partition-maintenance.js';
import { OutboxMetrics } from './outbox-metrics.js';
import { OUTBOX_CHANNEL } from './relay-wakeup.js';
import { Queues, type RelayedJob } from './queues.js';

/** Recovery and housekeeping run at most this often (sooner when the redrive delay is shorter). */
const MAINTENANCE_EVERY_MS = 5_000;
/**
 * Retention: time partitions (carrier_events, outbox_jobs) are made ahead and dropped past
 * retention at most this often, or four times a period when that is shorter (a soak's minute):
 * partitions are made periods ahead, and a drop waits on nothing but the run.
 */
const PARTITIONS_EVERY_MS = 60_000;

/**
 * Moves committed outbox rows into BullMQ. Any number of relays may run: each claims its own
 * rows with SKIP LOCKED, publishes them under their stable jobIds and marks them relayed in the
 * same transaction, so a relay that dies before commit leaves the rows for the next one.
 */
@Injectable()
export class OutboxRelay implements BeforeApplicationShutdown {
  private readonly logger = new Logger(OutboxRelay.name);
  private running = false;
  private loop?: Promise<void>;
  private listener?: pg.Client;
  /** Ends the current sleep at once (shutdown). */
  private wake?: () => void;
  /** Ends the current sleep on a NOTIFY; unset during an error backoff, which commits must not cut short. */
  private wakeOnNotify?: () => void;
  /**
   * A NOTIFY arrived since the current batch began: its commit may have missed the batch's
   * SELECT, so the loop goes round again instead of sleeping a whole poll interval.
   */
  private notified = false;
  private maintenance?: Promise<void>;
  /** Ends the maintenance loop's wait (shutdown). */
  private stopMaintenanceWait?: () => void;
  /** When the time partitions were last maintained (0: not yet, so the first tick does it). */
  private partitionsAt = 0;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly queues: Queues,
    private readonly config: AppConfig,
    private readonly metrics: OutboxMetrics,
    private readonly housekeeping: Housekeeping,
    private readonly partitions: PartitionMaintenance,
    private readonly dataSource: DataSource,
  ) {}

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.listen();
    this.loop = this.run();
    this.maintenance = this.runMaintenance();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.running = false;
    this.wake?.();
    this.stopMaintenanceWait?.();
    await Promise.all([this.loop, this.maintenance]);
    await this.listener?.end().catch(() => undefined);
  }

  /** Claims up to one batch of due rows, publishes them and marks them relayed. Returns the count. */
  relayBatch(): Promise<number> {
    return this.claimAndPublish<RelayedJob & { lag: number }>(
      // SKIP LOCKED: rows another relay is publishing right now are not claimed twice.
      `SELECT job_id AS "jobId", queue, name, extract(epoch FROM clock_timestamp() - run_at)::float8 AS lag
         FROM outbox_jobs
        WHERE relayed_at IS NULL AND run_at <= now()
        ORDER BY run_at, id
        LIMIT $1
        FOR UPDATE SKIP LOCKED`,
      `UPDATE outbox_jobs SET relayed_at = now(), redrive_at = now() + make_interval(secs => $2) WHERE job_id = ANY($1)`,
      async (rows) => {
        await this.queues.publish(rows);
        rows.forEach((row) => this.metrics.relayLag.observe(row.lag));
      },
    );
  }

  /**
   * Recovery from a Redis that lost jobs (restart, FLUSHALL, eviction) or holds them as failed
   * without our runner having recorded it (two stalls, a recording that threw): every relayed job
   * with no outcome in Postgres past its redrive time is published again under the same jobId.
   * Redis ignores the ones it still holds waiting, delayed or running; the lost ones come back,
   * and a failed copy is deleted and the job added again. Returns the count re-published.
   */
  redriveBatch(): Promise<number> {
    return this.claimAndPublish<RelayedJob>(
      // Only relayed, unfinished rows whose check is due; FOR UPDATE holds them unfinished until
      // this commits (an outcome is recorded on the row), SKIP LOCKED keeps relays apart.
      `SELECT job_id AS "jobId", queue, name FROM outbox_jobs
        WHERE relayed_at IS NOT NULL AND completed_at IS NULL AND failed_at IS NULL AND redrive_at <= now()
        ORDER BY redrive_at
        LIMIT $1
        FOR UPDATE SKIP LOCKED`,
      `UPDATE outbox_jobs SET redrive_at = now() + make_interval(secs => $2), redrives = redrives + 1 WHERE job_id = ANY($1)`,
      async (rows) => {
        const unfrozen = await this.queues.republish(rows);
        this.metrics.redriven.inc(rows.length);
        if (unfrozen.length > 0) {
          this.metrics.unfrozen.inc(unfrozen.length);
          this.logger.warn(`re-added ${unfrozen.length} job(s) Redis held as finished with no outcome in Postgres: ${unfrozen.slice(0, 10).join(', ')}`);
        }
      },
    );
  }

  /**
   * One transaction: lock a batch with `claimSql`, publish it to Redis, record that with `markSql`
   * ($1 the jobIds, $2 the redrive delay). A crash before commit leaves the rows to the next relay.
   */
  private claimAndPublish<T extends RelayedJob>(claimSql: string, markSql: string, publish: (rows: T[]) => Promise<void>): Promise<number> {
    return this.uow.run(async (tx) => {
      const { rows } = await exec<T>(tx, claimSql, [this.config.OUTBOX_BATCH_SIZE]);
      if (rows.length === 0) return 0;
      await publish(rows);
      await exec(tx, markSql, [rows.map((r) => r.jobId), this.config.OUTBOX_REDRIVE_AFTER_SECONDS]);
      return rows.length;
    });
  }

  /**
   * How long the loop sleeps: until the next job falls due (by the database clock), at most
   * OUTBOX_POLL_MS. A job written to run at a given time (a message's send slot, a retry's
   * backoff) is handed over when it falls due, not up to a poll later: a number's paced sends
   * otherwise went out late by a random part of the poll (docs/benchmarks-method.md, pacing).
   */
  async untilNextDue(): Promise<number> {
    // outbox_jobs_unrelayed_idx (run_at) WHERE relayed_at IS NULL: the first future row.
    const { rows } = await exec<{ ms: number | null }>(
      this.dataSource.manager,
      `SELECT extract(epoch FROM min(run_at) - clock_timestamp())::float8 * 1000 AS ms FROM outbox_jobs WHERE relayed_at IS NULL AND run_at > now()`,
    );
    const ms = rows[0]?.ms ?? Infinity;
    return Math.max(0, Math.min(this.config.OUTBOX_POLL_MS, Math.ceil(ms)));
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      try {
        this.notified = false;
        const relayed = await this.relayBatch();
        failures = 0;
        if (relayed >= this.config.OUTBOX_BATCH_SIZE) continue;
        await this.sleep(await this.untilNextDue());
      } catch (err) {
        failures++;
        if (failures === 1 || failures % 20 === 0) {
          this.logger.warn(`relay paused, will retry: ${(err as Error).message}`);
        }
        await this.sleep(Math.min(200 * failures, 2000), false);
        if (this.running && !this.listener) await this.listen().catch(() => undefined);
      }
    }
  }

  /**
   * Recovery, retention and housekeeping on their own timer, so they never delay the relay
   * loop's next batch (they ran inline before and showed up in the relay's tail latency).
   */
  private async runMaintenance(): Promise<void> {
    const every = Math.min(MAINTENANCE_EVERY_MS, this.config.OUTBOX_REDRIVE_AFTER_SECONDS * 1000);
    while (this.running) {
      // Partitions first, before the first wait: a relay's first run may have several to make (a
      // fresh deploy: 13 for the call tables), each ATTACH invalidating every backend's cached
      // plans of its table, and at start it does that before traffic rather than 5 s into it
      // (issue #43: it fell inside the 5-call bench's measured rounds, binds 8-27 ms meanwhile).
      await this.maintainPartitionsWhenDue();
      if (!this.running) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, every);
        this.stopMaintenanceWait = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (!this.running) break;
      try {
        await this.redriveBatch();
        await this.housekeeping.runAll();
      } catch (err) {
        this.logger.warn(`relay maintenance failed, will retry: ${(err as Error).message}`);
      }
    }
  }

  /** Time partitions made ahead and dropped past retention, at most every PARTITIONS_EVERY_MS (at once the first time). */
  private async maintainPartitionsWhenDue(): Promise<void> {
    if (Date.now() - this.partitionsAt < Math.min(PARTITIONS_EVERY_MS, this.config.PARTITION_PERIOD_SECONDS * 250)) return;
    this.partitionsAt = Date.now();
    await this.partitions.maintain().catch((err: unknown) => this.logger.warn(`partition maintenance failed, will retry: ${(err as Error).message}`));
  }

  /** LISTEN is a wake-up hint only: the poll still finds every row if a NOTIFY is missed. */
  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.config.DATABASE_URL });
    client.on('error', () => {
      this.listener = undefined;
    });
    client.on('notification', () => {
      this.notified = true;
      this.wakeOnNotify?.();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
      this.listener = client;
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
  }

  private sleep(ms: number, wakeOnNotify = true): Promise<void> {
    if (wakeOnNotify && this.notified) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
      this.wakeOnNotify = wakeOnNotify ? done : undefined;
    });
  }
}
