import { shown, type Divergence } from './divergence.js';
import { header, type ObservedRequest } from './exchange.js';
import { checkSchema } from './schema-check.js';
import { webhookFor } from './webhooks.js';

/**
 * A webhook a carrier (the sandbox playing one) sent to the app, against the document's schema of
 * its event type: Telnyx by data.event_type (with the two signature headers every Telnyx webhook
 * declares), Vonage Messages inbound or status. Twilio's document publishes no callback schema, so a
 * Twilio callback is not checked here (its fields are documented in prose only).
 */
export function checkWebhook(api: 'telnyx' | 'vonage-messages' | 'twilio', request: ObservedRequest): Divergence[] {
  if (api === 'twilio') return [];
  let body: any;
  try {
    body = JSON.parse(request.body);
  } catch {
    return [{ operation: `${api} webhook`, field: '/body', doc: 'a JSON body', sent: shown(request.body) }];
  }
  const published = webhookFor(api, body);
  const type = api === 'telnyx' ? body?.data?.event_type : body?.status === undefined ? 'inbound' : `status ${body.status}`;
  if (!published) return [{ operation: `${api} webhook ${shown(type)}`, field: '/body/data/event_type', doc: 'an event type the document publishes a webhook for', sent: shown(type) }];
  const operation = `webhook ${published.name} (${type})`;
  const out = checkSchema(published.ref, body, operation, '/body');
  if (api === 'telnyx') {
    for (const name of ['telnyx-timestamp', 'telnyx-signature-ed25519']) {
      if (!header(request.headers, name)) out.push({ operation, field: `/header/${name}`, doc: 'required header', sent: 'nothing' });
    }
  }
  return out;
}
