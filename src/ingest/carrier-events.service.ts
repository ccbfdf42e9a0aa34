import { Injectable, NotFoundException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { UnitOfWork } from '../database/unit-of-work.js';
import { CarrierEventProcessor, type ProcessResult } from './carrier-event-processor.js';

export interface CarrierEventRow {
  id: string;
  carrier: string;
  carrier_event_id: string;
  event_type: string;
  kind: string;
  attempts: number;
  processed_at: string | null;
  note: string | null;
  error: string | null;
  created_at: string;
}

const REPLAY_PAGE = 100;

/** Operator view of carrier events: list them, and re-run failed ones through the same handlers. */
@Injectable()
export class CarrierEventsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly uow: UnitOfWork,
    private readonly processor: CarrierEventProcessor,
  ) {}

  /** Newest first; `failed`: processing failed for good (error set, not processed). */
  async list({ failed = false, limit = 50 } = {}): Promise<CarrierEventRow[]> {
    return this.dataSource.query(
      `SELECT id, carrier, carrier_event_id, event_type, kind, attempts, processed_at, note, error, created_at
         FROM carrier_events
        WHERE NOT $1 OR (processed_at IS NULL AND error IS NOT NULL)
        ORDER BY created_at DESC, id DESC
        LIMIT $2`,
      [failed, limit],
    );
  }

  /** Re-runs one event in its own transaction; an already processed one is left alone. */
  async replay(id: string): Promise<ProcessResult> {
    const result = await this.uow.run((tx) => this.processor.process(tx, id, { replay: true }));
    if (result.outcome === 'not_found') throw new NotFoundException(`carrier event ${id} not found`);
    return result;
  }

  /**
   * Every failed event, oldest first, each in its own transaction. Paged by id so an event that
   * fails again is not picked up twice in one run.
   */
  async replayAllFailed(onProgress?: (done: number, total: number) => void): Promise<ProcessResult[]> {
    const [{ total }] = await this.dataSource.query(
      `SELECT count(*)::int AS total FROM carrier_events WHERE processed_at IS NULL AND error IS NOT NULL`,
    );
    const results: ProcessResult[] = [];
    let after = '';
    for (;;) {
      const page: { id: string }[] = await this.dataSource.query(
        `SELECT id FROM carrier_events WHERE processed_at IS NULL AND error IS NOT NULL AND id > $1 ORDER BY id LIMIT $2`,
        [after, REPLAY_PAGE],
      );
      if (page.length === 0) return results;
      for (const { id } of page) {
        results.push(await this.uow.run((tx) => this.processor.process(tx, id, { replay: true })));
        onProgress?.(results.length, Math.max(total, results.length));
      }
      after = page[page.length - 1].id;
    }
  }
}
