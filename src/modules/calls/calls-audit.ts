import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** One line of a carrier's call log (Telnyx call_session_id, Twilio call_sid). */
export interface CarrierLogEntry {
  carrierCallId: string;
  status: string;
  startTime?: string;
  endTime?: string;
  durationSecs?: number;
}

/** Durations further apart than this (seconds) are a mismatch: clocks and rounding differ by less. */
export const DURATION_TOLERANCE_SECONDS = 5;
/** Without `since`, our calls are compared with a log only around the period it covers. */
const WINDOW_MARGIN_MS = 5 * 60_000;

/** What one audit covers: the calls that ended at or after `since` (both sides), of one account or of all. */
export interface AuditScope {
  since?: Date;
  accountId?: string;
}

export interface CallAuditReport {
  ok: boolean;
  carrier_calls: number;
  our_calls: number;
  /** The carrier completed (and charged) a call we have no row for: a bug every time (audit against the carrier, docs/exactly-once.md). */
  missing_here: { carrier_call_id: string; status: string; start_time: string | null }[];
  /** A call we ended that the carrier's log does not list. */
  missing_at_carrier: { call_id: string; carrier_call_id: string; status: string }[];
  duration_mismatches: { call_id: string; carrier_call_id: string; ours: number; carrier: number }[];
  /** The carrier completed and billed a call (duration over 0) that we never recorded as answered: the customer was charged for a call we call missed. */
  unanswered_here: { call_id: string; carrier_call_id: string; status: string; carrier_duration: number }[];
  invalid_lines: number[];
}

/** Log lines we cannot read: reported by number, never guessed at. */
export function parseCarrierLog(text: string): { entries: CarrierLogEntry[]; invalidLines: number[] } {
  const entries: CarrierLogEntry[] = [];
  const invalidLines: number[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(line);
    } catch {
      invalidLines.push(index + 1);
      return;
    }
    const id = value?.call_session_id ?? value?.call_sid;
    const duration = value?.duration_secs === undefined || value?.duration_secs === null ? undefined : Number(value.duration_secs);
    if (typeof id !== 'string' || id === '' || typeof value.status !== 'string' || (duration !== undefined && !Number.isFinite(duration))) {
      invalidLines.push(index + 1);
      return;
    }
    const time = (v: unknown) => (typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? v : undefined);
    entries.push({ carrierCallId: id, status: value.status.toLowerCase(), startTime: time(value.start_time), endTime: time(value.end_time), durationSecs: duration });
  });
  return { entries, invalidLines };
}

/**
 * Reads the carrier's call log beside our calls table (audit against the carrier, docs/exactly-once.md: the fastest check there is). Each
 * finding is listed once, with both sides' ids. Read only, one snapshot.
 */
@Injectable()
export class CallsAudit {
  constructor(private readonly dataSource: DataSource) {}

  async compare(allEntries: CarrierLogEntry[], invalidLines: number[], scope: AuditScope = {}): Promise<CallAuditReport> {
    const { since } = scope;
    const entries = since ? allEntries.filter((e) => !e.endTime || Date.parse(e.endTime) >= since.getTime()) : allEntries;
    const byId = new Map<string, CarrierLogEntry>();
    for (const entry of entries) if (!byId.has(entry.carrierCallId) || entry.status === 'completed') byId.set(entry.carrierCallId, entry);
    const times = entries.flatMap((e) => [e.startTime, e.endTime]).filter((t): t is string => !!t).map(Date.parse);
    const from = since ?? (times.length ? new Date(Math.min(...times) - WINDOW_MARGIN_MS) : null);
    const to = since ? null : times.length ? new Date(Math.max(...times) + WINDOW_MARGIN_MS) : null;
    const account = scope.accountId ?? null;
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.startTransaction('REPEATABLE READ');
      await runner.query('SET TRANSACTION READ ONLY');
      const listed: { id: string; carrier_call_id: string; status: string; duration_seconds: number | null; answered: boolean }[] = await runner.query(
        // WHERE: the calls the log names, of the audited account when there is one.
        `SELECT id, carrier_call_id, status, duration_seconds, answered_at IS NOT NULL AS answered FROM calls
          WHERE carrier_call_id = ANY($1::text[]) AND ($2::text IS NULL OR account_id = $2)`,
        [[...byId.keys()], account],
      );
      const ours: { id: string; carrier_call_id: string; status: string }[] = await runner.query(
        `SELECT id, carrier_call_id, status FROM calls
          WHERE ended_at IS NOT NULL AND carrier_call_id <> id AND NOT (carrier_call_id = ANY($1::text[]))
            AND ($2::timestamptz IS NULL OR ended_at >= $2) AND ($3::timestamptz IS NULL OR ended_at <= $3)
            AND ($4::text IS NULL OR account_id = $4)
          ORDER BY id`,
        [[...byId.keys()], from, to, account],
      );
      await runner.commitTransaction();
      const known = new Map(listed.map((c) => [c.carrier_call_id, c]));
      const missingHere = [...byId.values()]
        .filter((e) => e.status === 'completed' && !known.has(e.carrierCallId))
        .map((e) => ({ carrier_call_id: e.carrierCallId, status: e.status, start_time: e.startTime ?? null }));
      const mismatches = listed
        .filter((c) => c.answered && c.duration_seconds !== null)
        .flatMap((c) => {
          const carrier = byId.get(c.carrier_call_id)?.durationSecs;
          return carrier !== undefined && Math.abs(carrier - c.duration_seconds!) > DURATION_TOLERANCE_SECONDS
            ? [{ call_id: c.id, carrier_call_id: c.carrier_call_id, ours: c.duration_seconds!, carrier }]
            : [];
        });
      const unansweredHere = listed
        .filter((c) => !c.answered)
        .flatMap((c) => {
          const entry = byId.get(c.carrier_call_id)!;
          return entry.status === 'completed' && (entry.durationSecs ?? 0) > 0
            ? [{ call_id: c.id, carrier_call_id: c.carrier_call_id, status: c.status, carrier_duration: entry.durationSecs! }]
            : [];
        });
      const missingAtCarrier = ours.map((c) => ({ call_id: c.id, carrier_call_id: c.carrier_call_id, status: c.status }));
      return {
        ok: missingHere.length + missingAtCarrier.length + mismatches.length + unansweredHere.length + invalidLines.length === 0,
        carrier_calls: byId.size,
        our_calls: listed.length + ours.length,
        missing_here: missingHere,
        missing_at_carrier: missingAtCarrier,
        duration_mismatches: mismatches,
        unanswered_here: unansweredHere,
        invalid_lines: invalidLines,
      };
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await runner.release();
    }
  }
}
