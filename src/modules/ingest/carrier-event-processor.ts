import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { createdAtOfId } from '../../platform/retention/id-partition-key.js';
import type { Urgency } from '../../platform/database/connection-budget.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import { isDatabaseUnavailable, isSerializationConflict, storedMessage } from '../../platform/database/pg-errors.js';
import { ProcessCarrierEventJob } from './ingest.jobs.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { buildBatchStatement } from './one-statement-build.js';
import { callTurnLockSql, untriedEarlierEventSql } from './call-turns.js';
import {
  CarrierEventHandlers,
  handlerContext,
  NotHandledYetError,
  RetryLaterError,
  type BatchCarrierEventHandler,
  type CarrierEventHandler,
  type EventHandling,
  type HandledKind,
} from './carrier-event-handlers.js';
import type { NormalizedEvent } from '../../carriers/normalized-event.js';
import { newJobsCount } from '../../platform/outbox/statement-jobs.js';
import { RecordAfterRollbackError } from '../../platform/outbox/job-handler.js';

/** `unhandled`: no module handles the event's kind yet; it stays unconsumed, waiting for a replay. */
export type ProcessOutcome = 'processed' | 'ignored' | 'unhandled' | 'retry_scheduled' | 'failed' | 'already_processed' | 'not_found';

export interface ProcessResult {
  id: string;
  outcome: ProcessOutcome;
  error?: string;
}

/** Most earlier untried events of a call one run takes first (the rest take their own turns). */
const EARLIER_EVENTS_MAX = 50;

/** The turn of an event of a call (AfterCommitJob.turn): its call session; none for other events. */
export function callTurn(event: NormalizedEvent | undefined): string | undefined {
  return event && 'callSessionId' in event ? event.callSessionId : undefined;
}

/**
 * What lockCall found: `locked`, an unprocessed event of a call, whose call's lock is now held;
 * `unlocked`, an unprocessed event of no call (no lock); `processed`, an event processed already.
 */
export type CallLock = 'locked' | 'unlocked' | 'processed';

/** A carrier event's row as lockEvent read it, locked. */
interface LockedEvent {
  normalized: NormalizedEvent;
  attempts: number;
  age_ms: number;
  processed: boolean;
  created_at: Date;
  /** The call's earlier untried events, oldest first (withEarlier); empty otherwise. */
  earlier: string[];
}

/**
 * How soon an event's processing gets a connection of its lane (Urgency), a person on the line
 * first: a leg's answer `now` (someone picked up and hears silence until the bridge), and so the
 * call.initiated of a leg we dialed (its answer, if it comes, waits for it in the call's turn); a
 * new call's first event (the caller's call.initiated) `new`; any other event of a call `soon`
 * (a hand-off is what a caller hears next); any other event (an inbound SMS, a receipt) `later`.
 */
export function urgencyOf(event: NormalizedEvent | undefined): Urgency {
  if (event === undefined || callTurn(event) === undefined) return 'later';
  if (event.kind === 'call.answered') return 'now';
  if (event.kind !== 'call.initiated') return 'soon';
  return 'ourLeg' in event && event.ourLeg ? 'now' : 'new';
}

/** Errors the whole job should be retried for (by BullMQ): the database, not the event, failed. */
export function isTransient(err: unknown): boolean {
  return isDatabaseUnavailable(err) || isSerializationConflict(err);
}

/**
 * A batch handler's event is not ready (a receipt before its message): its statement wrote
 * nothing, so the transaction it ran in is as it was before the handler.
 */
class NotReadyError extends RetryLaterError {}

/**
 * A handler that ran without a savepoint failed (RecordAfterRollbackError): the caller rolls its
 * transaction back, then `record` gives the event its outcome in a second one and returns it.
 */
export class HandlerFailedError extends RecordAfterRollbackError<ProcessResult> {}

/**
 * Runs one stored carrier event through its owning module's handler, in the caller's
 * transaction (the job's, or a replay's), and marks it processed in that same transaction.
 */
@Injectable()
export class CarrierEventProcessor {
  constructor(
    private readonly handlers: CarrierEventHandlers,
    private readonly outbox: OutboxService,
    private readonly config: AppConfig,
  ) {}

  /**
   * A batch handler in the general path's transaction, for this one event (a batch of one). The
   * transaction holds the event's row lock and marks it processed itself: the consumption is a
   * gate with a row when the event is ready. Not ready, the statement wrote nothing (every write
   * selects FROM the gate) and NotReadyError sends the event round again later, with the reason.
   */
  private async runBatchHandlerIn(tx: Tx, handler: BatchCarrierEventHandler<HandledKind>, event: NormalizedEvent, eventId: string): Promise<string | void> {
    const stmt = new CteStatement();
    let [ready, reason, note] = ['true', 'NULL', 'NULL'];
    await buildBatchStatement(stmt, handler, [event], [{ eventId }], (batch) => {
      note = `(SELECT ${batch.note('i')} FROM ${batch.input} i)`;
      ready = `EXISTS (SELECT FROM ${batch.ready})`;
      reason = `(SELECT ${batch.notReadyReason('i')} FROM ${batch.input} i)`;
      return stmt.with('cev_consumed', `SELECT event_id AS consumed_event_id FROM ${batch.ready}`);
    });
    const { rows } = await exec<{ ready: boolean; reason: string | null; note: string | null; jobs: number }>(
      tx,
      stmt.text(`SELECT ${ready} AS ready, ${reason}::text AS reason, ${note}::text AS note, (${newJobsCount(stmt)})::int AS jobs`),
      stmt.params,
    );
    if (!rows[0].ready) throw new NotReadyError(rows[0].reason ?? 'not ready');
    this.outbox.jobsWritten(rows[0].jobs, tx);
    return rows[0].note ?? undefined;
  }

  /**
   * A call's events take turns on the call's lock (a transaction advisory lock on its session:
   * the call row may not exist before its first event), and each run first processes, in arrival
   * order and in this transaction, the earlier events of the call that nobody has tried yet.
   * Workers run events in parallel, so a hangup can reach a worker before the answer that came
   * in ahead of it: the answer is then handled first, by the hangup's run, instead of the hangup
   * being sent round the outbox again with a delay. A twin run of an event in flight waits on the
   * lock and then finds it processed. Only untried events count: one already waiting for
   * something (a call not recorded yet) does not hold later ones up.
   *
   * A run of one event (the common case) runs its handler without a savepoint: a handler that
   * fails for a reason of the event's (not the database's) throws HandlerFailedError, and the
   * caller rolls `tx` back and records the outcome in a second transaction (JobRunner does, with
   * the job's claim). A run that also handles earlier events keeps a savepoint per handler, so
   * one event's failure never undoes the others.
   *
   * `callLock`: the caller already ran lockCallSql for this event in `tx` (the job's claim did),
   * and this is what it returned.
   */
  async process(tx: Tx, id: string, { replay = false, callLock }: { replay?: boolean; callLock?: CallLock | null } = {}): Promise<ProcessResult> {
    const lock = callLock !== undefined ? callLock : await this.lockCall(tx, id);
    // Processed is for good (processed_at is never set back): nothing to lock or read.
    if (lock === 'processed') return { id, outcome: 'already_processed' };
    if (lock !== 'locked') return this.processOne(tx, id, replay, await this.lockEvent(tx, id), { alone: true });
    const event = await this.lockEvent(tx, id, { withEarlier: true });
    const earlier = event?.earlier ?? [];
    for (const other of earlier) await this.processOne(tx, other, false, await this.lockEvent(tx, other), { alone: false });
    return this.processOne(tx, id, replay, event, { alone: earlier.length === 0 });
  }

  /**
   * Takes the lock of the event's call (lockCallSql). Not in the statement that reads the event: the lock must be held before the
   * event and the call's earlier events are read (lockEvent), so that these show what the
   * previous holder committed, and under READ COMMITTED a statement reads from the snapshot it
   * took when it started, before any lock it waits for. A statement that reads nothing the lock
   * protects (a job's claim, JobHandler.withClaim) may take it.
   */
  private async lockCall(tx: Tx, id: string): Promise<CallLock | null> {
    const { rows } = await exec<{ lock: CallLock | null }>(tx, `SELECT ${this.lockCallSql('$1')} AS lock`, [id]);
    return rows[0].lock;
  }

  /**
   * lockCall as SQL text over `id`, the SQL text of the event's id (a CallLock, NULL for no such
   * event): an unprocessed event of a call takes its call's lock, any other takes none. A scalar
   * subquery with a CASE, which evaluates only the branch it takes: the lock is taken once, for
   * the one row found, and only for a call's unprocessed event.
   */
  lockCallSql(id: string): string {
    return `(SELECT CASE WHEN e.processed_at IS NOT NULL THEN 'processed'
                         WHEN e.normalized ? 'callSessionId'
                           THEN 'locked' || ${callTurnLockSql(`(e.normalized->>'callSessionId')`)}::text
                         ELSE 'unlocked' END
               FROM carrier_events e WHERE e.id = ${id} AND ${createdAtOfId(id, 'e.created_at')})`;
  }

  /**
   * The event's row, locked (FOR UPDATE: a job run and a replay of one event take turns; the
   * second sees processed_at). `withEarlier`, under the call's lock: in the same statement, the
   * call's earlier untried events (no attempt, no error, not waiting for a handler, unprocessed,
   * before this one by arrival), oldest first, which this run processes first.
   */
  private async lockEvent(tx: Tx, id: string, { withEarlier = false } = {}): Promise<LockedEvent | undefined> {
    const earlier = withEarlier
      ? `ARRAY(SELECT p.id FROM carrier_events p
                WHERE ${untriedEarlierEventSql('p', `e.normalized->>'callSessionId'`, 'e.created_at', 'e.id')}
                ORDER BY p.created_at, p.id LIMIT ${EARLIER_EVENTS_MAX})`
      : `'{}'::text[]`;
    const { rows } = await exec<LockedEvent>(
      tx,
      `SELECT e.normalized, e.attempts, e.processed_at IS NOT NULL AS processed, e.created_at,
              extract(epoch FROM clock_timestamp() - e.created_at)::float8 * 1000 AS age_ms, ${earlier} AS earlier
         FROM carrier_events e WHERE e.id = $1 AND ${createdAtOfId('$1', 'e.created_at')} FOR UPDATE`,
      [id],
    );
    return rows[0];
  }

  /** A handler of any shape as one run in the caller's transaction (a batch handler: a batch of one). */
  private inTransaction(handling: Exclude<EventHandling, { shape: 'ignored' | 'none' }>, id: string): CarrierEventHandler<HandledKind> {
    switch (handling.shape) {
      case 'batch':
        return (event, tx) => this.runBatchHandlerIn(tx, handling.handler, event as NormalizedEvent, id);
      case 'transaction':
        return handling.handler;
    }
  }

  /**
   * `alone`: nothing else this transaction did needs keeping if the handler fails (it handles no
   * other event), so the handler runs without a savepoint (see process).
   */
  private async processOne(tx: Tx, id: string, replay: boolean, row: LockedEvent | undefined, { alone }: { alone: boolean }): Promise<ProcessResult> {
    if (!row) return { id, outcome: 'not_found' };
    if (row.processed) return { id, outcome: 'already_processed' };
    const event = row.normalized;
    const handling = this.handlers.handlingOf(event);
    if (handling.shape === 'ignored') {
      await this.markProcessed(tx, id, handling.note);
      return { id, outcome: 'ignored' };
    }
    if (handling.shape === 'none') {
      await this.markUnhandled(tx, id, event.kind);
      return { id, outcome: 'unhandled' };
    }
    const handler = this.inTransaction(handling, id);
    // Beside other events' work, a savepoint, so a failed handler's partial writes go while the
    // others stay, the outcome is still recorded and the job still completes in this transaction.
    if (!alone) await exec(tx, 'SAVEPOINT carrier_event_handler');
    try {
      const { context, mark } = handlerContext({ carrierEventId: id, attempt: row.attempts + 1, replay, receivedAt: row.created_at });
      const note = await handler(event as never, tx, context);
      // In the try: the handler's fragments ride in this statement, and their failure is its own.
      await this.markProcessed(tx, id, note || null, mark);
      // No RELEASE on success: COMMIT ends the savepoint anyway, and it would cost a round trip.
    } catch (err) {
      if (isTransient(err)) throw err;
      if (!alone) await exec(tx, 'ROLLBACK TO SAVEPOINT carrier_event_handler');
      // Alone, a handler that wrote nothing (an event not ready) leaves the transaction as it was:
      // its outcome is recorded here. Any other failure may have written, or aborted the
      // transaction: it rolls back whole, and the outcome is recorded after (HandlerFailedError).
      else if (!(err instanceof NotReadyError)) {
        const { kind } = event;
        throw new HandlerFailedError(`carrier event ${id}: ${storedMessage(err)}`, (second) => this.recordAfterRollback(second, id, kind, row.age_ms, err), { cause: err });
      }
      return this.recordFailure(tx, id, event.kind, row.age_ms, err);
    }
    return { id, outcome: 'processed' };
  }

  /**
   * A handler's failure (not the database's) as the event's outcome. Each record is one statement
   * guarded on processed_at IS NULL: in the handler's transaction we hold the event's row lock;
   * after a rollback (recordAfterRollback) an event that another run processed since is left as
   * it is, and reported `already_processed`.
   */
  private async recordFailure(tx: Tx, id: string, kind: string, ageMs: number, err: unknown): Promise<ProcessResult> {
    if (err instanceof RetryLaterError) return this.retryLater(tx, id, ageMs, err);
    if (err instanceof NotHandledYetError) {
      return (await this.markUnhandled(tx, id, `${kind} (${err.message})`)) ? { id, outcome: 'unhandled' } : { id, outcome: 'already_processed' };
    }
    const error = storedMessage(err);
    return (await this.markFailed(tx, id, error)) ? { id, outcome: 'failed', error } : { id, outcome: 'already_processed' };
  }

  /**
   * The outcome of a handler that failed alone, in the transaction after the rollback. It takes
   * the call's lock first, as the handler's run did: the call's next run then reads the event's
   * outcome (it is not offered as an untried earlier event while it is being recorded).
   */
  private async recordAfterRollback(tx: Tx, id: string, kind: string, ageMs: number, err: unknown): Promise<ProcessResult> {
    await this.lockCall(tx, id);
    return this.recordFailure(tx, id, kind, ageMs, err);
  }

  /**
   * Out of order: schedules another run as a NEW outbox job with run_at, rather than a BullMQ
   * retry. The wait then lives in Postgres (it survives Redis being flushed or restarted, and a
   * BullMQ attempt count cannot express "until one hour after ingest"), each attempt is a row an
   * operator can see, and the delay is capped to what is left of the deadline.
   */
  private async retryLater(tx: Tx, id: string, ageMs: number, err: RetryLaterError): Promise<ProcessResult> {
    const remainingMs = this.config.CARRIER_EVENT_RETRY_DEADLINE_SECONDS * 1000 - ageMs;
    if (remainingMs <= 0) {
      const error = `retry deadline of ${this.config.CARRIER_EVENT_RETRY_DEADLINE_SECONDS} s passed: ${storedMessage(err)}`;
      return (await this.markFailed(tx, id, error)) ? { id, outcome: 'failed', error } : { id, outcome: 'already_processed' };
    }
    // Guarded on processed_at IS NULL (we hold the row lock): counts the attempt, names the wait.
    const { rows } = await exec<{ attempts: number }>(
      tx,
      `UPDATE carrier_events SET attempts = attempts + 1, note = left($2, 2000), unhandled_since = NULL
        WHERE id = $1 AND ${createdAtOfId('$1')} AND processed_at IS NULL RETURNING attempts`,
      [id, `waiting to retry: ${storedMessage(err)}`],
    );
    if (rows.length === 0) return { id, outcome: 'already_processed' };
    const attempts = rows[0].attempts;
    const delayMs = Math.min(remainingMs, this.backoffMs(attempts));
    await this.outbox.enqueue(tx, {
      job: ProcessCarrierEventJob,
      data: { carrierEventId: id },
      jobId: `${id}-r${attempts}`,
      runAt: new Date(Date.now() + delayMs),
    });
    return { id, outcome: 'retry_scheduled', error: storedMessage(err) };
  }

  /** Exponential (base × 2^(n-1), capped), with equal jitter so a burst of early receipts spreads out. */
  private backoffMs(attempt: number): number {
    const ceiling = Math.min(this.config.CARRIER_EVENT_RETRY_MAX_DELAY_SECONDS * 1000, this.config.CARRIER_EVENT_RETRY_BASE_MS * 2 ** Math.min(attempt - 1, 30));
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  /** `mark`: the statement the handler's withProcessedMark fragments went into (none: a new one). */
  private async markProcessed(tx: Tx, id: string, note: string | null, mark = new CteStatement()): Promise<void> {
    // Only an unprocessed event becomes processed (we hold its row lock since the SELECT); an
    // event that waited for a handler stops waiting in this same statement.
    const idParam = mark.param(id);
    await exec(
      tx,
      mark.text(`UPDATE carrier_events SET processed_at = now(), error = NULL, note = ${mark.param(note)}, attempts = attempts + 1, unhandled_since = NULL
        WHERE id = ${idParam} AND ${createdAtOfId(idParam)} AND processed_at IS NULL`),
      mark.params,
    );
  }

  /**
   * No module handles this kind yet (call.* before Calls ship): the event is not consumed, so a
   * replay runs it once a handler exists. The handler never ran, so attempts is not counted.
   */
  private async markUnhandled(tx: Tx, id: string, kind: string): Promise<boolean> {
    // Only an unprocessed event can wait for a handler; it keeps the time it first found none.
    const { affected } = await exec(
      tx,
      `UPDATE carrier_events SET unhandled_since = coalesce(unhandled_since, now()), error = NULL, note = $2
        WHERE id = $1 AND ${createdAtOfId('$1')} AND processed_at IS NULL`,
      [id, `waiting for a handler for ${kind}`],
    );
    return affected > 0;
  }

  /** Its processing job failed for good (not the handler's verdict): recorded as the event's error. */
  async recordJobGaveUp(tx: Tx, id: string, error: string): Promise<void> {
    await this.markFailed(tx, id, `processing job failed after its last attempt: ${error}`);
  }

  /** True when it recorded the failure (false: the event was processed meanwhile). */
  private async markFailed(tx: Tx, id: string, error: string): Promise<boolean> {
    // processed_at stays NULL: the event is in the failed list (not the unhandled one) until a replay succeeds.
    const { affected } = await exec(tx, `UPDATE carrier_events SET error = $2, attempts = attempts + 1, unhandled_since = NULL WHERE id = $1 AND ${createdAtOfId('$1')} AND processed_at IS NULL`, [id, error]);
    return affected > 0;
  }
}
