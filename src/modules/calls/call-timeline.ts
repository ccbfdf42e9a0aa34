import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { exec, type Tx } from '../../platform/database/tx.js';
import type { FlowOutcome } from './call-flow.js';

export interface TimelineEntry {
  carrier_event_id: string;
  event_type: string;
  leg: string | null;
  outcome: FlowOutcome;
  note: string | null;
  occurred_at: string;
  received_at: string;
  recorded_at: string;
}

/** Every carrier event that touched a call, with what it did: how support proves a call's history holds one of each. */
@Injectable()
export class CallTimeline {
  constructor(private readonly dataSource: DataSource) {}

  /** Written in the handler's transaction; UNIQUE(carrier_event_id) keeps one entry per stored event. */
  async record(
    tx: Tx,
    entry: { callId: string; carrierEventId: string; eventType: string; leg: string | null; outcome: FlowOutcome; note?: string; occurredAt: string; receivedAt: Date },
  ): Promise<void> {
    await exec(
      tx,
      `INSERT INTO call_timeline (call_id, carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (carrier_event_id) DO NOTHING`,
      [entry.callId, entry.carrierEventId, entry.eventType, entry.leg, entry.outcome, entry.note ?? null, entry.occurredAt, entry.receivedAt],
    );
  }

  /** In arrival order (when ingest stored each event), never sorted by the carrier's clock. */
  async list(callId: string): Promise<TimelineEntry[]> {
    return this.dataSource.query(
      `SELECT carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at, recorded_at FROM call_timeline WHERE call_id = $1 ORDER BY received_at, carrier_event_id`,
      [callId],
    );
  }
}
