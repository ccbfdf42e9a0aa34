import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { ApiClient } from '../support/api-client.js';
import { DescribedApi, typedClient, type OpenApiDocument, type TypedClient } from '../support/described-api.js';
import { FakeCarrier } from '../support/fake-carrier.js';
import { waitFor } from '../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { withTestApp } from '../support/with-test-app.js';

const RATE_LIMIT = 40;
const OUR_NUMBER = '+15550101010';

/**
 * A customer's view: the client generated from the description (docs/openapi.d.ts +
 * openapi-fetch) against the running app, with every answer held to the description the app
 * serves (status documented, required headers, body valid against its schema), and the
 * webhooks the customer's endpoint receives held to the webhooks section. If the description
 * lies about any of it, this fails.
 */
describe('the typed client generated from the API description, against the running app', () => {
  const carrier = new FakeCarrier();
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    await carrier.start();
    receiver = await startWebhookReceiver();
  });
  const t = withTestApp({ relay: true, worker: true, env: () => ({ ...carrier.env(), API_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT) }) });
  let described: DescribedApi;
  let api: TypedClient;
  let customer: ApiClient;

  beforeAll(async () => {
    described = new DescribedApi((await (await fetch(`${t.app.url}/docs-json`)).json()) as OpenApiDocument);
    customer = await ApiClient.forNewAccount(t.app);
    api = typedClient(t.app.url, customer.apiKey, described);
  });
  afterAll(async () => {
    await receiver?.close();
    await carrier.stop();
  });

  it('is assigned a number, sends a message, lists its events, and receives its webhook as described', async () => {
    const endpoint = await api.POST('/v2/webhook_endpoints', { body: { url: `${receiver.url}/hooks`, event_types: ['message.sent'] } });
    expect(endpoint.response.status).toBe(201);
    const secret = endpoint.data!.data.secret;

    const assigned = await customer.assignNumber(OUR_NUMBER, 'telnyx');
    const number = await api.GET('/v2/phone_numbers/{id}', { params: { path: { id: assigned.id } } });
    expect(number.data!.data).toMatchObject({ record_type: 'phone_number', phone_number: OUR_NUMBER, status: 'active' });

    const send = () => api.POST('/v2/messages', { body: { from: OUR_NUMBER, to: '+15550102020', text: 'hello, typed world' }, params: { header: { 'Idempotency-Key': 'typed-client-1' } } });
    const sent = await send();
    expect(sent.response.status).toBe(202);
    const message = sent.data!.data;
    expect(message).toMatchObject({ record_type: 'message', direction: 'outbound', status: 'queued', segments: 1, encoding: 'GSM-7' });
    const replay = await send();
    expect(replay.response.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.data!.data.id).toBe(message.id);

    const [delivery] = await receiver.waitForRequests(1);
    expect(described.checkWebhook(delivery.headers, delivery.body)).toEqual([]);
    expect(() => new Webhook(secret).verify(delivery.body, delivery.headers)).not.toThrow();

    const events = await api.GET('/v2/events', { params: { query: { type: 'message.sent' } } });
    expect(events.data!.data.map((e) => [e.type, (e.data as { id: string }).id])).toEqual([['message.sent', message.id]]);
    const eventId = events.data!.data[0].id;
    const event = await waitFor(() => api.GET('/v2/events/{id}', { params: { path: { id: eventId } } }), (e) => e.data!.data.deliveries[0]?.status === 'delivered', {
      intervalMs: 250,
      what: 'the delivery recorded',
    });
    expect(delivery.headers['webhook-id']).toBe(event.data!.data.id);

    const read = await api.GET('/v2/messages/{id}', { params: { path: { id: message.id } } });
    expect(read.data!.data.status_history.map((h) => h.status)).toEqual(expect.arrayContaining(['queued', 'sent']));
    const listed = await api.GET('/v2/messages', { params: { query: { direction: 'outbound', 'page[size]': 1 } } });
    expect(listed.data!.data.map((m) => m.id)).toEqual([message.id]);
    expect(listed.data!.meta.next_cursor).toBeNull();
    expect((await api.GET('/v2/usage')).data!.data).toMatchObject({ sms_outbound_segments: 1, currency: 'USD' });
    expect((await api.GET('/v2/usage/records')).data!.data.map((r) => r.resource_id)).toEqual([message.id]);
    expect((await api.GET('/v2/phone_numbers')).data!.data.map((n) => n.phone_number)).toEqual([OUR_NUMBER]);
    expect((await api.GET('/v2/api_keys')).data!.data).toHaveLength(1);
  });

  it('answers errors as described: errors[] bodies, 401, 404, 409, 422, and 429 with Retry-After', async () => {
    const stranger = typedClient(t.app.url, undefined, described);
    const unauthenticated = await stranger.GET('/v2/messages');
    expect(unauthenticated.response.status).toBe(401);
    expect(unauthenticated.error!.errors[0].code).toBe('unauthorized');

    const missing = await api.GET('/v2/messages/{id}', { params: { path: { id: 'msg_00000000000000000000000000' } } });
    expect(missing.response.status).toBe(404);

    const other = typedClient(t.app.url, (await ApiClient.forNewAccount(t.app, 'other')).apiKey, described);
    const taken = await other.POST('/v2/phone_number_orders', { body: { carrier: 'telnyx', phone_numbers: [OUR_NUMBER] } });
    expect(taken.response.status).toBe(409);
    expect(taken.error!.errors[0]).toMatchObject({ code: 'phone_number_taken', source: { pointer: '/phone_numbers/0' } });

    const invalid = await api.POST('/v2/messages', { body: { from: OUR_NUMBER, to: 'not a number', text: '' } });
    expect(invalid.response.status).toBe(422);
    expect(invalid.error!.errors.map((e) => e.source?.pointer)).toEqual(expect.arrayContaining(['/to', '/text']));
    const badPage = await api.GET('/v2/events', { params: { query: { 'page[size]': 0 } } });
    expect(badPage.response.status).toBe(422);
    expect(badPage.error!.errors[0].source?.parameter).toBe('page[size]');

    // A fixed one-minute window: within 2 × limit + 1 requests at least one window is exceeded.
    const limited = typedClient(t.app.url, (await ApiClient.forNewAccount(t.app, 'busy')).apiKey, described);
    let answer = await limited.GET('/v2/phone_numbers');
    for (let n = 1; answer.response.status !== 429 && n <= 2 * RATE_LIMIT + 1; n++) answer = await limited.GET('/v2/phone_numbers');
    expect(answer.response.status).toBe(429);
    expect(Number(answer.response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    expect([...described.checked]).toEqual(expect.arrayContaining([
      'GET /v2/messages → 401', 'GET /v2/messages/{id} → 404', 'POST /v2/phone_number_orders → 409', 'POST /v2/messages → 422', 'GET /v2/phone_numbers → 429',
    ]));
  });
});
