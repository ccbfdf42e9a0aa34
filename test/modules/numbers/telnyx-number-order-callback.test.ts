import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApiClient } from '../../support/api-client.js';
import { telnyxEvent, telnyxSigner } from '../../support/carrier-signing.js';
import { FakeNumberCarrier } from '../../support/fake-number-carrier.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

/**
 * number_order.complete as Telnyx documents it (webhook numberOrderStatusUpdate and its example:
 * customer_reference and each number's status, no order id or status) settles the order at once;
 * the regular poll is 10 minutes away here, so it cannot be what settled it.
 */
describe('Telnyx number_order.complete in its documented shape', () => {
  const carrier = new FakeNumberCarrier(['+13125550701', '+13125550702']);
  const signer = telnyxSigner();
  beforeAll(async () => {
    await carrier.start();
    carrier.telnyxAsync = true;
  });
  afterAll(async () => {
    await carrier.stop();
  });
  const t = withTestApp({
    relay: true,
    worker: true,
    env: () => ({ ...carrier.env(), TELNYX_PUBLIC_KEY: signer.publicKey, NUMBER_ORDER_POLL_SECONDS: '600', API_RATE_LIMIT_PER_MINUTE: '1000000' }),
  });
  let customer: ApiClient;
  beforeAll(async () => {
    customer = await ApiClient.forNewAccount(t.app);
  });

  const deliver = async (body: string) => (await fetch(`${t.app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).status;
  const pendingOrder = async (phoneNumber: string) => {
    const placed = await customer.post('/v2/phone_number_orders', { carrier: 'telnyx', phone_numbers: [phoneNumber] });
    expect(placed.status).toBe(202);
    const id: string = placed.body.data.id;
    const { rows } = await waitFor(
      () => t.db.pool.query(`SELECT carrier_order_id FROM number_orders WHERE id = $1 AND carrier_order_id IS NOT NULL`, [id]),
      (r) => r.rows.length === 1,
      { what: 'the carrier order id recorded' },
    );
    return { id, carrierOrderId: rows[0].carrier_order_id as string };
  };
  const settled = (id: string) => waitFor(() => customer.get(`/v2/phone_number_orders/${id}`), (r) => r.body.data.status !== 'pending', { what: `order ${id} settled`, intervalMs: 100, timeoutMs: 15_000 });
  const retrieved = (carrierOrderId: string) => carrier.requests.filter((r) => r.method === 'GET' && r.path === `/v2/number_orders/${carrierOrderId}`);

  it('the documented callback (no order id, no order status) is accepted and settles the order at once', async () => {
    const { id, carrierOrderId } = await pendingOrder('+13125550701');
    const payload = carrier.completeTelnyxOrder(carrierOrderId, 'success');
    expect(payload).not.toHaveProperty('id');
    expect(payload).not.toHaveProperty('status');
    expect(await deliver(telnyxEvent('number_order.complete', payload, { id: 'evt-documented-1' }))).toBe(200);
    const done = await settled(id);
    expect(done.body.data).toMatchObject({ status: 'success', phone_numbers: [{ phone_number: '+13125550701', status: 'active' }] });
    // Settled from the callback's own fields: the order was not fetched.
    expect(retrieved(carrierOrderId)).toHaveLength(0);
    await waitFor(() => t.db.count(`SELECT count(*) FROM outbound_events WHERE type = 'order.completed' AND payload->>'id' = $1`, [id]), (n) => n === 1, { what: 'order.completed' });
    // The phone number id (not the order line's) is stored for release.
    const numberId: string = done.body.data.phone_numbers[0].id;
    await waitFor(() => t.db.count(`SELECT count(*) FROM phone_numbers WHERE id = $1 AND carrier_number_id = $2`, [numberId, carrier.held.get('+13125550701')!.id]), (n) => n === 1, { what: 'the Telnyx id stored' });
  });

  it('a callback that does not say how the order ended: the order it names is fetched at once (GET /number_orders/{id}) and settles it', async () => {
    const { id, carrierOrderId } = await pendingOrder('+13125550702');
    carrier.completeTelnyxOrder(carrierOrderId, 'success');
    const silent = { customer_reference: id, phone_numbers: [{ phone_number: '+13125550702' }] };
    expect(await deliver(telnyxEvent('number_order.complete', silent, { id: 'evt-documented-2' }))).toBe(200);
    const done = await settled(id);
    expect(done.body.data).toMatchObject({ status: 'success', phone_numbers: [{ phone_number: '+13125550702', status: 'active' }] });
    expect(retrieved(carrierOrderId).length).toBeGreaterThanOrEqual(1);
    expect(carrier.boughtTwice).toBe(0);
  });
});
