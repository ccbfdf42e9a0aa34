import { carrierDocuments, deref, type CarrierApi, type Json } from './documents.js';

/** A webhook a document publishes for an event type: where its schema is, and the document's example of it. */
export interface PublishedWebhook {
  api: CarrierApi;
  /** The document's name for it: `callHangup`, `inbound-message`, `messageStatusSMS`. */
  name: string;
  /** Telnyx event types it carries (`call.hangup`); Vonage: `inbound` or `status`. */
  eventTypes: string[];
  /** ajv ref of the schema of the whole body. */
  ref: string;
  /** Its schema, resolved one level (for examples). */
  schema: Json;
}

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function telnyxWebhooks(): PublishedWebhook[] {
  const { telnyx } = carrierDocuments().documents;
  return Object.entries(telnyx.doc.webhooks as Json).map(([name, item]) => {
    const schema = deref(telnyx.doc, item.post.requestBody.content['application/json'].schema);
    const data = deref(telnyx.doc, schema.properties?.data) ?? {};
    const eventType = deref(telnyx.doc, data.properties?.event_type) ?? {};
    return {
      api: 'telnyx' as const, name, schema,
      eventTypes: (eventType.enum ?? [eventType.example]).filter(Boolean),
      ref: `${telnyx.key}#/webhooks/${escape(name)}/post/requestBody/content/application~1json/schema`,
    };
  });
}

/**
 * Vonage Messages: the inbound message is the document's x-webhook; a status has no x-webhook
 * entry (the v1 description publishes its schemas, messageStatus<Channel>, in components only).
 */
function vonageWebhooks(): PublishedWebhook[] {
  const vonage = carrierDocuments().documents['vonage-messages'];
  const inbound = vonage.doc['x-webhooks']['inbound-message']['{$request.body#/callback}'].post.requestBody.content['application/json'].schema;
  return [
    {
      api: 'vonage-messages', name: 'inbound-message', eventTypes: ['inbound'], schema: inbound,
      ref: `${vonage.key}#/x-webhooks/inbound-message/${escape('{$request.body#/callback}')}/post/requestBody/content/application~1json/schema`,
    },
    { api: 'vonage-messages', name: 'messageStatusSMS', eventTypes: ['status'], schema: vonage.doc.components.schemas.messageStatusSMS, ref: `${vonage.key}#/components/schemas/messageStatusSMS` },
  ];
}

let all: PublishedWebhook[] | undefined;

/** Every webhook the Telnyx and Vonage Messages documents publish (Twilio's document publishes none). */
export function publishedWebhooks(): PublishedWebhook[] {
  return (all ??= [...telnyxWebhooks(), ...vonageWebhooks()]);
}

/** The published webhook a body is an instance of, by its event type; undefined when none is published. */
export function webhookFor(api: 'telnyx' | 'vonage-messages', body: Json): PublishedWebhook | undefined {
  const type = api === 'telnyx' ? body?.data?.event_type : body?.status === undefined ? 'inbound' : 'status';
  return publishedWebhooks().find((w) => w.api === api && w.eventTypes.includes(type));
}

/** A body as the document shows it: the schema's own example, else one built from its properties' examples. */
export function exampleOf(api: CarrierApi, schema: unknown, depth = 0): unknown {
  const doc = carrierDocuments().documents[api].doc;
  const s = deref(doc, schema) as Json | undefined;
  if (!s || depth > 12) return undefined;
  if (s.example !== undefined) return s.example;
  if (s.examples?.length) return s.examples[0];
  const branches = [...(s.allOf ?? []), ...(s.oneOf ?? []).slice(0, 1), ...(s.anyOf ?? []).slice(0, 1)];
  if (s.properties || branches.length) {
    const out: Json = {};
    for (const b of branches) Object.assign(out, exampleOf(api, b, depth + 1) as Json);
    for (const [k, v] of Object.entries(s.properties ?? {})) {
      const value = exampleOf(api, v, depth + 1);
      if (value !== undefined) out[k] = value;
    }
    return out;
  }
  if (s.type === 'array' || s.items) {
    const item = exampleOf(api, s.items, depth + 1);
    return item === undefined ? [] : [item];
  }
  return s.enum?.[0];
}
