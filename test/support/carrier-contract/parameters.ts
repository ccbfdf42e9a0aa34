import { coerceField, coerceText } from './coerce.js';
import { deref, type Json } from './documents.js';
import { checkSchema } from './schema-check.js';
import { shown, type Divergence } from './divergence.js';
import { header, type ObservedRequest } from './exchange.js';
import type { FoundOperation } from './operations.js';

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  style?: string;
  schema?: Json;
  /** Where its schema is, for ajv. */
  ref: string;
}

/** The operation's parameters (its path item's, overridden by its own), each with the ajv ref of its schema. */
export function parametersOf(op: FoundOperation): Parameter[] {
  const { doc, key } = op.document;
  const collect = (list: unknown[] | undefined, at: string) =>
    (list ?? []).map((raw, i) => {
      const ref = (raw as Json).$ref as string | undefined;
      const param = deref(doc, raw) as Json;
      const base = ref ? `${key}${ref}` : `${key}#/paths/${op.template.replace(/~/g, '~0').replace(/\//g, '~1')}${at}/parameters/${i}`;
      return { ...param, ref: `${base}/schema` } as Parameter;
    });
  const byKey = new Map<string, Parameter>();
  for (const p of [...collect(doc.paths[op.template].parameters, ''), ...collect(op.operation.parameters, `/${op.method}`)]) byKey.set(`${p.in}:${p.name}`, p);
  return [...byKey.values()];
}

/**
 * A deepObject parameter as OpenAPI serializes it (`style: deepObject`, `explode: true`):
 * `filter[phone_number][contains]=1&filter[features]=sms&filter[features]=voice` →
 * `{phone_number:{contains:['1']},features:['sms','voice']}` for parameter `filter`, each leaf the
 * values its key was sent with (an array property is its key repeated, as `explode` repeats a
 * key per item), typed against the schema later. A Rails-style `filter[features][]=sms` is a
 * property named '' of `features`, which no document declares: its schema check fails.
 */
function deepObject(name: string, query: URLSearchParams): { value: Json; keys: string[] } | undefined {
  const value: Json = {};
  const keys: string[] = [];
  for (const [key, text] of query) {
    if (!key.startsWith(`${name}[`)) continue;
    keys.push(key);
    const path = [...key.slice(name.length).matchAll(/\[([^\]]*)\]/g)].map((m) => m[1]);
    const leaf = path.pop()!;
    let node = value;
    for (const part of path) node = node[part] = node[part] !== null && typeof node[part] === 'object' && !Array.isArray(node[part]) ? node[part] : {};
    node[leaf] = [...(Array.isArray(node[leaf]) ? node[leaf] : []), text];
  }
  return keys.length ? { value, keys } : undefined;
}

/** A parsed query or header value as its schema's types: a key's sent values (string[]) as coerceField reads them, objects recursively. */
function coerceDeep(doc: Json, schema: unknown, value: unknown): unknown {
  const s = deref(doc, schema) as Json | undefined;
  if (typeof value === 'string') return coerceText(doc, s, value);
  if (Array.isArray(value)) return coerceField(doc, s, value as string[]);
  if (value && typeof value === 'object') {
    const props: Json = Object.assign({}, ...[...(s?.allOf ?? []), ...(s?.oneOf ?? []), ...(s?.anyOf ?? [])].map((b: unknown) => (deref(doc, b) as Json)?.properties ?? {}), s?.properties ?? {});
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, coerceDeep(doc, props[k], v)]));
  }
  return value;
}

/**
 * Path, query and header parameters: each required one present, each one sent valid by its schema,
 * and no query parameter the operation does not declare (`allowedQuery`: names security puts there).
 */
export function checkParameters(op: FoundOperation, request: ObservedRequest, allowedQuery: Set<string>): Divergence[] {
  const { doc } = op.document;
  const query = new URL(request.url, 'http://x').searchParams;
  const out: Divergence[] = [];
  const used = new Set<string>(allowedQuery);
  for (const p of parametersOf(op)) {
    let sent: unknown;
    if (p.in === 'path') sent = op.pathParams[p.name];
    else if (p.in === 'header') sent = header(request.headers, p.name);
    else if (p.in === 'query') {
      if (p.style === 'deepObject') {
        const deep = deepObject(p.name, query);
        deep?.keys.forEach((k) => used.add(k));
        sent = deep?.value;
      } else if (query.has(p.name)) {
        used.add(p.name);
        sent = query.getAll(p.name);
      }
    }
    const field = `/${p.in}/${p.name}`;
    if (sent === undefined) {
      if (p.required) out.push({ operation: op.name, field, doc: `required ${p.in} parameter`, sent: 'nothing' });
      continue;
    }
    if (p.schema) out.push(...checkSchema(p.ref, coerceDeep(doc, p.schema, sent), op.name, field));
  }
  for (const name of new Set(query.keys())) {
    if (!used.has(name)) out.push({ operation: op.name, field: `/query/${name}`, doc: 'no such query parameter (the carrier ignores it)', sent: shown(query.getAll(name).join(',')) });
  }
  return out;
}
