import { bodyProblem } from '../platform/http/validation.js';
import { MalformedWebhook } from './carrier-adapter.js';

/**
 * Small readers for untrusted carrier bodies: each returns the typed value or throws
 * MalformedWebhook naming the path, so an adapter reads like the carrier's documentation.
 */
export type Json = Record<string, unknown>;

/**
 * Bounds on what a signed body may hold (docs/contract.md, "Bounds on signed webhooks"). Past
 * them Postgres refuses the row (a key past its index's ~2.7 KB limit, JSON past its stack
 * depth) or a date cannot be formed: refused here, at the edge, with a 400 naming the field.
 */
export const BOUNDS = {
  /** Ids (Telnyx and Vonage UUIDs are 36 characters, Twilio SIDs 34, Stripe's at most 255): each is, or is part of, an index key. */
  idLength: 255,
  /** Status words, event types, channels, lookup keys: short words, some part of a dedupe key. */
  wordLength: 100,
  /** Phone numbers and sender names. */
  addressLength: 64,
  /** URLs (a recording's). */
  urlLength: 2048,
  /** A transcript fragment, in UTF-8 bytes: (call, time, text) is a unique key, and Postgres indexes at most ~2.7 KB. */
  transcriptBytes: 2000,
  /** Nesting of a JSON body (the carriers' nest about 6 levels, an expanded Stripe invoice about 10). */
  depth: 64,
  /** Call durations in seconds: 24 hours, the longest call a carrier lets last. */
  callSeconds: 86_400,
} as const;

/** Instants from 1970 to 9999: what both JavaScript dates and Postgres timestamps hold. */
const LATEST_MS = 253_402_300_799_999;

/**
 * A signed body must be storable as it is: nested at most BOUNDS.depth levels, and no string
 * holding a NUL or an unpaired surrogate (jsonb refuses both). One loop, never recursion.
 */
export function storableBody(body: unknown): void {
  const problem = bodyProblem(body, BOUNDS.depth);
  if (problem?.kind === 'deep') throw new MalformedWebhook(`body nests deeper than ${BOUNDS.depth} levels`);
  if (problem) throw new MalformedWebhook(`${dotted(problem.pointer)} holds a NUL character (\\u0000) or an unpaired UTF-16 surrogate`);
}

/** `/data/payload/text` → `data.payload.text`, the way the readers name fields. */
function dotted(pointer: string): string {
  return pointer === '/' ? 'body' : pointer.slice(1).replaceAll('/', '.');
}

/** `value` when at most `max` characters, else MalformedWebhook naming `what`. */
export function bounded(value: string, max: number, what: string): string {
  if (value.length > max) throw new MalformedWebhook(`${what} must be at most ${max} characters`);
  return value;
}

/** An id (or key) of the carrier's: non-empty text of at most BOUNDS.idLength characters. */
export function id(parent: Json, key: string, path: string): string {
  return bounded(text(parent, key, path), BOUNDS.idLength, `${path}.${key}`);
}

/** A status word or event type: non-empty text of at most BOUNDS.wordLength characters. */
export function word(parent: Json, key: string, path: string): string {
  return bounded(text(parent, key, path), BOUNDS.wordLength, `${path}.${key}`);
}

/** A phone number or sender: non-empty text of at most BOUNDS.addressLength characters. */
export function address(parent: Json, key: string, path: string): string {
  return bounded(text(parent, key, path), BOUNDS.addressLength, `${path}.${key}`);
}

/** Epoch milliseconds as an ISO 8601 instant, when inside 1970–9999; else MalformedWebhook naming `what`. */
export function instantOf(ms: number, what: string): string {
  if (!(ms >= 0 && ms <= LATEST_MS)) throw new MalformedWebhook(`${what} must be a time from 1970 to 9999`);
  return new Date(ms).toISOString();
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function object(parent: Json, key: string, path: string): Json {
  const value = parent[key];
  if (!isObject(value)) throw new MalformedWebhook(`${path}.${key} must be an object`);
  return value;
}

export function text(parent: Json, key: string, path: string): string {
  const value = parent[key];
  if (typeof value !== 'string' || value.length === 0) throw new MalformedWebhook(`${path}.${key} must be a non-empty string`);
  return value;
}

/** Text when present (non-empty); with `bound`, longer text is MalformedWebhook naming the field. */
export function optionalText(parent: Json, key: string, bound?: { max: number; path: string }): string | undefined {
  const value = parent[key];
  if (typeof value !== 'string' || value.length === 0) return undefined;
  return bound ? bounded(value, bound.max, `${bound.path}.${key}`) : value;
}

/** An ISO 8601 instant, returned normalized (`toISOString`). */
export function instant(parent: Json, key: string, path: string): string {
  const raw = text(parent, key, path);
  const ms = Date.parse(raw);
  if (Number.isNaN(ms)) throw new MalformedWebhook(`${path}.${key} must be an ISO 8601 time`);
  return instantOf(ms, `${path}.${key}`);
}
