import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { ApiClient } from '../support/api-client.js';
import { DescribedApi, typedClient, type OpenApiDocument, type TypedClient } from '../support/described-api.js';
import { FakeNumberCarrier } from '../support/fake-number-carrier.js';
import { waitFor } from '../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { withTestApp } from '../support/with-test-app.js';

const WANTED = '+13125550401';

/** Numbers through the generated client: search, order, the order's webhook, release, all held to the description. */
describe('the typed client on numbers, against the running app', () => {
  const carrier = new FakeNumberCarrier([WANTED, '+13125550402']);
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    await carrier.start();
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await carrier.stop();
  });
  const t = withTestApp({ relay: true, worker: true, env: () => ({ ...carrier.env(), API_RATE_LIMIT_PER_MINUTE: '1000000' }) });
  let described: DescribedApi;
  let api: TypedClient;

  beforeAll(async () => {
    described = new DescribedApi((await (await fetch(`${t.app.url}/docs-json`)).json()) as OpenApiDocument);
    api = typedClient(t.app.url, (await ApiClient.forNewAccount(t.app)).apiKey, described);
  });

  it('searches, orders (replayed with its Idempotency-Key), receives order.completed as described, lists and releases the number', async () => {
    const endpoint = await api.POST('/v2/webhook_endpoints', { body: { url: `${receiver.url}/numbers`, event_types: ['order.completed', 'number.released'] } });
    const secret = endpoint.data!.data.secret;

    const found = await api.GET('/v2/available_phone_numbers', { params: { query: { carrier: 'twilio', area_code: '312', contains: '0401', features: 'sms,voice', limit: 5 } } });
    expect(found.data!.data.map((n) => [n.phone_number, n.carrier, n.monthly_price_micros])).toEqual([[WANTED, 'twilio', t.app.config.PRICE_NUMBER_MONTH_MICROS]]);

    const place = () => api.POST('/v2/phone_number_orders', { body: { carrier: 'twilio', phone_numbers: [WANTED] }, params: { header: { 'Idempotency-Key': 'typed-order-1' } } });
    const placed = await place();
    expect(placed.response.status).toBe(202);
    expect(placed.data!.data).toMatchObject({ record_type: 'phone_number_order', status: 'pending' });
    const replay = await place();
    expect(replay.response.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.data!.data.id).toBe(placed.data!.data.id);

    const orderId = placed.data!.data.id;
    const done = await waitFor(() => api.GET('/v2/phone_number_orders/{id}', { params: { path: { id: orderId } } }), (r) => r.data!.data.status === 'success', { what: 'the order', intervalMs: 200 });
    const [delivery] = await receiver.waitForRequests(1);
    expect(described.checkWebhook(delivery.headers, delivery.body)).toEqual([]);
    expect(() => new Webhook(secret).verify(delivery.body, delivery.headers)).not.toThrow();
    expect(JSON.parse(delivery.body)).toMatchObject({ type: 'order.completed', data: { id: orderId, status: 'success' } });
    expect((await api.GET('/v2/phone_number_orders')).data!.data.map((o) => o.id)).toEqual([orderId]);

    const numberId = done.data!.data.phone_numbers[0].id;
    const released = await api.DELETE('/v2/phone_numbers/{id}', { params: { path: { id: numberId } } });
    expect(released.response.status).toBe(202);
    expect(released.data!.data.status).toBe('releasing');
    const [, gone] = await receiver.waitForRequests(2);
    expect(described.checkWebhook(gone.headers, gone.body)).toEqual([]);
    expect(JSON.parse(gone.body)).toMatchObject({ type: 'number.released', data: { id: numberId, status: 'released' } });

    const badSearch = await api.GET('/v2/available_phone_numbers', { params: { query: { limit: 500 } } });
    expect(badSearch.response.status).toBe(422);
    expect(badSearch.error!.errors[0].source?.parameter).toBe('limit');
    const missing = await api.GET('/v2/phone_number_orders/{id}', { params: { path: { id: 'ord_00000000000000000000000000' } } });
    expect(missing.response.status).toBe(404);
    expect([...described.checked]).toEqual(expect.arrayContaining([
      'GET /v2/available_phone_numbers → 200', 'POST /v2/phone_number_orders → 202', 'GET /v2/phone_number_orders/{id} → 200', 'DELETE /v2/phone_numbers/{id} → 202',
      'GET /v2/available_phone_numbers → 422', 'GET /v2/phone_number_orders/{id} → 404',
    ]));
  });
});
