import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject, type ParameterObject, type PathItemObject, type SchemaObject } from '@nestjs/swagger';
import { CUSTOMER_EVENT_PAYLOADS } from './customer-event-payloads.js';
import { CUSTOMER_EVENT_TYPES, type CustomerEventType } from './modules/webhooks/event-types.js';
import { ErrorBody, schemaName } from './platform/http/api-docs.js';

/**
 * The OpenAPI 3.1 description of the customer API, assembled from the controllers' decorators
 * and the schema classes beside the DTOs, plus the customer webhooks generated from
 * CUSTOMER_EVENT_PAYLOADS. Served at /docs-json; `npm run openapi` writes it to
 * docs/openapi.json, and test/api/openapi.test.ts fails when the two differ.
 */

/** Every tag an operation uses, with what it groups (Redocly's tag rules want each defined). */
const TAGS: [name: string, description: string][] = [
  ['Phone numbers', 'The numbers you send from and receive on, and the carrier that serves each'],
  ['Messages', 'SMS: send, schedule, read; every status change is also a message.* event'],
  ['Calls', 'Voice: calls in (through a number\'s ring plan) and out, their legs and carrier timeline; every transition is also a call.* event'],
  ['Usage', 'The usage ledger: one row per billable fact, integers in micro-units'],
  ['Webhook endpoints', 'Where customer events are delivered (Standard Webhooks 1.0)'],
  ['Events', 'Customer events: what was, or will be, delivered to your endpoints'],
  ['API keys', "The account's API keys (the key itself is shown only once, by the admin CLI)"],
];

const STANDARD_WEBHOOK_HEADERS: ParameterObject[] = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event id (evt_…), identical on every attempt: deduplicate on it',
    schema: { type: 'string', pattern: '^evt_[0-9a-z]{26}$' },
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds when this attempt was sent; refuse one far from your clock',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,<base64 HMAC-SHA256(secret bytes, "<webhook-id>.<webhook-timestamp>.<body>")>`; during a secret rotation (24 h) two, space-separated. The `standardwebhooks` packages verify it.',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$' },
  },
];

const WEBHOOK_RESPONSES = {
  '2XX': { description: 'Received. Any 2xx within the timeout (15 s by default) ends the delivery' },
  '410': { description: 'Gone: the endpoint is disabled at once and its deliveries are parked until it is enabled again' },
  default: { description: "Anything else, or no answer in time: retried on the retry schedule (about 9 attempts over 2 days); a 429's or 503's Retry-After is honoured" },
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** message.delivered → MessageDeliveredEvent */
function eventSchemaName(type: string): string {
  return `${type.split(/[._]/).map((w) => w[0].toUpperCase() + w.slice(1)).join('')}Event`;
}

function eventSchema(type: CustomerEventType): SchemaObject {
  return {
    type: 'object',
    description: `The body of a ${type} delivery`,
    required: ['type', 'timestamp', 'data'],
    properties: {
      type: { type: 'string', const: type } as SchemaObject,
      timestamp: { type: 'string', format: 'date-time', description: 'When the event happened; the same on every attempt' },
      data: ref(schemaName(CUSTOMER_EVENT_PAYLOADS[type].data)),
    },
  };
}

function webhook(type: CustomerEventType): PathItemObject {
  return {
    post: {
      operationId: `${type.replace(/[._](\w)/g, (_, c: string) => c.toUpperCase())}Webhook`,
      summary: `Sent when ${CUSTOMER_EVENT_PAYLOADS[type].when}`,
      description: 'A POST with a JSON body to each enabled endpoint subscribed to this type, signed with its secret (Standard Webhooks 1.0).',
      security: [],
      parameters: STANDARD_WEBHOOK_HEADERS,
      requestBody: { required: true, content: { 'application/json': { schema: ref(eventSchemaName(type)) } } },
      responses: WEBHOOK_RESPONSES,
    },
  };
}

/** The webhooks section, a schema per event type, and the resources an Event's data can be. */
function addCustomerWebhooks(document: OpenAPIObject): void {
  const schemas = (document.components!.schemas ??= {});
  for (const type of CUSTOMER_EVENT_TYPES) schemas[eventSchemaName(type)] = eventSchema(type);
  const resources = [...new Set(CUSTOMER_EVENT_TYPES.map((t) => schemaName(CUSTOMER_EVENT_PAYLOADS[t].data)))];
  schemas.EventData = { description: (schemas.EventData as SchemaObject).description, oneOf: resources.map(ref) };
  document.webhooks = Object.fromEntries(CUSTOMER_EVENT_TYPES.map((type) => [type, webhook(type)]));
}

export function describeApi(app: INestApplication): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Onceline API')
    .setDescription('SMS, calls, usage and customer webhooks: every carrier rumor becomes exactly one fact.')
    .setVersion('2')
    .addServer('/', 'This server')
    // addSecurity, not addBearerAuth: that one adds `bearerFormat: JWT`, and an olk_ key is opaque, not a JWT.
    .addSecurity('bearer', { type: 'http', scheme: 'bearer', description: 'API key (olk_...)' });
  for (const [name, description] of TAGS) builder.addTag(name, description);
  const document = SwaggerModule.createDocument(app, builder.build(), {
    extraModels: [ErrorBody, ...Object.values(CUSTOMER_EVENT_PAYLOADS).map((p) => p.data)],
  });
  addCustomerWebhooks(document);
  return document;
}
