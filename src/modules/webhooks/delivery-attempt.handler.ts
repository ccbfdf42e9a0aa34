import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../platform/config/app-config.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { Statements } from '../../platform/database/statements.js';
import { completeJobSql, pendingJobSql } from '../../platform/outbox/job-sql.js';
import { JobName, type JobPayloads } from '../../platform/outbox/job-catalogue.js';
import { HandlesJob, type JobHandler, type RunOutcome } from '../../platform/outbox/job-handler.js';
import { AddressPolicy, AddressRefused } from './address-policy.js';
import { DeliveryScheduler, type AttemptRef } from './delivery-scheduler.js';
import { EndpointHealth } from './endpoint-health.js';
import { honourRetryAfter, scheduledDelayMs } from './retry-policy.js';
import { webhookHeaders } from './signing.js';
import { EndpointAgents, postWebhook, type PostResult } from './webhook-http.js';

/** Characters of the customer's response kept on the attempt (up to 64 KiB is read). */
export const EXCERPT_CHARS = 2048;

interface DeliveryRow {
  id: string;
  status: string;
  round: number;
  attempt_count: number;
  round_first_attempt: number;
  endpoint_id: string;
  url: string;
  enabled: boolean;
  deleted: boolean;
  secrets: string[];
  event_id: string;
  type: string;
  payload: object;
  event_created_at: Date;
}

/** What an attempt reads: the delivery with its endpoint (url, secrets) and its event. */
const DELIVERY_COLUMNS = `d.id, d.status, d.round, d.attempt_count, d.round_first_attempt, d.endpoint_id,
  w.url, w.enabled, w.deleted_at IS NOT NULL AS deleted,
  array_remove(ARRAY[w.secret, CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END], NULL) AS secrets,
  e.id AS event_id, e.type, e.payload, e.created_at AS event_created_at`;
const DELIVERY_JOINS = `JOIN webhook_endpoints w ON w.id = d.endpoint_id JOIN outbound_events e ON e.id = d.event_id`;

/** Stale is final (round and attempt_count only grow): an attempt is due only while this holds. */
function isDue(row: DeliveryRow, ref: AttemptRef): boolean {
  return row.status === 'pending' && row.round === ref.round && row.attempt_count === ref.attempt - 1;
}

function isSuccess(result: PostResult): boolean {
  const code = result.statusCode;
  return code !== undefined && code >= 200 && code < 300 && !result.error;
}

/** One HTTP attempt of one delivery; its outcome and the next attempt are recorded in one transaction. */
@Injectable()
@HandlesJob(JobName.WebhookDeliveryAttempt)
export class DeliveryAttemptHandler implements JobHandler<JobName.WebhookDeliveryAttempt>, OnApplicationShutdown {
  private readonly policy: AddressPolicy;
  private readonly agents = new EndpointAgents();

  constructor(
    private readonly dataSource: DataSource,
    private readonly uow: UnitOfWork,
    private readonly config: AppConfig,
    private readonly scheduler: DeliveryScheduler,
    private readonly health: EndpointHealth,
    private readonly statements: Statements,
  ) {
    this.policy = new AddressPolicy(config.WEBHOOK_ALLOWED_CIDRS);
  }

  /** After the workers stopped (beforeApplicationShutdown), so no attempt in flight loses its socket. */
  onApplicationShutdown(): void {
    this.agents.destroy();
  }

  /**
   * The common case in two statements: one read of the job with its delivery, the call, then one
   * statement recording a success with the endpoint's health and the job's completion. Anything
   * else (a stale job, a disabled endpoint, a failed call) takes the paths below; undefined only
   * before the endpoint was called.
   */
  async runInOneStatement(jobId: string): Promise<RunOutcome | undefined> {
    const [row] = await this.statements.query<DeliveryRow & { job_round: number; job_attempt: number }>(
      `WITH job AS (${pendingJobSql('$1')})
       SELECT (job.data->>'round')::int AS job_round, (job.data->>'attempt')::int AS job_attempt, ${DELIVERY_COLUMNS}
         FROM job JOIN webhook_deliveries d ON d.id = job.data->>'deliveryId' ${DELIVERY_JOINS}`,
      [jobId],
    );
    if (!row) return undefined;
    const ref = { id: row.id, round: row.job_round, attempt: row.job_attempt };
    if (!isDue(row, ref) || row.deleted || !row.enabled) return undefined;
    const { result, at } = await this.callFor(row);
    if (!isSuccess(result)) {
      await this.uow.run((tx) => this.record(tx, row, ref, result, at));
      await this.statements.query(completeJobSql('$1'), [jobId]);
      return 'completed';
    }
    const stmt = new CteStatement();
    const recorded = this.recordCtes(stmt, ref, result, at, 'delivered', null);
    this.health.recordSuccessCte(stmt, row.endpoint_id, recorded);
    stmt.with('job_done', completeJobSql(stmt.param(jobId)));
    await this.statements.query(stmt.text('SELECT 1'), stmt.params);
    return 'completed';
  }

  async handle({ deliveryId, round, attempt }: JobPayloads[JobName.WebhookDeliveryAttempt]): Promise<void> {
    const ref = { id: deliveryId, round, attempt };
    let row = await this.load(deliveryId);
    // Stale is final (round and attempt_count only grow), so this earlier read may decide it: an
    // older round, an attempt already recorded, a delivery finished or parked does nothing.
    while (row && isDue(row, ref)) {
      if (!row.deleted && row.enabled) return this.attempt(row, ref);
      // The guard decides from the endpoint as it is now; when it was enabled again since the
      // load (or the delivery moved on), load again: the next turn calls, or finds the job stale.
      if (await this.settleWithoutCalling(ref, row.endpoint_id)) return;
      row = await this.load(deliveryId);
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
    const recorded = this.recordCtes(stmt, ref, result, at, status, nextAt);
    const { rows } = await exec<{ status: string }>(tx, stmt.text(`SELECT status FROM ${recorded}`), stmt.params);
    if (rows.length === 0) return;
    if (success) return this.health.recordSuccess(tx, row.endpoint_id);
    const disabled = await this.health.recordFailure(tx, row.endpoint_id, gone);
    if (rows[0].status === 'pending' && !disabled) {
      await this.scheduler.enqueueAttempt(tx, { ...ref, attempt: ref.attempt + 1 }, nextAt!);
    }
  }

  /**
   * The guarded record of an attempt's outcome and its attempt row, as CTEs; returns the CTE of
   * the delivery it changed (id, status), which has no row when the guard let nothing through.
   */
  private recordCtes(stmt: CteStatement, ref: AttemptRef, result: PostResult, at: Date, status: string, nextAt: Date | null): string {
    const success = isSuccess(result);
    const code = result.statusCode;
    const error = result.error ?? (success ? null : code !== undefined ? `HTTP ${code}` : 'no response');
    const p = (value: unknown, cast: string) => stmt.param(value, cast);
    const [id, round, attempt, newStatus] = [p(ref.id, 'text'), p(ref.round, 'int'), p(ref.attempt, 'int'), p(status, 'text')];
    // WHERE round, attempt_count, status: only the first run of this attempt records it (a twin
    // job run, or a job from an older round, changes nothing). A delivery parked while the call
    // was in flight stays parked unless the call succeeded. The attempt row is written from the
    // updated row, so only when the guard let the update through.
    const recorded = stmt.with(
      'dlv_recorded',
      `UPDATE webhook_deliveries
          SET attempt_count = ${attempt},
              status = CASE WHEN ${newStatus} = 'delivered' OR status = 'pending' THEN ${newStatus} ELSE status END,
              next_attempt_at = CASE WHEN status = 'pending' THEN ${p(nextAt, 'timestamptz')} ELSE NULL END,
              delivered_at = CASE WHEN ${newStatus} = 'delivered' THEN now() ELSE delivered_at END,
              failed_at = CASE WHEN ${newStatus} = 'failed' AND status = 'pending' THEN now() ELSE failed_at END,
              parked_at = CASE WHEN ${newStatus} = 'delivered' THEN NULL ELSE parked_at END,
              last_error = ${p(error, 'text')}, updated_at = now()
        WHERE id = ${id} AND round = ${round} AND attempt_count = ${attempt} - 1 AND status IN ('pending', 'parked')
        RETURNING id, status`,
    );
    stmt.with(
      'dlv_attempt_row',
      `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, status_code, error, duration_ms, response_excerpt, at)
       SELECT id, ${attempt}, ${p(code ?? null, 'int')}, ${p(success ? null : error, 'text')}, ${p(result.durationMs, 'int')},
              ${p(result.body.slice(0, EXCERPT_CHARS), 'text')}, ${p(at, 'timestamptz')} FROM ${recorded}`,
    );
    return recorded;
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
          WHERE d.id = $1 AND d.round = $2 AND d.status = 'pending' AND (e.deleted OR NOT e.enabled)`,
        [ref.id, ref.round, endpointId],
      );
      return affected > 0;
    });
  }

  private async load(deliveryId: string): Promise<DeliveryRow | undefined> {
    const [row] = await this.dataSource.query(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d ${DELIVERY_JOINS} WHERE d.id = $1`, [deliveryId]);
    return row;
  }
}
