import type { UsageKind } from '../billing/usage-ledger.js';

/** What a prepaid bundle holds (the entitlements and plans CHECK constraints have the same list). */
export const ENTITLEMENT_TYPES = ['sms_segments', 'call_minutes'] as const;
export type EntitlementType = (typeof ENTITLEMENT_TYPES)[number];

/** The usage that draws each type of bundle down: SMS segments either way, billable call minutes. */
export const DRAWN_DOWN_BY: Record<EntitlementType, UsageKind[]> = {
  sms_segments: ['sms_outbound_segments', 'sms_inbound_segments'],
  call_minutes: ['call_minutes'],
};

export function isEntitlementType(value: unknown): value is EntitlementType {
  return typeof value === 'string' && (ENTITLEMENT_TYPES as readonly string[]).includes(value);
}
