import { describe, expect, it } from '@jest/globals';
import type { PaidInvoice, PaidInvoiceLine } from '../../../carriers/billing-event.js';
import { grantFingerprint, grantsFor } from '../grants.js';
import type { Plan } from '../plans.js';

const NOV = { periodStart: '2026-11-01T00:00:00.000Z', periodEnd: '2026-12-01T00:00:00.000Z' };
const DEC = { periodStart: '2026-12-01T00:00:00.000Z', periodEnd: '2027-01-01T00:00:00.000Z' };
const plans = new Map<string, Plan>([
  ['sms_1000', { type: 'sms_segments', quantity: 1000 }],
  ['sms_50', { type: 'sms_segments', quantity: 50 }],
  ['min_100', { type: 'call_minutes', quantity: 100 }],
]);
const invoice = (lines: PaidInvoiceLine[], allLines = true): PaidInvoice => ({ invoiceId: 'in_1', customerId: 'cus_1', lines, allLines });
const line = (lookupKey: string, quantity: number, period = NOV): PaidInvoiceLine => ({ lookupKey, quantity, ...period });

describe('grantsFor', () => {
  it('one grant per type, plan quantity × line quantity, lines of one type summed over the periods they cover, in type order', () => {
    const { grants, ignored } = grantsFor(invoice([line('sms_1000', 2), line('min_100', 1), line('sms_50', 3, DEC)]), plans);
    expect(ignored).toEqual([]);
    expect(grants.map(({ fingerprint, ...g }) => g)).toEqual([
      { type: 'call_minutes', quantity: 100, ...NOV },
      { type: 'sms_segments', quantity: 2150, periodStart: NOV.periodStart, periodEnd: DEC.periodEnd },
    ]);
  });

  it('lines without a plan, lines buying nothing, and lines the event did not carry are noted, not granted', () => {
    const { grants, ignored } = grantsFor(invoice([line('unknown', 1), line('min_100', 0)], false), plans);
    expect(grants).toEqual([]);
    expect(ignored).toEqual([
      { lookup_key: 'unknown', reason: 'no plan has this lookup_key' },
      { lookup_key: null, reason: 'the invoice has more lines than the event carried; those were not seen' },
      { lookup_key: null, reason: 'the call_minutes lines buy 0 units' },
    ]);
  });

  it('the fingerprint is the same for the same grant however the lines are split, and changes with quantity, period or type', () => {
    const [whole] = grantsFor(invoice([line('sms_1000', 2)]), plans).grants;
    const [split] = grantsFor(invoice([line('sms_1000', 1), line('sms_1000', 1)]), plans).grants;
    expect(split.fingerprint).toBe(whole.fingerprint);
    const base = { type: 'sms_segments' as const, quantity: 2000, ...NOV };
    expect(grantFingerprint(base)).toBe(whole.fingerprint);
    for (const changed of [{ ...base, quantity: 2001 }, { ...base, periodEnd: DEC.periodEnd }, { ...base, type: 'call_minutes' as const }]) {
      expect(grantFingerprint(changed)).not.toBe(whole.fingerprint);
    }
  });
});
