import type { ErrorObject, ValidateFunction } from 'ajv';
import { carrierDocuments } from './documents.js';
import { shown, type Divergence } from './divergence.js';

const compiled = new Map<string, ValidateFunction>();

/** The compiled schema at `ref` (`<document key>#/pointer`), compiled once per worker. */
function validator(ref: string): ValidateFunction {
  let validate = compiled.get(ref);
  if (!validate) {
    validate = carrierDocuments().ajv.compile({ $ref: ref });
    compiled.set(ref, validate);
  }
  return validate;
}

function valueAt(value: unknown, pointer: string): unknown {
  return pointer.split('/').slice(1).reduce<any>((node, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], value);
}

/** What an ajv error says the document wants, in words. */
function wanted(error: ErrorObject): string {
  const p = error.params as Record<string, any>;
  switch (error.keyword) {
    case 'required': return `required property ${JSON.stringify(p.missingProperty)}`;
    case 'enum': return `one of ${shown(p.allowedValues, 200)}`;
    case 'type': return `type ${Array.isArray(p.type) ? p.type.join(' or ') : p.type}`;
    case 'additionalProperties': return `no property ${JSON.stringify(p.additionalProperty)}`;
    case 'const': return `the constant ${shown(p.allowedValue)}`;
    case 'oneOf': return p.passingSchemas ? `exactly one of its oneOf branches; branches ${p.passingSchemas.join(' and ')} both match` : 'one of its oneOf branches';
    default: return `${error.keyword}: ${error.message}`;
  }
}

/**
 * `value` against the schema at `ref`; one divergence per distinct failing place (under `base`,
 * e.g. `/body`). For a oneOf/anyOf no branch matched: ajv reports every branch's complaint, and
 * the report keeps the complaints of the branch that got furthest (the fewest of them) with the
 * union's own line.
 */
export function checkSchema(ref: string, value: unknown, operation: string, base: string): Divergence[] {
  const validate = validator(ref);
  if (validate(value)) return [];
  const errors = closestBranch(validate.errors ?? []);
  const seen = new Set<string>();
  const out: Divergence[] = [];
  for (const error of errors) {
    const field = error.keyword === 'required' ? `${error.instancePath}/${(error.params as any).missingProperty}` : error.instancePath;
    const doc = wanted(error);
    if (seen.has(field + doc)) continue;
    seen.add(field + doc);
    out.push({ operation, field: `${base}${field}`, doc: `${doc} (${error.schemaPath})`, sent: shown(error.keyword === 'required' ? undefined : valueAt(value, error.instancePath)) });
  }
  return out;
}

/** Of a failed union, only the errors of its best branch (and the errors outside any union). */
function closestBranch(errors: ErrorObject[]): ErrorObject[] {
  // The outermost union (the shortest schema path): a nested union's errors belong to one of its branches.
  const union = errors.filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf').sort((a, b) => a.schemaPath.length - b.schemaPath.length)[0];
  if (!union) return errors;
  const prefix = union.schemaPath;
  const branches = new Map<string, ErrorObject[]>();
  const rest: ErrorObject[] = [];
  for (const e of errors) {
    if (e === union) continue;
    const m = e.schemaPath.startsWith(`${prefix}/`) ? /^\/(\d+)/.exec(e.schemaPath.slice(prefix.length)) : null;
    if (m) branches.set(m[1], [...(branches.get(m[1]) ?? []), e]);
    else rest.push(e);
  }
  // No branch complained: a oneOf that more than one branch matched. The union's own error is the report.
  const best = [...branches.values()].sort((a, b) => a.length - b.length)[0];
  return best ? [...rest, ...closestBranch(best)] : [...rest, union];
}
