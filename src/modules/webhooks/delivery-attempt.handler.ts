import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../platform/config/app-config.js';
import { exec, queryRows, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { Statements } from '../../platform/database/statements.js';
import { completeJobSql, pendingJobSql } from '../../platform/outbox/job-sql.js';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { WebhookDeliveryAttemptJob } from './webhooks.jobs.js';
import { HandlesJob, type JobContext, type JobHandler, type RunOutcome } from '../../platform/outbox/job-handler.js';
import { AddressPolicy, AddressRefused } from './address-policy.js';
import { isSuccess, recordAttemptsCtes } from './attempt-records.js';
import { DeliveredAttempts } from './delivered-attempts.js';
import { DELIVERY_COLUMNS, DELIVERY_JOINS, deliveryByIdWhere, deliveryFromJson, type DeliveryRow } from './delivery-row.js';
import { idKeyOf } from '../../platform/retention/id-partition-key.js';
import { DeliveryScheduler, type AttemptRef } from './delivery-scheduler.js';
import { EndpointHealth } from './endpoint-health.js';
import { honourRetryAfter, scheduledDelayMs } from './retry-policy.js';
import { webhookHeaders } from './signing.js';
import { EndpointAgents, postWebhook, type PostResult } from './webhook-http.js';

export { EXCERPT_CHARS } from './attempt-records.js';

/** The round and attempt a job makes, beside its delivery as it is. */
interface AttemptJob {
  job_round: number;
  job_attempt: number;
}

/** Stale is final (round and attempt_count only grow): an attempt is due only while this holds. */
function isDue(row: DeliveryRow, ref: Pick<AttemptRef, 'round' | 'attempt'>): boolean {
  return row.status === 'pending' && row.round === ref.round && row.attempt_count === ref.attempt - 1;
}

/** One HTTP attempt of one delivery; its outcome and the next attempt are recorded in one transaction. */
@Injectable()
@HandlesJob(WebhookDeliveryAttemptJob)
export class DeliveryAttemptHandler implements JobHandler<typeof WebhookDeliveryAttemptJob>, OnApplicationShutdown {
  private readonly policy: AddressPolicy;
  private readonly agents = new EndpointAgents();

  constructor(
    private readonly dataSource: DataSource,
    private readonly uow: UnitOfWork,
    private readonly config: AppConfig,
    private readonly scheduler: DeliveryScheduler,
    private readonly health: EndpointHealth,
    private readonly statements: Statements,
    private readonly delivered: DeliveredAttempts,
  ) {
    this.policy = new AddressPolicy(config.WEBHOOK_ALLOWED_CIDRS);
  }

  /** After the workers stopped (beforeApplicationShutdown), so no attempt in flight loses its socket. */
  onApplicationShutdown(): void {
    this.agents.destroy();
  }

  /**
   * The common case in two statements: one read of the job with its delivery, the call, then one
   * statement recording a success with the endpoint's health and the job's completion, shared with
   * the other successes that finish meanwhile (DeliveredAttempts). A first
   * attempt run right after the statement that created its delivery (AfterCommitJobs) starts
   * from the delivery that statement returned (DeliveryScheduler.createForEventsCte), so one
   * statement. Anything else (a stale job, a disabled endpoint, a failed call) takes the paths
   * below; undefined only before the endpoint was called.
   */
  async runInOneStatement(jobId: string, context?: JobContext): Promise<RunOutcome | undefined> {
    const prefetched = context?.prefetched;
    // Prefetched: no read. The read only spares a stale or finished job its call; the record's
    // guards (round, attempt_count, status) decide, with or without it.
    const row = prefetched ? deliveryFromJson<AttemptJob>(prefetched as never) : await this.readPending(jobId);
    if (!row) return undefined;
    const ref = { id: row.id, eventId: row.event_id, round: row.job_round, attempt: row.job_attempt };
    if (!isDue(row, ref) || row.deleted || !row.enabled) return undefined;
    const { result, at } = await this.callFor(row);
    if (!isSuccess(result)) {
      await this.uow.run((tx) => this.record(tx, row, ref, result, at));
      await this.statements.query(completeJobSql('$1'), [jobId]);
      return 'completed';
    }
    // With the job's completion, in a statement shared with other successes finishing now.
    await this.delivered.record({ outcome: { ref, status: 'delivered', nextAt: null, result, at }, jobId });
    return 'completed';
  }

  /**
   * The delivery of a job with no outcome yet, at the round and attempt the job names, found in
   * the one partition of its event's time (the job's eventId). The job's values are scalar
   * subqueries, so the partitions are pruned when they run (those of webhook_deliveries and
   * outbound_events that cannot hold the row are never scanned). A job written before jobs
   * carried eventId finds nothing here and takes the general path (handle, which probes every
   * partition for it).
   */
  private async readPending(jobId: string): Promise<(DeliveryRow & AttemptJob) | undefined> {
    const [row] = await this.statements.query<DeliveryRow & AttemptJob>(
      `WITH job AS (${pendingJobSql('$1')})
       SELECT (SELECT (data->>'round')::int FROM job) AS job_round, (SELECT (data->>'attempt')::int FROM job) AS job_attempt, ${DELIVERY_COLUMNS}
         FROM webhook_deliveries d ${DELIVERY_JOINS}
        WHERE ${deliveryByIdWhere(`(SELECT data->>'deliveryId' FROM job)`, `(SELECT data->>'eventId' FROM job)`)}`,
      [jobId],
    );
    return row;
  }

  async handle({ deliveryId, eventId, round, attempt }: PayloadOf<typeof WebhookDeliveryAttemptJob>): Promise<void> {
    // A job written before jobs carried eventId loads its delivery by id alone; once loaded, the
    // row's event names the partition for every later statement (and for the next attempt's job).
    let row = await this.load(deliveryId, eventId);
    // Stale is final (round and attempt_count only grow), so this earlier read may decide it: an
    // older round, an attempt already recorded, a delivery finished or parked does nothing.
    while (row && isDue(row, { round, attempt })) {
      const ref = { id: deliveryId, eventId: row.event_id, round, attempt };
      if (!row.deleted && row.enabled) return this.attempt(row, ref);
      // The guard decides from the endpoint as it is now; when it was enabled again since the
      // load (or the delivery moved on), load again: the next turn calls, or finds the job stale.
      if (await this.settleWithoutCalling(ref, row.endpoint_id)) return;
      row = await this.load(deliveryId, row.event_id);
    }
  }

  /** Calls the endpoint loaded (a PATCH of its url meanwhile applies from the next attempt) and records the outcome. */
  private async attempt(row: DeliveryRow, ref: AttemptRef): Promise<void> {
    const { result, at } = await this.callFor(row);
    await this.uow.run((tx) => this.record(tx, row, ref, result, at));
  }

  private async callFor(row: DeliveryRow): Promise<{ result: PostResult; at: Date }> {
    const body = JSON.stringify({ type: row.type, timestamp: row.event_created_at.toISOString(), data: row.payload });
    const at = new Date();
    return { result: await this.call(row, body, Math.floor(at.getTime() / 1000)), at };
  }

  private async call(row: DeliveryRow, body: string, timestamp: number): Promise<PostResult> {
    const url = new URL(row.url);
    const started = performance.now();
    try {
      const address = await this.policy.vet(url.hostname);
      const headers = webhookHeaders(row.secrets, row.event_id, timestamp, body);
      return await postWebhook({ url, address, headers, body, timeoutMs: this.config.WEBHOOK_TIMEOUT_MS }, this.agents.for(url, address));
    } catch (err) {
      if (!(err instanceof AddressRefused)) throw err;
      return { body: '', error: err.message, durationMs: Math.round(performance.now() - started) };
    }
  }

  /** The attempt's outcome; everything after the guarded UPDATE happens only if it changed the row. */
  private async record(tx: Tx, row: DeliveryRow, ref: AttemptRef, result: PostResult, at: Date): Promise<void> {
    const code = result.statusCode;
    const success = isSuccess(result);
    const gone = code === 410;
    const nextIndex = ref.attempt - row.round_first_attempt + 1;
    let delayMs = scheduledDelayMs(this.config.webhookRetryScheduleSeconds, nextIndex);
    if (delayMs !== undefined && (code === 429 || code === 503)) delayMs = honourRetryAfter(delayMs, result.retryAfter);
    // 410 keeps the delivery owed: the endpoint is disabled below and the delivery parked with it.
    const status = success ? 'delivered' : delayMs === undefined && !gone ? 'failed' : 'pending';
    const nextAt = status === 'pending' ? new Date(Date.now() + (delayMs ?? 0)) : null;
    const stmt = new CteStatement();
    const recorded = recordAttemptsCtes(stmt, [{ ref, status, nextAt, result, at }]);
    // A success resets the endpoint's failure count in the same statement, for the row it recorded.
    if (success) this.health.recordSuccessesCte(stmt, recorded);
    const { rows } = await exec<{ status: string }>(tx, stmt.text(`SELECT status FROM ${recorded}`), stmt.params);
    if (rows.length === 0 || success) return;
    const disabled = await this.health.recordFailure(tx, row.endpoint_id, gone);
    if (rows[0].status === 'pending' && !disabled) {
      await this.scheduler.enqueueAttempt(tx, { ...ref, attempt: ref.attempt + 1 }, nextAt!);
    }
  }

  /**
   * The endpoint looked disabled or deleted: park (or fail) instead of calling. Returns whether
   * it did; false when the endpoint is live and enabled again, or the delivery moved on.
   */
  private async settleWithoutCalling(ref: AttemptRef, endpointId: string): Promise<boolean> {
    return this.uow.run(async (tx) => {
      // FOR SHARE + WHERE status = 'pending' AND round AND (deleted OR NOT enabled): decided from
      // the endpoint as committed now, and an enable in flight waits for this park (then resumes it).
      const { affected } = await exec(
        tx,
        `WITH endpoint AS (
           SELECT deleted_at IS NOT NULL AS deleted, enabled FROM webhook_endpoints WHERE id = $3 FOR SHARE
         )
         UPDATE webhook_deliveries d
            SET status = CASE WHEN e.deleted THEN 'failed' ELSE 'parked' END,
                failed_at = CASE WHEN e.deleted THEN now() ELSE d.failed_at END,
                parked_at = CASE WHEN e.deleted THEN d.parked_at ELSE now() END,
                last_error = CASE WHEN e.deleted THEN 'endpoint deleted' ELSE d.last_error END,
                next_attempt_at = NULL, updated_at = now()
           FROM endpoint e
          WHERE d.id = $1 AND ${idKeyOf('$4', 'd.event_id')} AND d.round = $2 AND d.status = 'pending' AND (e.deleted OR NOT e.enabled)`,
        [ref.id, ref.round, endpointId, ref.eventId],
      );
      return affected > 0;
    });
  }

  /** The delivery with its endpoint and event; `eventId` (the job's, when it has one) prunes to its partition. */
  private async load(deliveryId: string, eventId?: string): Promise<DeliveryRow | undefined> {
    const where = deliveryByIdWhere('$1', eventId === undefined ? undefined : '$2');
    const [row] = await queryRows(this.dataSource.manager, `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d ${DELIVERY_JOINS} WHERE ${where}`, eventId === undefined ? [deliveryId] : [deliveryId, eventId]);
    return row;
  }
}
