/** A `--limit <n>`-style option value: a whole number from 1 to `max`, or a usage error naming the flag. */
export function wholeNumberOption(flag: string, value: string, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${flag} must be a whole number from 1 to ${max}`);
  return n;
}

/** A time option (`--since`, `--from`, `--to`): an ISO 8601 time (a date at least), or a usage error naming the flag. */
export function isoTimeOption(flag: string, value: string): Date {
  const at = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(at.getTime())) throw new Error(`${flag} must be an ISO 8601 time, got "${value}"`);
  return at;
}
