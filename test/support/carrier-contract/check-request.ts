import { formObject } from './coerce.js';
import { deref, type Json } from './documents.js';
import { shown, type Divergence } from './divergence.js';
import { header, mediaType, type ObservedRequest } from './exchange.js';
import { findOperation, type FoundOperation } from './operations.js';
import { checkParameters } from './parameters.js';
import { checkSchema } from './schema-check.js';

/**
 * Request headers that carry a meaning the carrier may or may not give them: sending one to an
 * operation whose reference does not declare it is a belief about the carrier, not a fact (Telnyx
 * honours Idempotency-Key only where an operation declares it; I-Twilio-Idempotency-Token is a
 * header Twilio sends on its own webhooks).
 */
const MEANINGFUL_HEADERS = /^(idempotency-key|x-idempotency-key|i-twilio-idempotency-token|idempotency-token|x-request-id|x-twilio-webhook-enabled)$/;

/** One way of authenticating the document allows, checked; the query parameters it puts there. */
function satisfies(doc: Json, requirement: Json, request: ObservedRequest, query: URLSearchParams): { ok: boolean; queryNames: string[]; words: string } {
  const names = Object.keys(requirement);
  const queryNames: string[] = [];
  const words: string[] = [];
  let ok = true;
  for (const name of names) {
    const scheme = deref(doc, doc.components?.securitySchemes?.[name]) as Json | undefined;
    if (!scheme) continue;
    if (scheme.type === 'http') {
      const auth = header(request.headers, 'authorization') ?? '';
      const wantedScheme = String(scheme.scheme).toLowerCase();
      words.push(`Authorization: ${scheme.scheme}`);
      if (auth.split(' ')[0].toLowerCase() !== wantedScheme) ok = false;
      else if (wantedScheme === 'basic' && !Buffer.from(auth.slice(6), 'base64').toString().includes(':')) ok = false;
    } else if (scheme.type === 'apiKey') {
      words.push(`${scheme.name} in ${scheme.in}`);
      if (scheme.in === 'query') {
        queryNames.push(scheme.name);
        if (!query.get(scheme.name)) ok = false;
      } else if (scheme.in === 'header' && !header(request.headers, scheme.name)) ok = false;
    } else {
      words.push(`${name} (${scheme.type})`);
      ok = false;
    }
  }
  return { ok, queryNames, words: words.join(' + ') };
}

/** The authentication the operation's security (else the document's) asks for: one of its alternatives, whole. */
function checkAuth(op: FoundOperation, request: ObservedRequest, query: URLSearchParams): { divergences: Divergence[]; queryNames: Set<string> } {
  const { doc } = op.document;
  const security = (op.operation.security ?? doc.security ?? []) as Json[];
  const tried = security.map((req) => satisfies(doc, req, request, query));
  // Query parameters of every alternative are the document's, whichever is used.
  const queryNames = new Set(tried.flatMap((t) => t.queryNames));
  if (security.length === 0 || tried.some((t) => t.ok)) return { divergences: [], queryNames };
  const auth = header(request.headers, 'authorization');
  return {
    divergences: [{ operation: op.name, field: '/header/authorization', doc: tried.map((t) => t.words).join(', or '), sent: auth ? shown(`${auth.split(' ')[0]} …`) : 'no Authorization header' }],
    queryNames,
  };
}

/** The body: a content type the operation declares, and valid by that content's schema (a form parsed and typed by it). */
function checkBody(op: FoundOperation, request: ObservedRequest): Divergence[] {
  const { doc } = op.document;
  const requestBody = deref(doc, op.operation.requestBody) as Json | undefined;
  const sentType = mediaType(header(request.headers, 'content-type'));
  if (!requestBody) {
    return request.body.length > 0 ? [{ operation: op.name, field: '/body', doc: 'no request body', sent: shown(request.body) }] : [];
  }
  if (request.body.length === 0) return requestBody.required ? [{ operation: op.name, field: '/body', doc: 'a required request body', sent: 'nothing' }] : [];
  const declared = Object.keys(requestBody.content ?? {});
  if (!sentType || !declared.includes(sentType)) return [{ operation: op.name, field: '/header/content-type', doc: declared.join(' or '), sent: shown(sentType) }];
  const schema = requestBody.content[sentType].schema;
  let value: unknown;
  if (sentType === 'application/x-www-form-urlencoded') value = formObject(doc, schema, request.body);
  else {
    try {
      value = JSON.parse(request.body);
    } catch {
      return [{ operation: op.name, field: '/body', doc: `${sentType}`, sent: shown(request.body) }];
    }
  }
  const ref = op.operation.requestBody.$ref ? `${op.document.key}${op.operation.requestBody.$ref}/content/${sentType.replace('/', '~1')}/schema`
    : `${op.document.key}#/paths/${op.template.replace(/~/g, '~0').replace(/\//g, '~1')}/${op.method}/requestBody/content/${sentType.replace('/', '~1')}/schema`;
  return checkSchema(ref, value, op.name, '/body');
}

/** Headers with a meaning (MEANINGFUL_HEADERS) sent to an operation that does not declare them. */
function checkUndeclaredHeaders(op: FoundOperation, request: ObservedRequest): Divergence[] {
  const declared = new Set(
    [...(op.document.doc.paths[op.template].parameters ?? []), ...(op.operation.parameters ?? [])]
      .map((p: unknown) => deref(op.document.doc, p) as Json)
      .filter((p) => p.in === 'header')
      .map((p) => String(p.name).toLowerCase()),
  );
  return Object.keys(request.headers)
    .map((h) => h.toLowerCase())
    .filter((h) => MEANINGFUL_HEADERS.test(h) && !declared.has(h))
    .map((h) => ({ operation: op.name, field: `/header/${h}`, doc: 'no such header: the operation does not declare it, so the carrier gives it no meaning', sent: shown(header(request.headers, h)) }));
}

/** Every way a request our app (or a test) sent to a carrier differs from the operation the carrier documents. */
export function checkRequest(request: ObservedRequest): Divergence[] {
  const url = new URL(request.url, 'http://carrier');
  const lookup = findOperation(request.method, url.pathname);
  if ('missing' in lookup) return [{ operation: lookup.missing, field: '/path', doc: 'no such operation', sent: `${request.method} ${url.pathname}` }];
  if ('outsideExtract' in lookup) {
    return [{ operation: lookup.outsideExtract, field: '/path', doc: 'an operation the vendored extract leaves out: add it to test/fixtures/carrier-specs from the full document', sent: `${request.method} ${url.pathname}` }];
  }
  const op = lookup.found;
  const auth = checkAuth(op, request, url.searchParams);
  return [...auth.divergences, ...checkParameters(op, request, auth.queryNames), ...checkBody(op, request), ...checkUndeclaredHeaders(op, request)];
}
