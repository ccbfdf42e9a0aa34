import fc from 'fast-check';

/**
 * Hostile values for the fields of signed webhooks (issue 25): what a carrier or Stripe could sign
 * and no store can hold. Each is past a bound of docs/contract.md, "Bounds on signed webhooks".
 */

/** Ids past 255 characters: plain (up to 6,000: past Postgres's ~2.7 KB index row) or multi-byte. */
export const longId = fc.oneof(
  fc.integer({ min: 256, max: 6_000 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 128, max: 1_500 }).map((n) => 'é€'.repeat(n)),
);

/** Words (status, event type) past 100 characters. */
export const longWord = fc.integer({ min: 101, max: 4_000 }).map((n) => 's'.repeat(n));

/** Strings Postgres text and jsonb refuse: a NUL, an unpaired surrogate. */
export const unstorableText = fc.constantFrom('a\u0000b', '\u0000', '\ud800', 'x\udfffy');

/** Times JavaScript may parse but that are outside 1970–9999 (or outside what JavaScript holds). */
export const outOfRangeTime = fc.constantFrom('-271821-04-20T00:00:00Z', '+275760-09-13T00:00:00Z', '1969-12-31T23:59:59Z', '+010000-01-01T00:00:00Z');

/** JSON text nested past the 64-level bound, up to 25,000 levels (past jsonb's stack depth). */
export const deepJsonText = fc
  .record({ depth: fc.integer({ min: 65, max: 25_000 }), array: fc.boolean() })
  .map(({ depth, array }) => (array ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`));

/** Replaces the JSON string `"__DEEP__"` in `json` with raw JSON text (JSON.stringify would recurse that deep). */
export function withRawJson(json: string, raw: string): string {
  return json.replace('"__DEEP__"', raw);
}

/** Seconds no call lasts, or no number at all: past 86,400, negative, fractional, exponent notation. */
export const badSeconds = fc.oneof(
  fc.constantFrom('1e15', '-1', '1.5', '86401', '99999999999999999999', 'NaN', 'Infinity', ' 5'),
  fc.integer({ min: 86_401, max: Number.MAX_SAFE_INTEGER }).map(String),
);

/** A hostile mutation of one delivery and the field its 400 must name. */
export interface Hostile<D> {
  case: string;
  /** Text the 400's errors[0].detail must hold: the field's name (or the bound it broke). */
  names: string;
  make: () => D | Promise<D>;
}

/** Runs per property: enough to meet each case a few times, few enough to keep the suite fast. */
export const HOSTILE_SIGNED_RUNS = Number(process.env.HOSTILE_SIGNED_RUNS ?? 30);
