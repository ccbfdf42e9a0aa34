import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { CarrierMessageRecord } from '../../carriers/message-records.js';
import { exec } from '../../platform/database/tx.js';

/** Without `since`, our messages are compared with the records only around the period they cover. */
const WINDOW_MARGIN_MS = 5 * 60_000;

export interface MessageAuditScope {
  /** Only messages created at or after this (both sides). */
  since?: Date;
  accountId?: string;
}

export interface MessageAuditReport {
  ok: boolean;
  carrier_records: number;
  our_messages: number;
  /** The carrier has (and may charge for) a message we have no row for. */
  missing_here: { carrier: string; carrier_message_id: string; our_message_id: string | null; direction: string; carrier_status: string }[];
  /** A message the carrier took (we hold its id) that its records do not list. */
  missing_at_carrier: { message_id: string; carrier: string; carrier_message_id: string; status: string }[];
  /** We billed one count of parts, the carrier counted another. */
  segment_mismatches: { message_id: string; carrier_message_id: string; ours: number; carrier: number }[];
  /** A final word that disagrees: delivered here and failed there, or billed here and failed there, or failed here and taken there. */
  status_mismatches: { message_id: string; carrier_message_id: string; ours: string; carrier: string; carrier_status: string }[];
  invalid_lines: number[];
}

interface OurMessage {
  id: string;
  direction: string;
  status: string;
  segments: number;
  carrier: string;
  carrier_message_id: string | null;
}

/** Our status and the carrier's disagree on something that was billed or delivered (a pending or unknown word is not compared). */
function statusesDisagree(ours: string, carrier: CarrierMessageRecord['status']): boolean {
  if (carrier === 'failed') return ours === 'sent' || ours === 'delivered';
  if (carrier === 'delivered') return ours === 'failed';
  if (carrier === 'sent') return ours === 'failed';
  return false;
}

/** One record per carrier message (a log may repeat one): a final word over a pending one. */
function oncePerMessage(records: CarrierMessageRecord[]): CarrierMessageRecord[] {
  const byId = new Map<string, CarrierMessageRecord>();
  for (const record of records) {
    const key = `${record.carrier}:${record.carrierMessageId}`;
    const seen = byId.get(key);
    if (!seen || (seen.status === 'pending' || seen.status === 'unknown')) byId.set(key, record);
  }
  return [...byId.values()];
}

/**
 * Reads a carrier's message records beside our messages (the audit against the carrier,
 * docs/billing.md): each finding once, with both sides' ids. Read only, one snapshot.
 */
@Injectable()
export class MessagesAudit {
  constructor(private readonly dataSource: DataSource) {}

  async compare(allRecords: CarrierMessageRecord[], invalidLines: number[], scope: MessageAuditScope = {}): Promise<MessageAuditReport> {
    const { since } = scope;
    const records = oncePerMessage(since ? allRecords.filter((r) => !r.at || Date.parse(r.at) >= since.getTime()) : allRecords);
    const times = records.flatMap((r) => (r.at ? [Date.parse(r.at)] : []));
    const from = since ?? (times.length ? new Date(Math.min(...times) - WINDOW_MARGIN_MS) : null);
    const to = since ? null : times.length ? new Date(Math.max(...times) + WINDOW_MARGIN_MS) : null;
    const account = scope.accountId ?? null;
    const carriers = [...new Set(records.map((r) => r.carrier))];
    const { listed, unlisted } = await this.dataSource.transaction('REPEATABLE READ', async (manager) => {
      await exec(manager, 'SET TRANSACTION READ ONLY');
      // The messages the records name, by the carrier's id or by our reference.
      const named = await exec<OurMessage & { account_id: string }>(manager,
        `SELECT m.id, m.account_id, m.direction, m.status, m.segments, m.carrier, m.carrier_message_id
           FROM messages m JOIN unnest($1::text[], $2::text[], $3::text[]) AS r (carrier, carrier_message_id, our_id)
             ON m.carrier = r.carrier AND (m.carrier_message_id = r.carrier_message_id OR m.id = r.our_id)`,
        [records.map((r) => r.carrier), records.map((r) => r.carrierMessageId), records.map((r) => r.ourMessageId ?? null)],
      );
      // Ours the carrier took (it gave us its id), on a carrier the records cover, in their period, that they do not name.
      const others = await exec<OurMessage>(manager,
        `SELECT id, direction, status, segments, carrier, carrier_message_id FROM messages
          WHERE carrier_message_id IS NOT NULL AND carrier = ANY($1::text[]) AND NOT (id = ANY($2::text[]))
            AND ($3::timestamptz IS NULL OR created_at >= $3) AND ($4::timestamptz IS NULL OR created_at <= $4) AND ($5::text IS NULL OR account_id = $5)
          ORDER BY id`,
        [carriers, named.rows.map((m) => m.id), from, to, account],
      );
      return { listed: named.rows, unlisted: others.rows };
    });
    const report: MessageAuditReport = {
      ok: true, carrier_records: records.length, our_messages: 0,
      missing_here: [], missing_at_carrier: [], segment_mismatches: [], status_mismatches: [], invalid_lines: invalidLines,
    };
    const seen = new Set<string>();
    for (const record of records) {
      const ours = listed.find((m) => m.carrier === record.carrier && (m.carrier_message_id === record.carrierMessageId || m.id === record.ourMessageId));
      if (!ours) {
        report.missing_here.push({ carrier: record.carrier, carrier_message_id: record.carrierMessageId, our_message_id: record.ourMessageId ?? null, direction: record.direction, carrier_status: record.carrierStatus });
        continue;
      }
      // Another account's message: not this audit's.
      if (account && (ours as { account_id?: string }).account_id !== account) continue;
      seen.add(ours.id);
      if (record.segments !== undefined && record.segments !== ours.segments) {
        report.segment_mismatches.push({ message_id: ours.id, carrier_message_id: record.carrierMessageId, ours: ours.segments, carrier: record.segments });
      }
      if (statusesDisagree(ours.status, record.status)) {
        report.status_mismatches.push({ message_id: ours.id, carrier_message_id: record.carrierMessageId, ours: ours.status, carrier: record.status, carrier_status: record.carrierStatus });
      }
    }
    report.missing_at_carrier = unlisted.map((m) => ({ message_id: m.id, carrier: m.carrier, carrier_message_id: m.carrier_message_id!, status: m.status }));
    report.our_messages = seen.size + unlisted.length;
    report.ok = report.missing_here.length + report.missing_at_carrier.length + report.segment_mismatches.length + report.status_mismatches.length + invalidLines.length === 0;
    return report;
  }
}
