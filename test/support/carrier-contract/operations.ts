import { carrierDocuments, type CarrierApi, type CarrierDocument, type Json } from './documents.js';

/** One operation of a document, found for a request. */
export interface FoundOperation {
  document: CarrierDocument;
  method: string;
  /** The document's path template, e.g. `/calls/{call_control_id}/actions/answer`. */
  template: string;
  operation: Json;
  /** Path parameters as sent (decoded). */
  pathParams: Record<string, string>;
  /** `SendMessage POST /messages`: how a divergence names it. */
  name: string;
}

export type OperationLookup =
  | { found: FoundOperation }
  /** The full document has it, but the vendored extract does not: fetch the full document to check it. */
  | { outsideExtract: string; document: CarrierDocument }
  | { missing: string };

/** Where the local fakes serve Vonage (LocalCarrierServer.env()'s VONAGE_API_URL): its APIs' own paths follow. */
export const VONAGE_ROOT = '/vonage';

/** A Vonage path (under VONAGE_ROOT, or at the sandbox's root) by API: Messages, Reports, else Numbers. */
function vonageApiOf(path: string): CarrierApi {
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'vonage-messages';
  if (path === '/v2/reports' || path.startsWith('/v2/reports/') || path.startsWith('/v3/media/')) return 'vonage-reports';
  return 'vonage-numbers';
}

/**
 * Which carrier API a request to a fake (or to the sandbox) is for, and the root its document's
 * paths follow, from its path: the prefixes LocalCarrierServer.env() points each client at
 * (Telnyx `/v2`, Twilio `/twilio`, Vonage VONAGE_ROOT). At the root itself (the sandbox's Vonage)
 * only Vonage Messages and Numbers are told apart; `/v2` there is Telnyx.
 */
export function apiOf(path: string): { api: CarrierApi; root: string } {
  if (path.startsWith(`${VONAGE_ROOT}/`)) return { api: vonageApiOf(path.slice(VONAGE_ROOT.length)), root: VONAGE_ROOT };
  if (path === '/v2' || path.startsWith('/v2/')) return { api: 'telnyx', root: '' };
  if (path.startsWith('/twilio/')) return { api: 'twilio', root: '' };
  return { api: vonageApiOf(path) === 'vonage-messages' ? 'vonage-messages' : 'vonage-numbers', root: '' };
}

const templateRegex = (template: string) =>
  new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([^}]+)\}/g, (_, name) => `(?<${name.replace(/\W/g, '_')}>[^/]+)`)}$`);

function match(templates: string[], path: string): { template: string; params: Record<string, string> } | undefined {
  // A literal segment beats a parameter (`/number_orders` before `/{id}`): fewest parameters first.
  const ordered = [...templates].sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  for (const template of ordered) {
    const hit = templateRegex(template).exec(path);
    if (!hit) continue;
    const names = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const params = Object.fromEntries(names.map((n) => [n, decodeURIComponent(hit.groups![n.replace(/\W/g, '_')])]));
    return { template, params };
  }
  return undefined;
}

/** The operation `method pathname` (pathname as sent to a fake, without the query) calls. */
export function findOperation(method: string, pathname: string): OperationLookup {
  const { api, root } = apiOf(pathname);
  const document = carrierDocuments().documents[api];
  const path = pathname.slice(root.length + document.prefix.length) || '/';
  const verb = method.toLowerCase();
  const inExtract = match(Object.keys(document.doc.paths), path);
  const operation = inExtract && document.doc.paths[inExtract.template][verb];
  if (inExtract && operation) {
    const name = `${operation.operationId} ${method.toUpperCase()} ${inExtract.template}`;
    return { found: { document, method: verb, template: inExtract.template, operation, pathParams: inExtract.params, name } };
  }
  const all = (document.doc['x-all-operations'] as [string, string, string][]) ?? [];
  const elsewhere = match(all.filter(([m]) => m === verb).map(([, p]) => p), path);
  if (elsewhere) {
    const [, , operationId] = all.find(([m, p]) => m === verb && p === elsewhere.template)!;
    return { outsideExtract: `${operationId} ${method.toUpperCase()} ${elsewhere.template}`, document };
  }
  return { missing: `${method.toUpperCase()} ${path} (${document.api}: no such operation in ${document.doc.info?.title ?? document.api})` };
}
