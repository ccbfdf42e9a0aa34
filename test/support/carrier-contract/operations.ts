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

/** Which carrier API a request to a fake (or to the sandbox) is for, from its path: the prefixes LocalCarrierServer.env() points each client at. */
export function apiOf(path: string): CarrierApi {
  if (path === '/v2' || path.startsWith('/v2/')) return 'telnyx';
  if (path.startsWith('/twilio/')) return 'twilio';
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'vonage-messages';
  return 'vonage-numbers';
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
  const document = carrierDocuments().documents[apiOf(pathname)];
  const path = pathname.slice(document.prefix.length) || '/';
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
