/** A `--limit <n>`-style option value: a whole number from 1 to `max`, or a usage error naming the flag. */
export function wholeNumberOption(flag: string, value: string, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${flag} must be a whole number from 1 to ${max}`);
  return n;
}
