import { MalformedWebhook } from './carrier-adapter.js';

/**
 * Small readers for untrusted carrier bodies: each returns the typed value or throws
 * MalformedWebhook naming the path, so an adapter reads like the carrier's documentation.
 */
export type Json = Record<string, unknown>;

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

export function optionalText(parent: Json, key: string): string | undefined {
  const value = parent[key];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** An ISO 8601 instant, returned normalized (`toISOString`). */
export function instant(parent: Json, key: string, path: string): string {
  const raw = text(parent, key, path);
  const ms = Date.parse(raw);
  if (Number.isNaN(ms)) throw new MalformedWebhook(`${path}.${key} must be an ISO 8601 time`);
  return new Date(ms).toISOString();
}
