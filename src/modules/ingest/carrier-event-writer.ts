import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import type { AcceptedWebhook } from '../../carriers/carrier-adapter.js';
import { newId, IdPrefix } from '../../platform/ids.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { GroupCommitter, type BatchOutcome } from '../../platform/database/group-commit.js';
import { isDataError, retryingLockConflicts } from '../../platform/database/pg-errors.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { Statements } from '../../platform/database/statements.js';
import { AfterCommitJobs, type AfterCommitJob, type HandOverOrder } from '../../platform/outbox/after-commit-jobs.js';
import { ProcessCarrierEventJob } from './ingest.jobs.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { callTurn, urgencyOf } from './carrier-event-processor.js';
import { mostUrgent } from '../../platform/database/connection-budget.js';
import { IngestMetrics } from './ingest-metrics.js';
import { afterCommitJobs, newJobsCount } from '../../platform/outbox/statement-jobs.js';

export type IngestStatus = 'accepted' | 'duplicate';

/** Two batches holding the same keys in another order: nothing committed, so run it again. */
const LOCK_CONFLICT_ATTEMPTS = 3;

/**
 * How far a carrier's clock may be ahead of ours when it stamps an event: the dedupe guard looks
 * for a twin stored no earlier than the event's own time less this (twinSince). An hour is far
 * beyond what NTP-kept clocks drift, and costs at most one partition more a day.
 */
export const CARRIER_CLOCK_MARGIN_MS = 3_600_000;

/**
 * The earliest a twin of this event can have been stored: the carrier's own time for it (never
 * later than now, whatever its clock says) less CARRIER_CLOCK_MARGIN_MS; null, so every
 * partition is read, where the carrier gave no time of its own or one we cannot read.
 */
export function twinSince(accepted: AcceptedWebhook, now = Date.now()): string | null {
  const stamped = accepted.carrierEventTime === undefined ? Number.NaN : Date.parse(accepted.carrierEventTime);
  if (Number.isNaN(stamped)) return null;
  return new Date(Math.min(stamped, now) - CARRIER_CLOCK_MARGIN_MS).toISOString();
}

/**
 * Stores accepted webhooks: concurrent deliveries share one statement (one multi-row insert and
 * an outbox job for each row that was new, committed together), and each delivery learns whether
 * it was the new one only after that commit. Calls' events and the rest (inbound SMS, receipts)
 * are batched apart, by their urgency (urgencyOf): a call's event never waits for, nor shares
 * the after-commit places of, an SMS burst's batch.
 */
@Injectable()
export class CarrierEventWriter implements BeforeApplicationShutdown {
  private readonly logger = new Logger(CarrierEventWriter.name);
  private readonly batches: Record<'soon' | 'later', GroupCommitter<AcceptedWebhook, IngestStatus>>;
  /**
   * Per batch class, the hand-over of the latest statement begun (settled once its runs are handed
   * over, or it failed): each statement hands its runs over after the one begun before it, so a
   * call's events reach their turns in the order of their ids however the concurrent statements'
   * commits fall (see insert).
   */
  private readonly handOvers: Record<'soon' | 'later', Promise<void>> = { soon: Promise.resolve(), later: Promise.resolve() };

  constructor(
    private readonly statements: Statements,
    private readonly outbox: OutboxService,
    private readonly metrics: IngestMetrics,
    private readonly afterCommit: AfterCommitJobs,
    config: AppConfig,
  ) {
    const committer = () =>
      new GroupCommitter<AcceptedWebhook, IngestStatus>((items) => this.writeBatch(items), {
        maxBatch: config.INGEST_BATCH_MAX,
        maxInFlight: config.INGEST_BATCH_CONCURRENCY,
      });
    this.batches = { soon: committer(), later: committer() };
    metrics.readWaitingFrom(() => this.batches.soon.waiting + this.batches.later.waiting);
  }

  /** Resolves after the commit that holds this delivery's row (or shows it was already stored). */
  write(accepted: AcceptedWebhook): Promise<IngestStatus> {
    return this.batches[batchClass(accepted)].submit(accepted);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([this.batches.soon.drained(), this.batches.later.drained()]);
  }

  private async writeBatch(items: AcceptedWebhook[]): Promise<BatchOutcome<IngestStatus>[]> {
    this.metrics.batchSize.observe(items.length);
    try {
      return (await retryingLockConflicts(() => this.insert(items), LOCK_CONFLICT_ATTEMPTS)).map((value) => ({ ok: true, value }));
    } catch (err) {
      if (isDataError(err) && items.length > 1) {
        // One body Postgres cannot hold spoils the statement for all: write each alone, so only
        // that delivery is refused, and each keeps its own outcome (one lost connection must not
        // answer 503 for a neighbour that committed).
        return Promise.all(items.map((item) => this.writeBatch([item]).then(([outcome]) => outcome, (error: unknown) => ({ ok: false as const, error }))));
      }
      if (isDataError(err)) return [{ ok: false, error: err }];
      this.metrics.batchFailures.inc();
      this.logger.warn(`batch of ${items.length} carrier events not stored: ${(err as Error).message}`);
      throw err;
    }
  }

  private async insert(items: AcceptedWebhook[]): Promise<IngestStatus[]> {
    const ids = items.map(() => newId(IdPrefix.CarrierEvent));
    // This statement's place in its class's order, taken as its ids are minted (each attempt its
    // own: a retried batch mints later ids). Two statements run at once (INGEST_BATCH_CONCURRENCY)
    // and the later one may commit first: handing its runs over then, a call's later event would
    // run first, find the earlier one committed and untried (untriedEarlierEventSql), and leave
    // the set statement for a transaction that takes both (seen as the slowest 1-2 % of hand-offs,
    // issue #43). Its runs wait for the earlier statement's instead; its commit and the carrier's
    // answer do not.
    const lane = batchClass(items[0]);
    const after = this.handOvers[lane];
    let done!: () => void;
    this.handOvers[lane] = new Promise((resolve) => (done = resolve));
    try {
      return await this.insertInOrder(items, ids, { after, done });
    } catch (err) {
      done();
      throw err;
    }
  }

  private async insertInOrder(items: AcceptedWebhook[], ids: string[], handOverOrder: HandOverOrder): Promise<IngestStatus[]> {
    const now = Date.now();
    // Rows in key order, so two batches sharing keys lock them in the same order.
    const order = items.map((_, i) => i).sort((a, b) => compareKeys(items[a], items[b]));
    // The whole batch as one JSON parameter: JSON.stringify escapes the bodies natively, where
    // a Postgres array literal would be escaped element by element in JS (seen in the profile).
    const batch = JSON.stringify(order.map((i) => ({
      id: ids[i],
      carrier: items[i].event.carrier,
      carrier_event_id: items[i].event.carrierEventId,
      event_type: items[i].carrierEventType,
      kind: items[i].event.kind,
      payload: items[i].payloadJson,
      normalized: JSON.stringify(items[i].event),
      signature_nonce: items[i].signatureNonce ?? null,
      twin_since: twinSince(items[i], now),
    })));
    // One statement, so one round trip and atomic on its own: the rows, and a processing job for
    // each row that was new. A row is new when carrier_event_twin (migrations 0042, 0056) finds no
    // stored twin, by key or by signature nonce, under the key's advisory lock, in the partitions
    // from twin_since on (all of them where the carrier gave no time of its own): that is the
    // dedupe guard across partition boundaries, also for two copies inside this one statement
    // (the second sees the first). The partitions' own unique indexes stay as a backstop (ON
    // CONFLICT DO NOTHING, no target: any of them).
    const stmt = new CteStatement();
    // In a process that also works the carrier-events queue (the `all` role), the new events'
    // processing jobs run here once the statement returns, with no relay batch or Redis hop;
    // with too few places free (this process is behind), they go through the relay to any worker.
    // Each job's id is its event's id: the run starts from the event held here, not a read, and
    // the events of one call run in turn (callTurn), not side by side waiting on its lock, and
    // ahead of other realtime work waiting for a connection.
    const stored = new Map(ids.map((id, i) => [id, { id, normalized: items[i].event }]));
    const rows = await this.afterCommit.aroundStatement(
      [ProcessCarrierEventJob],
      items.length,
      stmt,
      () => this.insertStatement(stmt, batch),
      // In arrival order (the ids', minted in it), not the rows' key order: a call's events then run
      // in the order a run of one of them takes the others in (untriedEarlierEventSql), so a set
      // statement never finds its event behind an untried twin stored with it.
      (inserted) =>
        (inserted[0]?.afterCommit ?? [])
          .sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0))
          .map((job) => {
            const event = stored.get(job.jobId);
            return { ...job, prefetched: event, turn: callTurn(event?.normalized), urgency: urgencyOf(event?.normalized) };
          }),
      // A batch holds calls' events or others only (write() batches them apart).
      { urgency: mostUrgent(items.map((item) => urgencyOf(item.event))), order: handOverOrder },
    );
    this.outbox.jobsWritten(rows[0]?.jobs ?? 0);
    const inserted = new Set(rows.map((r) => r.id));
    return ids.map((id) => (inserted.has(id) ? 'accepted' : 'duplicate'));
  }

  /** The batch's rows, and a processing job for each row that was new (see insert). */
  private insertStatement(stmt: CteStatement, batch: string): Promise<{ id: string; jobs: number; afterCommit: AfterCommitJob[] }[]> {
    const newEvents = stmt.with(
      'inserted',
      // created_at from the id: the row's partition follows from its id (lookups by id prune).
      `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce, created_at)
       SELECT id, carrier, carrier_event_id, event_type, kind, payload::jsonb, normalized::jsonb, signature_nonce, onceline_id_time(id)
         FROM json_to_recordset(${stmt.param(batch, 'json')})
              AS e(id text, carrier text, carrier_event_id text, event_type text, kind text, payload text, normalized text, signature_nonce text, twin_since timestamptz)
        WHERE carrier_event_twin(carrier, carrier_event_id, signature_nonce, twin_since) IS NULL
       ON CONFLICT DO NOTHING
       RETURNING id`,
    );
    // Named by the new event's id: no stored job can hold it (newIds).
    this.outbox.jobsFromCte(stmt, 'jobs', newEvents, ProcessCarrierEventJob, { id: 'id', data: `jsonb_build_object('carrierEventId', id)`, newIds: true });
    return this.statements.query(stmt.text(`SELECT id, (${newJobsCount(stmt)})::int AS jobs, ${afterCommitJobs(stmt)} AS "afterCommit" FROM ${newEvents}`), stmt.params);
  }
}

/** Calls' events and the rest are batched apart (CarrierEventWriter). */
function batchClass(accepted: AcceptedWebhook): 'soon' | 'later' {
  return urgencyOf(accepted.event) === 'later' ? 'later' : 'soon';
}

function compareKeys(a: AcceptedWebhook, b: AcceptedWebhook): number {
  if (a.event.carrier !== b.event.carrier) return a.event.carrier < b.event.carrier ? -1 : 1;
  if (a.event.carrierEventId === b.event.carrierEventId) return 0;
  return a.event.carrierEventId < b.event.carrierEventId ? -1 : 1;
}
