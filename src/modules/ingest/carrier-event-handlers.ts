import { Injectable } from '@nestjs/common';
import type { Tx } from '../../platform/database/tx.js';
import type { NormalizedEvent, NormalizedEventKind } from '../../carriers/normalized-event.js';

/** Kinds a module can own; `ignored` events are never dispatched. */
export type HandledKind = Exclude<NormalizedEventKind, 'ignored'>;

/**
 * The event a handler of kind K receives. Not `Extract<NormalizedEvent, { kind: K }>`: CallEvent
 * carries four kinds, so Extract would give `never` for every call kind.
 */
export type EventOfKind<K extends HandledKind> = NormalizedEvent extends infer E
  ? E extends { kind: infer Kinds } ? (K extends Kinds ? E & { kind: K } : never) : never
  : never;

export interface CarrierEventContext {
  carrierEventId: string;
  /** 1 on the first run; retries and replays count up. */
  attempt: number;
  /** True when an operator re-ran the event (carrier-events:replay). */
  replay: boolean;
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
 * Which module handles which kind of carrier event. Messaging, Calls, ... call `register` from
 * their onModuleInit; an event of a kind nobody registered is not consumed: it waits (marked
 * `unhandled_since`) for `carrier-events:replay` once a handler ships.
 */
@Injectable()
export class CarrierEventHandlers {
  private readonly handlers = new Map<HandledKind, CarrierEventHandler<HandledKind>>();

  register<K extends HandledKind>(kind: K, handler: CarrierEventHandler<K>): void {
    if (this.handlers.has(kind)) throw new Error(`a carrier event handler for ${kind} is already registered`);
    this.handlers.set(kind, handler as unknown as CarrierEventHandler<HandledKind>);
  }

  /** Tests: puts a handler (or none) in place of the registered one; returns the undo. */
  override<K extends HandledKind>(kind: K, handler: CarrierEventHandler<K> | undefined): () => void {
    const previous = this.handlers.get(kind);
    if (handler) this.handlers.set(kind, handler as unknown as CarrierEventHandler<HandledKind>);
    else this.handlers.delete(kind);
    return () => (previous ? this.handlers.set(kind, previous) : this.handlers.delete(kind));
  }

  get(kind: NormalizedEventKind): CarrierEventHandler<HandledKind> | undefined {
    return kind === 'ignored' ? undefined : this.handlers.get(kind);
  }
}
