import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { IdPrefix } from '../../platform/ids.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import { WebhookDeliveryAttemptJob, WebhookParkedExpiryJob } from './webhooks.jobs.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { deliveryJsonSql } from './delivery-row.js';
import { StatementJobs, newJobsCount } from '../../platform/outbox/statement-jobs.js';
import { idKeyOf } from '../../platform/retention/id-partition-key.js';

export interface AttemptRef {
  id: string;
  /** The delivery's event: its id's time is the delivery's partition key (idKeyOf(eventId, 'event_id')). */
  eventId: string;
  round: number;
  /** The attempt this job makes (attempt_count + 1 when it was scheduled). */
  attempt: number;
}

/** BullMQ jobIds may not contain ':'; one id per (delivery, round, attempt) so resumes never collide. */
export function attemptJobId(ref: Pick<AttemptRef, 'id' | 'round' | 'attempt'>): string {
  return `dlv-${ref.id}-${ref.round}-${ref.attempt}`;
}

/** attemptJobId in SQL, over columns id, round and attempt (a spec holds the two to one format). */
export const ATTEMPT_JOB_ID_SQL = `'dlv-' || id || '-' || round || '-' || attempt`;

/**
 * Every change of a delivery's schedule, written in the caller's transaction next to the outbox
 * job it implies. Postgres holds the schedule; a job only says "try attempt n of round r now".
 */
@Injectable()
export class DeliveryScheduler {
  constructor(
    private readonly outbox: OutboxService,
    private readonly config: AppConfig,
  ) {}

  async enqueueAttempt(tx: Tx, ref: AttemptRef, runAt?: Date): Promise<void> {
    await this.enqueueAttempts(tx, [ref], runAt);
  }

  /** One outbox statement for the attempts of many deliveries (a fan-out, a resume, a redeliver). */
  private async enqueueAttempts(tx: Tx, refs: AttemptRef[], runAt?: Date): Promise<void> {
    await this.outbox.enqueueMany(
      tx,
      refs.map((ref) => ({
        job: WebhookDeliveryAttemptJob,
        data: { deliveryId: ref.id, eventId: ref.eventId, round: ref.round, attempt: ref.attempt },
        jobId: attemptJobId(ref),
        runAt,
      })),
    );
  }

  /**
   * One delivery per live endpoint of the account subscribed to the type: pending with its first
   * job when the endpoint is enabled, parked at once when it is disabled. Returns how many.
   */
  async createForEvent(tx: Tx, eventId: string, accountId: string, type: string): Promise<number> {
    const stmt = new CteStatement();
    stmt.with('dlv_event', `SELECT ${stmt.param(eventId)}::text AS id, ${stmt.param(accountId)}::text AS account_id`);
    const created = this.createForEventsCte(stmt, 'dlv_event', type);
    const [row] = (await exec<{ created: number; jobs: number }>(tx, stmt.text(`SELECT (SELECT count(*) FROM ${created})::int AS created, (${newJobsCount(stmt)})::int AS jobs`), stmt.params)).rows;
    this.outbox.jobsWritten(row.jobs, tx);
    return row.created;
  }

  /**
   * createForEvent as a fragment: the deliveries (and first-attempt jobs) of every event in CTE
   * `events` (columns id, account_id; and type, payload, created_at when the statement's process
   * runs the first attempts after commit), all of type `type` (null: each of its own `type`).
   * Returns the CTE of the deliveries made.
   */
  createForEventsCte(stmt: CteStatement, events: string, type: string | null): string {
    const typeParam = type === null ? 'e.type' : stmt.param(type, 'text');
    // FOR SHARE: an enable, disable or delete of these endpoints in flight is waited for and its
    // outcome read, and none can commit before this statement's transaction, so `enabled` stays
    // true until the deliveries commit; a park or resume after us sees them. (enabled is read, not
    // filtered on: a WHERE on it would skip a row being enabled without waiting for it.)
    stmt.with(
      'dlv_endpoints',
      `SELECT w.id AS endpoint_id, w.enabled, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, e.id AS event_id, e.account_id
         FROM ${events} e JOIN webhook_endpoints w ON w.account_id = e.account_id
        WHERE w.deleted_at IS NULL AND (w.event_types IS NULL OR ${typeParam} = ANY (w.event_types))
        ORDER BY w.id FOR SHARE OF w`,
    );
    // ON CONFLICT: one delivery per (event, endpoint), whoever else inserts it. The partition is
    // the event's (migration 0047), so each partition's UNIQUE (event_id, endpoint_id) sees every
    // copy, across a boundary too (no target: a partitioned parent has no unique index to name).
    const created = stmt.with(
      'dlv_created',
      `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, account_id, status, parked_at, next_attempt_at)
       SELECT onceline_id('${IdPrefix.WebhookDelivery}'), event_id, endpoint_id, account_id,
              CASE WHEN enabled THEN 'pending' ELSE 'parked' END,
              CASE WHEN enabled THEN NULL ELSE now() END,
              CASE WHEN enabled THEN now() ELSE NULL END
         FROM dlv_endpoints
       ON CONFLICT DO NOTHING
       RETURNING id, status, round, attempt_count, round_first_attempt, endpoint_id, event_id`,
    );
    stmt.with('dlv_first_attempts', `SELECT id, event_id, 1 AS round, 1 AS attempt FROM ${created} WHERE status = 'pending'`);
    const jobs = this.outbox.jobsFromCte(stmt, 'dlv_jobs', 'dlv_first_attempts', WebhookDeliveryAttemptJob, {
      id: ATTEMPT_JOB_ID_SQL,
      data: `jsonb_build_object('deliveryId', id, 'eventId', event_id, 'round', round, 'attempt', attempt)`,
      // Named by deliveries this statement created with new ids (dlv_created).
      newIds: true,
    });
    // First attempts this process runs once the statement returns start from the delivery as
    // created here (DeliveryAttemptHandler.runInOneStatement): no read back.
    const statementJobs = StatementJobs.of(stmt);
    if (statementJobs.afterCommitJobCtes.includes(jobs)) {
      statementJobs.afterCommitPrefetchCtes.push(
        stmt.with(
          'dlv_prefetched',
          `SELECT ${ATTEMPT_JOB_ID_SQL} AS job_id, prefetched FROM (
             SELECT f.id, f.round, f.attempt,
                    ${deliveryJsonSql('d', 'w', 'e')} || jsonb_build_object('job_round', f.round, 'job_attempt', f.attempt) AS prefetched
               FROM dlv_first_attempts f JOIN ${created} d ON d.id = f.id
               JOIN dlv_endpoints w ON w.endpoint_id = d.endpoint_id AND w.event_id = d.event_id
               JOIN ${events} e ON e.id = d.event_id) AS first_attempt`,
          // Joined to the new jobs by a computed job id: once, not once per job of a batch.
          { materialized: true },
        ),
      );
    }
    return created;
  }

  /**
   * The endpoint was just disabled: its pending deliveries (in flight included) are parked, not
   * dropped, and a job will fail the ones still parked after the retention period.
   */
  async parkEndpoint(tx: Tx, endpointId: string): Promise<number> {
    // WHERE status = 'pending': delivered and failed rows are final; parked ones stay as they are.
    const { affected } = await exec(
      tx,
      `UPDATE webhook_deliveries SET status = 'parked', parked_at = now(), next_attempt_at = NULL, updated_at = now()
        WHERE endpoint_id = $1 AND status = 'pending'`,
      [endpointId],
    );
    await this.scheduleParkedExpiry(tx, endpointId, new Date(Date.now() + this.retentionMs()));
    return affected;
  }

  async scheduleParkedExpiry(tx: Tx, endpointId: string, runAt: Date): Promise<void> {
    await this.outbox.enqueue(tx, {
      job: WebhookParkedExpiryJob,
      data: { endpointId },
      jobId: `wpx-${endpointId}-${runAt.getTime()}`,
      runAt,
    });
  }

  /**
   * Parked deliveries older than the retention become failed (still visible): one endpoint's
   * (its expiry chain, an enable), or every endpoint's (the housekeeping sweep, which also
   * catches deliveries parked after a chain ended). Returns how many.
   */
  async expireParked(tx: Tx, endpointId?: string): Promise<number> {
    // WHERE status = 'parked' AND parked_at older than retention: a resumed delivery is never failed here.
    const { affected } = await exec(
      tx,
      `UPDATE webhook_deliveries
          SET status = 'failed', failed_at = now(), updated_at = now(),
              last_error = 'endpoint disabled; parked longer than ' || $2::text || ' days'
        WHERE ($1::text IS NULL OR endpoint_id = $1) AND status = 'parked' AND parked_at <= now() - make_interval(days => $2::int)`,
      [endpointId ?? null, this.config.WEBHOOK_PARKED_RETENTION_DAYS],
    );
    return affected;
  }

  /** The endpoint was just re-enabled: parked deliveries start a new round now, each with a new job. */
  async resumeEndpoint(tx: Tx, endpointId: string): Promise<number> {
    await this.expireParked(tx, endpointId);
    // WHERE status = 'parked': each parked delivery is resumed by exactly one enable.
    const { rows } = await exec<{ id: string; event_id: string; round: number; attempt_count: number }>(
      tx,
      `UPDATE webhook_deliveries
          SET status = 'pending', parked_at = NULL, round = round + 1, round_first_attempt = attempt_count + 1,
              next_attempt_at = now(), updated_at = now()
        WHERE endpoint_id = $1 AND status = 'parked'
        RETURNING id, event_id, round, attempt_count`,
      [endpointId],
    );
    await this.enqueueAttempts(tx, rows.map((row) => ({ id: row.id, eventId: row.event_id, round: row.round, attempt: row.attempt_count + 1 })));
    return rows.length;
  }

  /**
   * Redeliver: finished deliveries of the event (to live, enabled endpoints) start a new round,
   * and endpoints subscribed since get a first delivery. Pending and parked ones are left as they are.
   */
  async redeliverEvent(tx: Tx, eventId: string, accountId: string, type: string): Promise<number> {
    // WHERE status IN ('delivered','failed'): a delivery already under way is not doubled; its
    // endpoint is read FOR SHARE (as in createForEvent), so a disable in flight is waited for.
    const { rows } = await exec<{ id: string; event_id: string; round: number; attempt_count: number }>(
      tx,
      `WITH endpoint AS (
         SELECT id, enabled FROM webhook_endpoints
          WHERE id IN (SELECT endpoint_id FROM webhook_deliveries WHERE event_id = $1 AND ${idKeyOf('$1', 'event_id')}) AND deleted_at IS NULL
          ORDER BY id FOR SHARE
       )
       UPDATE webhook_deliveries d
          SET status = 'pending', round = d.round + 1, round_first_attempt = d.attempt_count + 1,
              next_attempt_at = now(), delivered_at = NULL, failed_at = NULL, updated_at = now()
         FROM endpoint e
        WHERE d.event_id = $1 AND ${idKeyOf('$1', 'd.event_id')} AND d.account_id = $2 AND d.status IN ('delivered', 'failed')
          AND e.id = d.endpoint_id AND e.enabled
        RETURNING d.id, d.event_id, d.round, d.attempt_count`,
      [eventId, accountId],
    );
    await this.enqueueAttempts(tx, rows.map((row) => ({ id: row.id, eventId: row.event_id, round: row.round, attempt: row.attempt_count + 1 })));
    return rows.length + (await this.createForEvent(tx, eventId, accountId, type));
  }

  /** The endpoint was deleted: what was still owed to it fails (and stays visible). */
  async failForDeletedEndpoint(tx: Tx, endpointId: string): Promise<void> {
    // WHERE status IN ('pending','parked'): final rows keep their outcome.
    await exec(
      tx,
      `UPDATE webhook_deliveries SET status = 'failed', failed_at = now(), next_attempt_at = NULL, parked_at = NULL,
              last_error = 'endpoint deleted', updated_at = now()
        WHERE endpoint_id = $1 AND status IN ('pending', 'parked')`,
      [endpointId],
    );
  }

  private retentionMs(): number {
    return this.config.WEBHOOK_PARKED_RETENTION_DAYS * 86_400_000;
  }
}
