import { describe, expect, it } from '@jest/globals';
import { telnyxEvent } from '../../support/carrier-signing.js';
import { withTelnyxOrders } from '../../support/telnyx-number-orders.js';
import { waitFor } from '../../support/wait.js';

/**
 * number_order.complete as Telnyx documents it (webhook numberOrderStatusUpdate and its example:
 * customer_reference and each number's status, no order id or status) settles the order at once;
 * the regular poll is 10 minutes away here, so it cannot be what settled it.
 */
describe('Telnyx number_order.complete in its documented shape', () => {
  const orders = withTelnyxOrders(['+13125550701', '+13125550702'], { NUMBER_ORDER_POLL_SECONDS: '600' });
  const { carrier, t, deliver, pendingOrder } = orders;
  const settled = (id: string) => waitFor(() => orders.customer.get(`/v2/phone_number_orders/${id}`), (r) => r.body.data.status !== 'pending', { what: `order ${id} settled`, intervalMs: 100, timeoutMs: 15_000 });
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
