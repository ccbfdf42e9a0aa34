import { deref, type Json } from './documents.js';

/** The JSON types a schema allows (through $ref, allOf, oneOf, anyOf). */
function typesOf(doc: Json, schema: unknown): Set<string> {
  const s = deref(doc, schema) as Json | undefined;
  const found = new Set<string>();
  if (!s || typeof s !== 'object') return found;
  for (const t of [s.type].flat()) if (typeof t === 'string') found.add(t);
  for (const branch of [...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])]) for (const t of typesOf(doc, branch)) found.add(t);
  return found;
}

/**
 * One text value (a query parameter, a form field) as the type its schema names, the way the
 * carrier reads it: `"20"` → 20 for an integer, `"true"` → true for a boolean. A text that is not
 * such a value stays text, so the schema check reports it.
 */
export function coerceText(doc: Json, schema: unknown, value: string): unknown {
  const types = typesOf(doc, schema);
  if (types.has('string') || types.size === 0) return value;
  if ((types.has('integer') || types.has('number')) && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  if (types.has('boolean') && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

/** The values of a repeated field (`features=a&features=b`), or its one value, as its schema reads it. */
export function coerceField(doc: Json, schema: unknown, values: string[]): unknown {
  const s = deref(doc, schema) as Json | undefined;
  if (typesOf(doc, s).has('array')) return values.map((v) => coerceText(doc, s?.items, v));
  return coerceText(doc, s, values[values.length - 1]);
}

/** A form body (application/x-www-form-urlencoded) as the object its schema describes. */
export function formObject(doc: Json, schema: unknown, body: string): Json {
  const params = new URLSearchParams(body);
  const properties = collectProperties(doc, schema);
  const out: Json = {};
  for (const name of new Set(params.keys())) out[name] = coerceField(doc, properties[name], params.getAll(name));
  return out;
}

function collectProperties(doc: Json, schema: unknown): Json {
  const s = deref(doc, schema) as Json | undefined;
  if (!s) return {};
  return Object.assign({}, ...[...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])].map((b: unknown) => collectProperties(doc, b)), s.properties ?? {});
}
