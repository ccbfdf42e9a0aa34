import { createHash } from 'node:crypto';
import type { PaidInvoice } from '../../carriers/billing-event.js';
import type { EntitlementType } from './entitlement-types.js';
import type { Plan } from './plans.js';

/** What one invoice grants of one type: the lines of that type summed, over the periods they cover. */
export interface Grant {
  type: EntitlementType;
  quantity: number;
  periodStart: string;
  periodEnd: string;
  /** Of what decides the grant (type, quantity, period): a replay carries the same one. */
  fingerprint: string;
}

/** Something in the invoice that grants nothing, and why (recorded as an `ignored` note). */
export interface IgnoredLine {
  lookup_key: string | null;
  reason: string;
}

export function grantFingerprint(grant: Omit<Grant, 'fingerprint'>): string {
  return createHash('sha256').update(JSON.stringify([grant.type, grant.quantity, grant.periodStart, grant.periodEnd])).digest('hex');
}

/**
 * The grants of a paid invoice under the given plans, one per type (the business key is
 * (account, invoice, type), so two lines of one type are one bundle), in type order: concurrent
 * deliveries of one invoice lock its entitlements in the same order.
 */
export function grantsFor(invoice: PaidInvoice, plans: Map<string, Plan>): { grants: Grant[]; ignored: IgnoredLine[] } {
  const ignored: IgnoredLine[] = [];
  const byType = new Map<EntitlementType, Omit<Grant, 'fingerprint'>>();
  for (const line of invoice.lines) {
    const plan = plans.get(line.lookupKey);
    if (!plan) {
      ignored.push({ lookup_key: line.lookupKey, reason: 'no plan has this lookup_key' });
      continue;
    }
    const quantity = plan.quantity * line.quantity;
    const seen = byType.get(plan.type);
    byType.set(plan.type, {
      type: plan.type,
      quantity: (seen?.quantity ?? 0) + quantity,
      periodStart: seen && seen.periodStart < line.periodStart ? seen.periodStart : line.periodStart,
      periodEnd: seen && seen.periodEnd > line.periodEnd ? seen.periodEnd : line.periodEnd,
    });
  }
  if (!invoice.allLines) ignored.push({ lookup_key: null, reason: 'the invoice has more lines than the event carried; those were not seen' });
  const grants: Grant[] = [];
  for (const grant of [...byType.values()].sort((a, b) => a.type.localeCompare(b.type))) {
    if (grant.quantity === 0) ignored.push({ lookup_key: null, reason: `the ${grant.type} lines buy 0 units` });
    else grants.push({ ...grant, fingerprint: grantFingerprint(grant) });
  }
  return { grants, ignored };
}
