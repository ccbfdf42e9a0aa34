import { afterAll, beforeAll, expect } from '@jest/globals';
import { ApiClient } from './api-client.js';
import { telnyxSigner } from './carrier-signing.js';
import { FakeNumberCarrier } from './fake-number-carrier.js';
import { waitFor } from './wait.js';
import { withTestApp, type TestContext } from './with-test-app.js';

export interface TelnyxOrders {
  carrier: FakeNumberCarrier;
  t: TestContext;
  readonly customer: ApiClient;
  /** Delivers a signed Telnyx webhook body; the app's HTTP status. */
  deliver(body: string): Promise<number>;
  /** Orders one number on Telnyx and waits until the carrier's order id (the order still pending there) is recorded. */
  pendingOrder(phoneNumber: string): Promise<{ id: string; carrierOrderId: string }>;
}

/**
 * The set-up of the Telnyx asynchronous order tests: a fake whose orders stay pending until
 * `carrier.completeTelnyxOrder`, the app (relay and workers) trusting the test's webhook signer,
 * and one customer. Call it at the top of a describe block.
 */
export function withTelnyxOrders(offered: string[], env: Record<string, string>): TelnyxOrders {
  const carrier = new FakeNumberCarrier(offered);
  const signer = telnyxSigner();
  beforeAll(async () => {
    await carrier.start();
    carrier.telnyxAsync = true;
  });
  afterAll(async () => {
    await carrier.stop();
  });
  const t = withTestApp({ relay: true, worker: true, env: () => ({ ...carrier.env(), TELNYX_PUBLIC_KEY: signer.publicKey, API_RATE_LIMIT_PER_MINUTE: '1000000', ...env }) });
  let customer: ApiClient | undefined;
  beforeAll(async () => {
    customer = await ApiClient.forNewAccount(t.app);
  });
  return {
    carrier,
    t,
    get customer() {
      return customer!;
    },
    deliver: async (body) => (await fetch(`${t.app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).status,
    async pendingOrder(phoneNumber) {
      const placed = await customer!.post('/v2/phone_number_orders', { carrier: 'telnyx', phone_numbers: [phoneNumber] });
      expect(placed.status).toBe(202);
      const id: string = placed.body.data.id;
      const { rows } = await waitFor(
        () => t.db.pool.query(`SELECT carrier_order_id FROM number_orders WHERE id = $1 AND carrier_order_id IS NOT NULL`, [id]),
        (r) => r.rows.length === 1,
        { what: 'the carrier order id recorded' },
      );
      return { id, carrierOrderId: rows[0].carrier_order_id as string };
    },
  };
}
