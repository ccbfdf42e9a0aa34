import { deref, type Json } from './documents.js';
import { shown, type Divergence } from './divergence.js';
import { mediaType, type ObservedRequest, type ObservedResponse } from './exchange.js';
import { findOperation } from './operations.js';
import { checkSchema } from './schema-check.js';

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The response entry that describes `status`: exact, else `4XX`-style, else `default`. */
function describedStatus(responses: Json, status: number): string | undefined {
  if (responses[String(status)]) return String(status);
  const range = `${String(status)[0]}XX`;
  if (responses[range]) return range;
  if (responses[range.toLowerCase()]) return range.toLowerCase();
  return responses.default ? 'default' : undefined;
}

/**
 * The answer a carrier (the sandbox, a fake) gave to `request`, against what the operation
 * documents: a success status it lists, and a body valid by that status's schema. Errors the
 * document does not describe (a 5xx, a 4xx of Twilio's, whose document lists only successes) are
 * not checked: every carrier may answer them.
 */
export function checkResponse(request: ObservedRequest, response: ObservedResponse): Divergence[] {
  const lookup = findOperation(request.method, new URL(request.url, 'http://carrier').pathname);
  if (!('found' in lookup)) return [];
  const op = lookup.found;
  const name = `response of ${op.name}`;
  const responses = op.operation.responses ?? {};
  const key = describedStatus(responses, response.status);
  if (!key) {
    return response.status < 300 ? [{ operation: name, field: '/status', doc: `one of ${Object.keys(responses).join(', ')}`, sent: String(response.status) }] : [];
  }
  const described = deref(op.document.doc, responses[key]) as Json;
  const content = described?.content as Json | undefined;
  if (!content || Object.keys(content).length === 0) return [];
  const type = mediaType(response.headers['content-type']);
  if (!type || !content[type]) return [{ operation: name, field: '/header/content-type', doc: Object.keys(content).join(' or '), sent: shown(type) }];
  if (!content[type].schema || type !== 'application/json') return [];
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    return [{ operation: name, field: '/body', doc: 'a JSON body', sent: shown(response.body) }];
  }
  const base = responses[key].$ref ? `${op.document.key}${responses[key].$ref}` : `${op.document.key}#/paths/${escape(op.template)}/${op.method}/responses/${key}`;
  return checkSchema(`${base}/content/${escape(type)}/schema`, body, name, '/body');
}
