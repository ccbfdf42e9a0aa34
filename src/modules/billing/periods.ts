/** A calendar month, YYYY-MM: a rental's period, a statement's. */
export const PERIOD_PATTERN = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** The month's bounds in UTC, [from, to); undefined when `period` is not YYYY-MM. */
export function monthBounds(period: string): { from: Date; to: Date } | undefined {
  const match = PERIOD_PATTERN.exec(period);
  if (!match) return undefined;
  const [year, month] = [Number(match[1]), Number(match[2])];
  return { from: new Date(Date.UTC(year, month - 1, 1)), to: new Date(Date.UTC(year, month, 1)) };
}
