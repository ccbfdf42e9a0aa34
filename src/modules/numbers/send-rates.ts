import type { CarrierName } from '../../carriers/carrier-name.js';

// A number's sending rate (its messaging settings); messaging paces its sends by it (sender-pacing.ts there).

/** What a number is to a carrier's throughput rules: a long code, or a (North American) toll-free number. */
export type NumberType = 'long_code' | 'toll_free';

/** North American toll-free area codes: +1 800, 833, 844, 855, 866, 877, 888. */
export const TOLL_FREE_PATTERN = '^\\+1(800|833|844|855|866|877|888)';

/**
 * Segments per second a number sends unless it has its own rate (PATCH /v2/phone_numbers/:id
 * {"messaging":{"send_rate_per_second":N}}). The carriers' published defaults for a number that
 * has not been granted more: Telnyx toll-free 20, Twilio toll-free 3, long codes 1 (US 10DLC
 * throughput is set per campaign; 1 is the floor that no carrier refuses).
 */
export const DEFAULT_SEND_RATES: Record<CarrierName, Record<NumberType, number>> = {
  telnyx: { long_code: 1, toll_free: 20 },
  twilio: { long_code: 1, toll_free: 3 },
  vonage: { long_code: 1, toll_free: 3 },
};

export const MIN_SEND_RATE = 0.01;
export const MAX_SEND_RATE = 1000;

export function numberType(phoneNumber: string): NumberType {
  return new RegExp(TOLL_FREE_PATTERN).test(phoneNumber) ? 'toll_free' : 'long_code';
}

export function defaultSendRate(carrier: CarrierName, phoneNumber: string): number {
  return DEFAULT_SEND_RATES[carrier][numberType(phoneNumber)];
}

/**
 * SQL: MESSAGE_SEND_RATE_DEFAULT as the `override` of sendRateSql, a numeric literal (the config
 * holds a finite number from MIN_SEND_RATE to MAX_SEND_RATE), or NULL when unset.
 */
export function rateDefaultSql(rateDefault: number | undefined): string {
  if (rateDefault === undefined) return 'NULL';
  if (!Number.isFinite(rateDefault)) throw new Error(`MESSAGE_SEND_RATE_DEFAULT ${rateDefault} is not a number`);
  return `${rateDefault}::numeric`;
}

/**
 * SQL: the rate of number row `p` (alias), segments per second. `override` is a SQL expression
 * (a parameter) for MESSAGE_SEND_RATE_DEFAULT, NULL when unset: it replaces the table for every
 * number without its own rate. The table's numbers are literals from this file.
 */
export function sendRateSql(p: string, override: string): string {
  const cases = Object.entries(DEFAULT_SEND_RATES)
    .map(([carrier, rates]) => `WHEN '${carrier}' THEN CASE WHEN ${p}.phone_number ~ '${TOLL_FREE_PATTERN}' THEN ${rates.toll_free} ELSE ${rates.long_code} END`)
    .join(' ');
  return `coalesce(${p}.send_rate_per_second, ${override}, CASE ${p}.carrier ${cases} ELSE 1 END)::numeric`;
}

