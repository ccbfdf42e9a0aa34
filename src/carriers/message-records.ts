import type { CarrierMessageRecord } from './carrier-message-record.js';
import { telnyxMessageRecord } from './telnyx/telnyx-message-records.js';
import { twilioMessageRecord } from './twilio/twilio-message-records.js';
import { vonageMessageRecord } from './vonage/vonage-message-records.js';

// The record a line becomes is declared apart (carrier-message-record.ts), where each carrier's
// reader can take it without importing this file, which imports them all.
export type { CarrierMessageRecord, RecordStatus } from './carrier-message-record.js';

/** A line's carrier, told by its shape; undefined when it is no message record we know. */
function recordOf(value: Record<string, unknown>): CarrierMessageRecord | undefined {
  return telnyxMessageRecord(value) ?? twilioMessageRecord(value) ?? vonageMessageRecord(value);
}

/** JSON lines of carrier message records, any mix of carriers; lines we cannot read are reported by number, never guessed at. */
export function parseMessageRecords(text: string): { records: CarrierMessageRecord[]; invalidLines: number[] } {
  const records: CarrierMessageRecord[] = [];
  const invalidLines: number[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    const record = value && typeof value === 'object' && !Array.isArray(value) ? recordOf(value as Record<string, unknown>) : undefined;
    if (record) records.push(record);
    else invalidLines.push(index + 1);
  });
  return { records, invalidLines };
}
