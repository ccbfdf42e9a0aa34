import { describe, expect, it } from '@jest/globals';
import { telnyxEvent } from '../../support/carrier-signing.js';
import { withTelnyxOrders } from '../../support/telnyx-number-orders.js';
import { waitFor } from '../../support/wait.js';

/**
 * Telnyx orders numbers asynchronously: number_order.complete (ingested like any Telnyx event)
 * or, when it is late, a poll of GET /v2/number_orders/:id settles the order, exactly once.
 */
describe('Telnyx number orders completed asynchronously', () => {
  const orders = withTelnyxOrders(['+13125550201', '+13125550202', '+13125550203', '+13125550204'], {
    NUMBER_ORDER_POLL_SECONDS: '2',
    CARRIER_EVENT_RETRY_BASE_MS: '100',
  });
  const { carrier, t, deliver, pendingOrder: order } = orders;
  const events = (type: string, id: string) => t.db.count(`SELECT count(*) FROM outbound_events WHERE type = $1 AND payload->>'id' = $2`, [type, id]);
  const orderNow = (id: string) => orders.customer.get(`/v2/phone_number_orders/${id}`);
  const processed = (eventId: string) =>
    waitFor(() => t.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [eventId]), (n) => n === 1, { what: `${eventId} processed` });

  it('duplicated and reordered number_order.complete: the order completes once, the number becomes the account\'s, order.completed once', async () => {
    const { id, carrierOrderId } = await order('+13125550201');
    expect((await orderNow(id)).body.data.status).toBe('pending');
    const payload = carrier.completeTelnyxOrder(carrierOrderId, 'success');
    const original = telnyxEvent('number_order.complete', payload, { id: 'evt-order-1' });
    const resent = telnyxEvent('number_order.complete', payload, { id: 'evt-order-1-resent', attempt: 2 });
    // The resend arrives first, then the original twice.
    expect(await deliver(resent)).toBe(200);
    expect(await deliver(original)).toBe(200);
    expect(await deliver(telnyxEvent('number_order.complete', payload, { id: 'evt-order-1', attempt: 3 }))).toBe(200);
    await processed('evt-order-1');
    await processed('evt-order-1-resent');

    expect((await orderNow(id)).body.data).toMatchObject({ status: 'success', phone_numbers: [{ phone_number: '+13125550201', status: 'active' }] });
    await waitFor(() => events('order.completed', id), (n) => n === 1, { what: 'order.completed' });
    expect(await events('order.failed', id)).toBe(0);
    expect(await t.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id LIKE 'evt-order-1%' AND note LIKE '%settled already%'`)).toBe(1);
    expect(carrier.boughtTwice).toBe(0);
  });

  it('a failure reported after the success changes nothing (the first settlement wins)', async () => {
    const { id, carrierOrderId } = await order('+13125550202');
    const success = carrier.completeTelnyxOrder(carrierOrderId, 'success');
    const failure = { ...success, phone_numbers: (success.phone_numbers as object[]).map((n) => ({ ...n, status: 'failure' })) };
    expect(await deliver(telnyxEvent('number_order.complete', success, { id: 'evt-order-2a' }))).toBe(200);
    await processed('evt-order-2a');
    expect(await deliver(telnyxEvent('number_order.complete', failure, { id: 'evt-order-2b' }))).toBe(200);
    await processed('evt-order-2b');
    expect((await orderNow(id)).body.data.status).toBe('success');
    expect(await events('order.failed', id)).toBe(0);
    await waitFor(() => events('order.completed', id), (n) => n === 1, { what: 'order.completed' });
  });

  it('a failed order: order.failed once, the number is free to order again', async () => {
    const { id, carrierOrderId } = await order('+13125550203');
    const payload = carrier.completeTelnyxOrder(carrierOrderId, 'failure');
    expect(await deliver(telnyxEvent('number_order.complete', payload, { id: 'evt-order-3' }))).toBe(200);
    await processed('evt-order-3');
    expect((await orderNow(id)).body.data).toMatchObject({ status: 'failed', phone_numbers: [{ status: 'failed' }] });
    await waitFor(() => events('order.failed', id), (n) => n === 1, { what: 'order.failed' });
    const again = await orders.customer.post('/v2/phone_number_orders', { carrier: 'telnyx', phone_numbers: ['+13125550203'] });
    expect(again.status).toBe(202);
  });

  it('number_order.complete late or lost: the poll of GET /v2/number_orders/:id settles the order, once', async () => {
    const { id, carrierOrderId } = await order('+13125550204');
    carrier.completeTelnyxOrder(carrierOrderId, 'success');
    await waitFor(() => orderNow(id), (r) => r.body.data.status === 'success', { what: 'the poll to settle the order', intervalMs: 200 });
    expect(carrier.requests.some((r) => r.method === 'GET' && r.path === `/v2/number_orders/${carrierOrderId}`)).toBe(true);
    await waitFor(() => events('order.completed', id), (n) => n === 1, { what: 'order.completed' });
  });
});
