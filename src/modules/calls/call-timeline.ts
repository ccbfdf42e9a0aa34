import { Injectable } from '@nestjs/common';
import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { DataSource } from 'typeorm';
import type { CteStatement } from '../../platform/database/cte-statement.js';
import { queryRows } from '../../platform/database/tx.js';
import { createdAtOfId } from '../../platform/retention/id-partition-key.js';
import { FLOW_OUTCOMES, type FlowOutcome } from './call-flow.js';

const at = (example: string, description: string) => ({ format: 'date-time', example, description });

/** One carrier event of a call and what it did (GET /v2/calls/:id/timeline). */
@ApiSchema({ name: 'CallTimelineEntry' })
export class TimelineEntry {
  @ApiProperty({ example: 'cev_01jd5x2m3n4p5q6r7s8t9v0w1x' }) carrier_event_id!: string;
  @ApiProperty({ example: 'call.hangup', description: 'The normalized kind of the carrier event' }) event_type!: string;
  @ApiProperty({ type: 'string', nullable: true, example: 'leg_01jd5x2m3n4p5q6r7s8t9v0w1x', description: 'The leg it was about, if any' }) leg!: string | null;
  @ApiProperty({ enum: FLOW_OUTCOMES, example: 'applied' }) outcome!: FlowOutcome;
  @ApiProperty({ type: 'string', nullable: true, example: null }) note!: string | null;
  @ApiProperty(at('2026-11-03T10:15:04.000Z', "The carrier's time of the event")) occurred_at!: string;
  @ApiProperty(at('2026-11-03T10:15:04.120Z', 'When ingest stored it (the order of the timeline)')) received_at!: string;
  @ApiProperty(at('2026-11-03T10:15:04.180Z', 'When it was handled')) recorded_at!: string;
}

/** Every carrier event that touched a call, with what it did: how support proves a call's history holds one of each. */
@Injectable()
export class CallTimeline {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * The entry as a CTE of `stmt`: the statement that marks its carrier event processed
   * (CarrierEventContext.withProcessedMark), so it commits with the handler's work at no round trip
   * of its own. One entry per stored event (call_timeline_twin): the first recorded, as when
   * each entry was a statement of its own; a second one for the same statement is left out, since
   * the CTEs of one statement run in no set order.
   */
  recordIn(
    stmt: CteStatement,
    entry: { callId: string; carrierEventId: string; eventType: string; leg: string | null; outcome: FlowOutcome; note?: string; occurredAt: string; receivedAt: Date },
  ): void {
    const name = 'call_timeline_entry';
    if (stmt.has(name)) return;
    const eventId = stmt.param(entry.carrierEventId, 'text');
    const values = [stmt.param(entry.callId, 'text'), eventId, ...[entry.eventType, entry.leg, entry.outcome, entry.note ?? null].map((value) => stmt.param(value, 'text')),
      stmt.param(entry.occurredAt, 'timestamptz'), stmt.param(entry.receivedAt, 'timestamptz')];
    // WHERE call_timeline_twin(...) IS NULL: one entry per stored event across the timeline's time partitions (migration 0055).
    stmt.with(
      name,
      `INSERT INTO call_timeline (call_id, carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at) SELECT ${values.join(', ')}
        WHERE call_timeline_twin(${eventId}) IS NULL
       ON CONFLICT DO NOTHING`,
    );
  }

  /**
   * recordIn for many events at once: one entry per row of CTE `decided` (event_id, call_id,
   * leg_id, kind, occurred_at, received_at) whose event is in `consumed`, all with one outcome and
   * note; one entry per stored event, as recordIn (in event order: two statements sharing events
   * take the twin's locks in one order).
   */
  recordManyIn(stmt: CteStatement, decided: string, consumed: string, { outcome, note }: { outcome: FlowOutcome; note?: string }): void {
    stmt.with(
      'call_timeline_entries',
      `INSERT INTO call_timeline (call_id, carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at)
       SELECT e.* FROM (SELECT r.call_id, r.event_id, r.kind, r.leg_id, ${stmt.param(outcome, 'text')}, ${stmt.param(note ?? null, 'text')}, r.occurred_at, r.received_at
                          FROM ${decided} r JOIN ${consumed} k ON k.consumed_event_id = r.event_id ORDER BY r.event_id) e
        WHERE call_timeline_twin(e.event_id) IS NULL
       ON CONFLICT DO NOTHING`,
    );
  }

  /** In arrival order (when ingest stored each event), never sorted by the carrier's clock. */
  async list(callId: string): Promise<TimelineEntry[]> {
    return queryRows(this.dataSource.manager,
      `SELECT carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at, recorded_at FROM call_timeline WHERE call_id = $1 AND ${createdAtOfId('$1', 'onceline_id_time(call_id)')} ORDER BY received_at, carrier_event_id`,
      [callId],
    );
  }
}
