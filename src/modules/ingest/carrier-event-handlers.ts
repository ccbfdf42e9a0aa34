import { applyDecorators, Injectable, Logger, SetMetadata, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { Tx } from '../../platform/database/tx.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { HANDLED_KINDS, type IgnoredEvent, type NormalizedEvent } from '../../carriers/normalized-event.js';
import { findDecoratedMethods, UniqueRegistry } from '../../platform/registry.js';
import type { JobDefinition } from '../../platform/outbox/job-definition.js';

/** Kinds a module can own; `ignored` events are never dispatched. */
export type HandledKind = (typeof HANDLED_KINDS)[number];

/**
 * The event a handler of kind K receives. Not `Extract<NormalizedEvent, { kind: K }>`: CallEvent
 * carries four kinds, so Extract would give `never` for every call kind.
 */
export type EventOfKind<K extends HandledKind> = NormalizedEvent extends infer E
  ? E extends { kind: infer Kinds } ? (K extends Kinds ? E & { kind: K } : never) : never
  : never;

/** A carrier event as stored: its row id and normalized form (what a run reads, and a batch carries). */
export interface StoredCarrierEvent {
  id: string;
  normalized: NormalizedEvent;
}

export interface CarrierEventContext {
  carrierEventId: string;
  /** 1 on the first run; retries and replays count up. */
  attempt: number;
  /** True when an operator re-ran the event (carrier-events:replay). */
  replay: boolean;
  /** When ingest stored it: the event's place in arrival order (never the carrier's clock). */
  receivedAt: Date;
  /**
   * Adds a write to the statement that marks this event processed once the handler has returned
   * (CTE fragments over the caller's own tables): a write that only records what the handler did
   * (a call's timeline entry) then costs no round trip of its own. It commits or rolls back with
   * the handler's work, and runs after it: nothing the handler reads may depend on it.
   */
  withProcessedMark(fragment: (stmt: CteStatement) => void): void;
}

/**
 * A handler's context for one run, and the statement its withProcessedMark fragments go into:
 * the runner ends that statement with the UPDATE that marks the event processed (processedMarkSql).
 */
export function handlerContext(fields: Omit<CarrierEventContext, 'withProcessedMark'>): { context: CarrierEventContext; mark: CteStatement } {
  const mark = new CteStatement();
  return { context: { ...fields, withProcessedMark: (fragment) => fragment(mark) }, mark };
}

/**
 * Does the owning module's work for one event inside `tx`, the transaction that also marks the
 * event processed. It must be safe to run again (guarded UPDATEs): a replay re-runs it. It may
 * return a note saying why it did nothing (kept on the carrier event, e.g. "no owner for +1555…").
 */
export type CarrierEventHandler<K extends HandledKind> = (
  event: EventOfKind<K>,
  tx: Tx,
  context: CarrierEventContext,
) => Promise<void | string>;

/**
 * Thrown by a handler when what the event refers to is not there yet (a receipt that outran the
 * dispatcher's commit). The event is retried with exponential backoff and jitter until
 * CARRIER_EVENT_RETRY_DEADLINE_SECONDS after it was ingested, then recorded as failed.
 * Any other error is permanent: recorded on the event at once, no retry, replayable.
 */
export class RetryLaterError extends Error {}

/**
 * Thrown by a handler that owns the kind but not yet this carrier's flavour of it (Twilio Voice
 * callbacks before Twilio call flows ship): the event is left unconsumed, exactly as if no
 * handler existed, so `carrier-events:replay` runs it once one does.
 */
export class NotHandledYetError extends Error {}

export const CARRIER_EVENT_HANDLER_METADATA = 'onceline:carrier-event-handler';
export const BATCH_STATEMENT_HANDLER_METADATA = 'onceline:carrier-event-handler:batch-statement';
export const BATCH_KEY_METADATA = 'onceline:carrier-event-handler:batch-key';
export const SETS_HANDLER_METADATA = 'onceline:carrier-event-handler:sets';
export const SETS_OPTIONS_METADATA = 'onceline:carrier-event-handler:sets-options';

/**
 * One statement for a batch of events of one kind. The events come in as rows of a CTE (one per
 * event, the handler's columns plus `event_id`); every write the handler adds selects, per event,
 * FROM the rows `consume` returns, so each event keeps its own guard.
 */
export interface EventBatchRun {
  stmt: CteStatement;
  /**
   * Adds the events' rows: `columns` is the recordset's column list (`name type, ...`), `rows` one
   * object per event in the order of the events, with those keys. Returns the CTE of the rows,
   * which also has `event_id`. Call it once, first.
   */
  input(columns: string, rows: object[]): string;
  /**
   * Adds the consumption of the events (and, in a job's run, the jobs' claims), each gated on its
   * own readiness; returns the CTE of `consumed_event_id`, one row per event this run consumed.
   * Every write the handler adds after it selects FROM that CTE, so nothing is written for an
   * event a twin run consumed, a replayed one, or one not ready. Call it once, after the CTEs
   * that `ready` and `note` read.
   */
  consume(consumption?: BatchConsumption): string;
  /**
   * For call events decided in sets (DecidesCarrierEventsInSets): takes the turn of each call the
   * input names (`sessionColumn`: its call session id), the lock every run of a call's event
   * holds while it decides, once per call, before any row is read, and only where it is free now
   * (the statement never waits on one call with others' turns held). Returns the CTE of
   * `event_id` and `received_at` (when ingest stored it) of the input rows whose turn the
   * statement holds and that no earlier untried event of their call precedes (that one's run
   * handles them in order); the others are for the transaction path. Rows read after it under a row lock are as the call's last turn left
   * them. Call it after `input`, before the CTEs that read it.
   */
  takeCallTurns(sessionColumn: string): string;
}

/** How the events of a batch are consumed: each a function of an input row's alias, giving SQL. */
export interface BatchConsumption {
  /**
   * SQL boolean: this event can be applied now (none: always). An event not ready gets nothing
   * written, its job is not claimed and its event not consumed: its run goes down the general
   * path, which retries it later (RetryLaterError) while the rest of the batch proceeds.
   */
  ready?: (row: string) => string;
  /** SQL text: why the event is not ready (kept on the event while it waits). */
  notReadyReason?: (row: string) => string;
  /** SQL text: the note kept on the event (why it changed nothing), NULL for none. */
  note?: (row: string) => string;
}

/**
 * A handler that writes a batch of events of its kind in one statement: the jobs that arrive
 * together (an ingest batch, concurrent runs from Redis) cost one round trip and one commit, and
 * the job's claim, the event's consumption and every side effect commit together, without BEGIN
 * and COMMIT. A single event is a batch of one: the processor runs it so inside a transaction
 * (replays, the general path).
 */
export type BatchCarrierEventHandler<K extends HandledKind> = (events: EventOfKind<K>[], run: EventBatchRun) => void | Promise<void>;

/**
 * Events of one key never share a statement: a later one goes into the next statement, in arrival
 * order (two receipts of one message in one UPDATE ... FROM would apply only one of them).
 * undefined: the event may share a statement with any other.
 */
export type BatchKey<K extends HandledKind> = (event: EventOfKind<K>) => string | undefined;

/** A batch handler as registered: the handler and how its events are kept apart. */
export interface BatchHandling {
  handler: BatchCarrierEventHandler<HandledKind>;
  key?: BatchKey<HandledKind>;
}

/**
 * A kind's events decided in sets first (DecidesCarrierEventsInSets): a batch handler whose
 * events not ready go at once to the kind's handler in a transaction, and which events to offer
 * it at all (`when`, a hint: none, every event).
 */
export interface SetsHandling extends BatchHandling {
  /** The method that decides them (`Provider.method`): its batches are kept apart from another set handler's of the kind. */
  name?: string;
  when?: (event: NormalizedEvent) => boolean;
  /**
   * The job this process runs right after the statement commits, when the statement creates one
   * (a hand-off's dial command); none: the first attempts of customer webhook deliveries.
   */
  afterCommit?: JobDefinition;
}

/** The note an event no module acts on is consumed with. */
export function ignoredNote(event: IgnoredEvent): string {
  return `ignored: carrier event type ${event.carrierEventType}`;
}

/** How the events of a kind are handled (CarrierEventHandlers.handlingOf): one handler, of one shape. */
export type EventHandling =
  | { shape: 'ignored'; /** Kept on the event: why nothing was done. */ note: string }
  | ({ shape: 'batch' } & BatchHandling)
  | {
      shape: 'transaction';
      handler: CarrierEventHandler<HandledKind>;
      /**
       * Decided in sets first, where it can: a kind may have several set handlers, each for the
       * events its `when` takes (a leg's call.initiated, a caller's); an event goes to the first,
       * in registration order, whose `when` takes it (setsFor).
       */
      sets?: readonly SetsHandling[];
    }
  | { shape: 'none' };

/**
 * Marks a method as the one handler of a kind of carrier event. The method has the shape of
 * CarrierEventHandler; the owning module's service declares it, as job handlers declare jobs.
 */
export const HandlesCarrierEvent = (kind: HandledKind) => SetMetadata(CARRIER_EVENT_HANDLER_METADATA, kind);

/**
 * As HandlesCarrierEvent, for a method of the shape BatchCarrierEventHandler; `key`: events that
 * must never share a statement (BatchKey).
 */
export const HandlesCarrierEventsInOneStatement = <K extends HandledKind>(kind: K, { key }: { key?: BatchKey<K> } = {}) =>
  applyDecorators(SetMetadata(BATCH_STATEMENT_HANDLER_METADATA, kind), SetMetadata(BATCH_KEY_METADATA, key));

/**
 * Marks a method of the shape BatchCarrierEventHandler as deciding, in sets, the events of a kind
 * that also has its handler in a transaction (HandlesCarrierEvent): the events of many calls in one
 * statement, each gated on its own readiness, which the method decides under the calls' turns and
 * row locks (EventBatchRun.takeCallTurns). An event it does not find ready (anything but the cases
 * it decides) writes nothing there and goes at once to the handler in a transaction, whose
 * decision it is. `when`: a method of the same provider (its name) saying which events to offer
 * the set statement at all (the others go straight to the transaction); it decides nothing.
 * `afterCommit`: the job its statement creates that this process runs once it commits
 * (SetsHandling.afterCommit). The method may read before it builds (an async method): what it
 * read is a hint its statement's guards check under the row locks.
 */
export const DecidesCarrierEventsInSets = <K extends HandledKind>(kind: K, { key, when, afterCommit }: { key?: BatchKey<K>; when?: string; afterCommit?: JobDefinition } = {}) =>
  applyDecorators(SetMetadata(SETS_HANDLER_METADATA, kind), SetMetadata(SETS_OPTIONS_METADATA, { key, when, afterCommit }));

/**
 * Which method handles which kind of carrier event, found at boot from @HandlesCarrierEvent.
 * Boot fails on a kind with two handlers or an unknown kind. A kind nobody handles yet is
 * allowed: its events are not consumed; they wait (marked `unhandled_since`) for
 * `carrier-events:replay` once a handler ships.
 */
@Injectable()
export class CarrierEventHandlers implements OnModuleInit {
  private readonly logger = new Logger(CarrierEventHandlers.name);
  private readonly handlers = new UniqueRegistry<HandledKind, CarrierEventHandler<HandledKind>>('carrier event handler for');
  private readonly batchHandlers = new UniqueRegistry<HandledKind, BatchHandling>('carrier event handler for');
  private readonly setsHandlers = new UniqueRegistry<HandledKind, SetsHandling[]>('carrier event set handlers for');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    for (const found of findDecoratedMethods<HandledKind>(this.discovery, this.scanner, this.reflector, CARRIER_EVENT_HANDLER_METADATA)) {
      if (!(HANDLED_KINDS as readonly string[]).includes(found.value)) throw new Error(`${found.name} handles unknown carrier event kind "${found.value}"`);
      const method = (found.instance as Record<string, CarrierEventHandler<HandledKind>>)[found.method];
      this.handlers.register(found.value, method.bind(found.instance));
    }
    for (const found of findDecoratedMethods<HandledKind>(this.discovery, this.scanner, this.reflector, BATCH_STATEMENT_HANDLER_METADATA)) {
      if (!(HANDLED_KINDS as readonly string[]).includes(found.value)) throw new Error(`${found.name} handles unknown carrier event kind "${found.value}"`);
      // One handler per kind, whichever its shape.
      if (this.has(found.value)) throw new Error(`carrier event handler for "${found.value}" is registered twice`);
      const method = (found.instance as Record<string, BatchCarrierEventHandler<HandledKind>>)[found.method];
      const key = this.reflector.get<BatchKey<HandledKind> | undefined>(BATCH_KEY_METADATA, method);
      this.batchHandlers.register(found.value, { handler: method.bind(found.instance), key });
    }
    const sets = new Map<HandledKind, SetsHandling[]>();
    for (const found of findDecoratedMethods<HandledKind>(this.discovery, this.scanner, this.reflector, SETS_HANDLER_METADATA)) {
      if (!this.handlers.has(found.value)) throw new Error(`${found.name} decides "${found.value}" in sets, which has no handler in a transaction for what it leaves`);
      const instance = found.instance as Record<string, (...args: never[]) => unknown>;
      const method = instance[found.method];
      const { key, when, afterCommit } = this.reflector.get<{ key?: BatchKey<HandledKind>; when?: string; afterCommit?: JobDefinition }>(SETS_OPTIONS_METADATA, method);
      if (when !== undefined && typeof instance[when] !== 'function') throw new Error(`${found.name}: no method ${when} to choose its events`);
      const ofKind = sets.get(found.value) ?? [];
      // Several set handlers of one kind each choose their events; one that takes every event would hide the others.
      if (ofKind.length > 0 && (when === undefined || ofKind.some((other) => other.when === undefined))) throw new Error(`${found.name}: "${found.value}" has several set handlers, each needs its own \`when\``);
      ofKind.push({
        name: found.name,
        handler: method.bind(found.instance) as BatchCarrierEventHandler<HandledKind>,
        key,
        when: when === undefined ? undefined : (instance[when].bind(found.instance) as (event: NormalizedEvent) => boolean),
        afterCommit,
      });
      sets.set(found.value, ofKind);
    }
    for (const [kind, handlings] of sets) this.setsHandlers.register(kind, handlings);
    const waiting = HANDLED_KINDS.filter((kind) => !this.has(kind));
    if (waiting.length > 0) this.logger.log(`no handler yet for ${waiting.join(', ')}: such events are kept unprocessed`);
  }

  private has(kind: HandledKind): boolean {
    return this.handlers.has(kind) || this.batchHandlers.has(kind);
  }

  /** Tests: puts a handler (or none) in place of the registered one; returns the undo. */
  override<K extends HandledKind>(kind: K, handler: CarrierEventHandler<K> | undefined): () => void {
    const undoBatch = this.batchHandlers.replace(kind, undefined);
    const undoSets = this.setsHandlers.replace(kind, undefined);
    const undo = this.handlers.replace(kind, handler as unknown as CarrierEventHandler<HandledKind> | undefined);
    return () => {
      undo();
      undoSets();
      undoBatch();
    };
  }

  /**
   * The one dispatch by kind: the event's handler and its shape, or `ignored` (no module acts on
   * it) or `none` (no module handles it yet). A job's one-statement run (OneStatementRuns) and the
   * run in a transaction (CarrierEventProcessor) both take it from here and switch on the shape.
   */
  handlingOf(event: NormalizedEvent): EventHandling {
    if (event.kind === 'ignored') return { shape: 'ignored', note: ignoredNote(event) };
    const { kind } = event;
    const batch = this.batchHandlers.get(kind);
    if (batch) return { shape: 'batch', ...batch };
    const inTransaction = this.handlers.get(kind);
    if (inTransaction) return { shape: 'transaction', handler: inTransaction, sets: this.setsHandlers.get(kind) };
    return { shape: 'none' };
  }

  /**
   * The set handler an event is offered to (the first of its kind's whose `when` takes it), or
   * none: it goes straight to its transaction. Each `when` is asked at most once per run here;
   * one may also consult another's (CallEndsInSets.endOfCall is hangupOfOurLeg's complement), so
   * a `when` that remembers what it was asked (CallEventSets) answers the same when asked again
   * about the same event.
   */
  setsFor(handling: EventHandling, event: NormalizedEvent): SetsHandling | undefined {
    if (handling.shape !== 'transaction') return undefined;
    return handling.sets?.find((sets) => sets.when?.(event) ?? true);
  }
}
