import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: imported from ESM, its plugin is module.exports.default.
const addFormats = addFormatsModule.default;

export type Json = Record<string, any>;
export type CarrierApi = 'telnyx' | 'twilio' | 'vonage-messages' | 'vonage-numbers' | 'vonage-reports';

/** One carrier's published OpenAPI document, vendored in test/fixtures/carrier-specs/ (README there says where from). */
export interface CarrierDocument {
  api: CarrierApi;
  doc: Json;
  /** The ajv key the document is registered under: `${key}#/json/pointer` names any schema in it. */
  key: string;
  /** What our clients put before the document's path templates, after the carrier's root (the fakes' Vonage root is operations.ts's VONAGE_ROOT). */
  prefix: string;
}

const FILES: Record<CarrierApi, { file: string; prefix: string }> = {
  // Telnyx: server https://api.telnyx.com/v2; TELNYX_API_URL = <fake>/v2.
  telnyx: { file: 'telnyx-v2.json', prefix: '/v2' },
  // Twilio: server https://api.twilio.com; TWILIO_API_URL = <fake>/twilio.
  twilio: { file: 'twilio-api-v2010.json', prefix: '/twilio' },
  // Vonage Messages: server https://api.nexmo.com/v1/messages, path `/`.
  'vonage-messages': { file: 'vonage-messages-v1.json', prefix: '/v1/messages' },
  // Vonage Numbers: server https://rest.nexmo.com, paths at the root.
  'vonage-numbers': { file: 'vonage-numbers.json', prefix: '' },
  // Vonage Reports: server https://api.nexmo.com, paths `/v2/reports/…` (beside Messages' /v1/messages).
  'vonage-reports': { file: 'vonage-reports.json', prefix: '' },
};

/** Twilio's list pages: the properties that locate a page, relative to https://api.twilio.com. */
const TWILIO_PAGE_URIS = ['uri', 'first_page_uri', 'next_page_uri', 'previous_page_uri'];

/**
 * Twilio's list pages declare `uri`, `first_page_uri`, `next_page_uri` and `previous_page_uri`
 * `format: uri` (an absolute URI), yet the document's own examples of every such page carry them
 * relative ("/2010-04-01/Accounts/AC…/IncomingPhoneNumbers.json?…"), as its resources' `uri`
 * ("The URI of the resource, relative to `https://api.twilio.com`") and Twilio's answers do:
 * these four are read as `uri-reference`. Every other `format: uri` (StatusCallback, VoiceUrl, …)
 * stays absolute.
 */
function twilioPageUrisAreRelative(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(twilioPageUrisAreRelative);
  if (node === null || typeof node !== 'object') return;
  const schema = node as Json;
  for (const name of TWILIO_PAGE_URIS) {
    const property = schema.properties?.[name];
    if (property?.format === 'uri') property.format = 'uri-reference';
  }
  for (const [key, value] of Object.entries(schema)) if (key !== 'example' && key !== 'examples') twilioPageUrisAreRelative(value);
}

/**
 * The 2021 Numbers description authenticates only by `api_key` + `api_secret` in the query;
 * Vonage's current Numbers API reference (https://developer.vonage.com/en/api/numbers) gives
 * every operation "Authorization: Basic <base64>" (the key and secret joined by a colon) in the
 * headers. Both are accepted: the header scheme is added beside the query keys.
 */
function vonageNumbersTakeBasicAuth(doc: Json): void {
  doc.components.securitySchemes.basicAuth = { type: 'http', scheme: 'basic' };
  doc.security = [...doc.security, { basicAuth: [] }];
}

/**
 * Telnyx's DetailRecord is a `oneOf` of seven record schemas, each requiring only `record_type`
 * and none closed, told apart by `discriminator: {propertyName: record_type}` with no mapping:
 * every record matches all seven. Each branch's `record_type` default (`message_detail_record`,
 * …) is the value that selects it, so each branch is read with that value as a constant.
 */
function telnyxDetailRecordsByType(doc: Json): void {
  const record = doc.components.schemas.DetailRecord;
  record.oneOf = record.oneOf.map((branch: Json) => {
    const type = deref(doc, branch).properties.record_type.default;
    return { allOf: [branch, { properties: { record_type: { const: type } } }] };
  });
}

/** The product and direction of each branch of the Reports API's records answer, by the branch's `x-tab-id`. */
const REPORT_BRANCHES: Record<string, { product: string; direction?: string }> = {
  'sms-outbound': { product: 'SMS', direction: 'outbound' },
  'sms-inbound': { product: 'SMS', direction: 'inbound' },
  'voice-call': { product: 'VOICE-CALL' },
  'websocket-call': { product: 'WEBSOCKET-CALL' },
  verify: { product: 'VERIFY-API' },
  'number-insight': { product: 'NUMBER-INSIGHT' },
  'messages-outbound': { product: 'MESSAGES', direction: 'outbound' },
  'messages-inbound': { product: 'MESSAGES', direction: 'inbound' },
  conversations: { product: 'CONVERSATIONS' },
  asr: { product: 'ASR' },
};

/**
 * Three defects of the 2021 Reports description (test/fixtures/carrier-specs/README.md):
 * - its dates (`date_start`, `date_end`, `date_received`, …) say `format: date` while their
 *   descriptions give a date and time (`yyyy-mm-ddThh:mm:ss[.sss]±hh:mm` or `…Z`), as their
 *   examples do: read as `date-time`;
 * - `client_ref` is exactly 40 characters, while the Messages API whose reference it echoes takes
 *   one "of up to 40 characters": read as at most 40;
 * - the records answer is a `oneOf` of ten open branches (SMS outbound, …, Messages outbound, …)
 *   that an answer matches several of at once; each is the one its tab names, so each is read
 *   with its product (and direction) as constants.
 */
function vonageReportsAsDescribed(doc: Json): void {
  const dates = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(dates);
    if (node === null || typeof node !== 'object') return;
    const schema = node as Json;
    if (schema.format === 'date' && typeof schema.type === 'string') schema.format = 'date-time';
    for (const [key, value] of Object.entries(schema)) if (key !== 'example' && key !== 'examples') dates(value);
  };
  dates(doc);
  delete doc.components.schemas.client_ref.minLength;
  // Paging: a TRUNCATED answer's `_links.next.href` carries `cursor` and `iv`, which the 2021
  // description does not declare and Vonage's current guide does (README: Vonage Reports).
  const getRecords = doc.paths['/v2/reports/records'].get;
  for (const name of ['cursor', 'iv']) getRecords.parameters.push({ name, in: 'query', required: false, schema: { type: 'string', maxLength: 2000 } });
  const answer = doc.components.responses.json_record_response.content['application/json'].schema;
  for (const branch of answer.oneOf as Json[]) {
    const own = branch.allOf[1];
    const { product, direction } = REPORT_BRANCHES[own['x-tab-id']];
    branch.allOf.push({ properties: { product: { const: product }, ...(direction ? { direction: { const: direction } } : {}) }, required: ['product'] });
  }
}

/**
 * The defects of the published documents, patched at load time (test/fixtures/carrier-specs/README.md):
 * what each patch changes and why is in that README.
 */
function patchKnownDefects(api: CarrierApi, doc: Json): void {
  if (api === 'telnyx') return telnyxDetailRecordsByType(doc);
  if (api === 'twilio') return twilioPageUrisAreRelative(doc);
  if (api === 'vonage-numbers') return vonageNumbersTakeBasicAuth(doc);
  if (api === 'vonage-reports') return vonageReportsAsDescribed(doc);
  if (api !== 'vonage-messages') return;
  // baseMessageType.required names `message`, a property the v1 API does not have.
  const base = doc.components.schemas.baseMessageType;
  base.required = base.required.filter((name: string) => name !== 'message');
  // The 202 answer is a oneOf of five identical branches, and the 401 and 422 errors oneOfs of
  // open problem schemas of one shape (type, title, detail, instance): no answer could match exactly one.
  for (const status of ['202', '401', '422']) {
    const answer = doc.paths['/'].post.responses[status].content['application/json'].schema;
    answer.anyOf = answer.oneOf;
    delete answer.oneOf;
  }
}

/** OpenAPI 3.0's `nullable` → JSON Schema 2020's `type: [..., "null"]` (and `null` in an enum), for ajv. */
function fromOpenApi30(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(fromOpenApi30);
  if (node === null || typeof node !== 'object') return;
  const schema = node as Json;
  if (schema.nullable === true) {
    if (typeof schema.type === 'string') schema.type = [schema.type, 'null'];
    if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null];
    delete schema.nullable;
  }
  for (const [key, value] of Object.entries(schema)) if (key !== 'example' && key !== 'examples') fromOpenApi30(value);
}

/** Formats the documents use that JSON Schema does not define (Twilio's `phone-number`, …): accepted as any string. */
function customFormats(node: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) node.forEach((n) => customFormats(n, found));
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'format' && typeof value === 'string') found.add(value);
      else if (key !== 'example' && key !== 'examples') customFormats(value, found);
    }
  }
  return found;
}

const FIXTURES = new URL('../../fixtures/carrier-specs/', import.meta.url);

let loaded: { documents: Record<CarrierApi, CarrierDocument>; ajv: Ajv2020 } | undefined;

/** The five documents (loaded, patched and registered with one ajv once per worker) and that ajv. */
export function carrierDocuments(): { documents: Record<CarrierApi, CarrierDocument>; ajv: Ajv2020 } {
  if (loaded) return loaded;
  // strict: false: the documents carry OpenAPI keywords (example, discriminator, x-…) ajv does not know.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, validateFormats: true });
  addFormats(ajv);
  // ajv-formats' `url` refuses loopback and private addresses (where the sandbox and the fakes live): any absolute URL is one.
  ajv.addFormat('url', (value: string) => URL.canParse(value));
  const documents = {} as Record<CarrierApi, CarrierDocument>;
  for (const [api, { file, prefix }] of Object.entries(FILES) as [CarrierApi, (typeof FILES)[CarrierApi]][]) {
    const doc = JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as Json;
    patchKnownDefects(api, doc);
    if (doc.openapi.startsWith('3.0')) fromOpenApi30(doc);
    for (const format of customFormats(doc)) if (!ajv.formats[format]) ajv.addFormat(format, true);
    const key = `https://carrier-specs.test/${file}`;
    ajv.addSchema({ ...doc, $id: key });
    documents[api] = { api, doc, key, prefix };
  }
  loaded = { documents, ajv };
  return loaded;
}

/** The node a local `#/…` reference (or a JSON pointer) names in `doc`. */
export function resolvePointer(doc: Json, pointer: string): any {
  const parts = pointer.replace(/^#?\//, '').split('/').filter((p) => p !== '');
  return parts.reduce((node, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}

/** `node` itself, or what its `$ref` names (references chained through components are followed). */
export function deref(doc: Json, node: any): any {
  let current = node;
  for (let hops = 0; current && typeof current.$ref === 'string' && hops < 20; hops++) current = resolvePointer(doc, current.$ref);
  return current;
}

/** The JSON pointer of a path inside a document, for ajv: `key#/paths/~1messages/post/…`. */
export function schemaRef(document: CarrierDocument, ...segments: string[]): string {
  return `${document.key}#/${segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}
