import { Injectable, NotFoundException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { CarrierEventProcessor, HandlerFailedError, type ProcessResult } from './carrier-event-processor.js';
import { queryRows } from '../../platform/database/tx.js';

export interface CarrierEventRow {
  id: string;
  carrier: string;
  carrier_event_id: string;
  event_type: string;
  kind: string;
  attempts: number;
  processed_at: string | null;
  unhandled_since: string | null;
  note: string | null;
  error: string | null;
  created_at: string;
}

/**
 * The unprocessed events an operator acts on, each the WHERE of its partial index:
 * `failed`: a handler failed for good (error set); `unhandled`: no handler for its kind yet.
 */
const WAITING = {
  failed: 'processed_at IS NULL AND error IS NOT NULL',
  unhandled: 'processed_at IS NULL AND unhandled_since IS NOT NULL',
} as const;

export type WaitingEvents = keyof typeof WAITING;

export interface ListOptions {
  failed?: boolean;
  unhandled?: boolean;
  limit?: number;
}

const REPLAY_PAGE = 100;

/** Operator view of carrier events: list them, and re-run failed or unhandled ones through the same handlers. */
@Injectable()
export class CarrierEventsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly uow: UnitOfWork,
    private readonly processor: CarrierEventProcessor,
  ) {}

  /** Newest first; `failed` or `unhandled` (not both): only those waiting for that reason. */
  async list({ failed = false, unhandled = false, limit = 50 }: ListOptions = {}): Promise<CarrierEventRow[]> {
    if (failed && unhandled) throw new Error('list either failed or unhandled events, not both');
    const where = failed ? WAITING.failed : unhandled ? WAITING.unhandled : 'true';
    return queryRows(this.dataSource.manager,
      `SELECT id, carrier, carrier_event_id, event_type, kind, attempts, processed_at, unhandled_since, note, error, created_at
         FROM carrier_events
        WHERE ${where}
        ORDER BY created_at DESC, id DESC
        LIMIT $1`,
      [limit],
    );
  }

  /** Re-runs one event in its own transaction; an already processed one is left alone. */
  async replay(id: string): Promise<ProcessResult> {
    const result = await this.replayOne(id);
    if (result.outcome === 'not_found') throw new NotFoundException(`carrier event ${id} not found`);
    return result;
  }

  /**
   * One event's run in its own transaction; a handler that failed there (HandlerFailedError) has
   * its outcome recorded in a second one, after the first rolled back.
   */
  private async replayOne(id: string): Promise<ProcessResult> {
    try {
      return await this.uow.run((tx) => this.processor.process(tx, id, { replay: true }));
    } catch (err) {
      if (!(err instanceof HandlerFailedError)) throw err;
      return this.uow.run((tx) => err.record(tx));
    }
  }

  /** Every failed event, oldest id first (see replayAll). */
  replayAllFailed(onProgress?: (done: number, total: number) => void): Promise<ProcessResult[]> {
    return this.replayAll('failed', onProgress);
  }

  /** Every event waiting for a handler; those whose kind still has none stay waiting. */
  replayAllUnhandled(onProgress?: (done: number, total: number) => void): Promise<ProcessResult[]> {
    return this.replayAll('unhandled', onProgress);
  }

  /**
   * Every event waiting for `reason`, each in its own transaction. Paged by id so an event that
   * is still waiting after its run is not picked up twice in one run.
   */
  private async replayAll(reason: WaitingEvents, onProgress?: (done: number, total: number) => void): Promise<ProcessResult[]> {
    const [{ total }] = await queryRows(this.dataSource.manager, `SELECT count(*)::int AS total FROM carrier_events WHERE ${WAITING[reason]}`);
    const results: ProcessResult[] = [];
    let after = '';
    for (;;) {
      const page: { id: string }[] = await queryRows(this.dataSource.manager,
        `SELECT id FROM carrier_events WHERE ${WAITING[reason]} AND id > $1 ORDER BY id LIMIT $2`,
        [after, REPLAY_PAGE],
      );
      if (page.length === 0) return results;
      for (const { id } of page) {
        results.push(await this.replayOne(id));
        onProgress?.(results.length, Math.max(total, results.length));
      }
      after = page[page.length - 1].id;
    }
  }
}
