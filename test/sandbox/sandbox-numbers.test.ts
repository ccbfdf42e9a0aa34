import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApiClient } from '../support/api-client.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/ports.js';
import { startSandboxChild, type SandboxChild } from '../support/sandbox-child.js';
import { waitFor } from '../support/wait.js';

type Carrier = 'telnyx' | 'twilio' | 'vonage';

/**
 * The sandbox selling numbers to the real app: search, order (Telnyx asynchronously, its
 * number_order.complete duplicated and re-signed) and release on each carrier, with half the
 * purchase answers lost. Nothing is bought twice.
 */
describe('sandbox numbers: search, order and release under chaos', () => {
  let db: TestDatabase;
  let app: TestApp;
  let sandbox: SandboxChild;
  let customer: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    sandbox = await startSandboxChild({ PUBLIC_BASE_URL: base, SANDBOX_CHAOS: 'duplicate=3,resign,delay_ms=30', SANDBOX_NUMBER_LOST_ANSWER_PERCENT: '50', SANDBOX_NUMBER_ORDER_DELAY_MS: '200', LOG_LEVEL: 'error' });
    app = await startTestApp({
      databaseUrl: db.url,
      relay: true,
      worker: true,
      port,
      env: { PUBLIC_BASE_URL: base, TELNYX_API_URL: `${sandbox.url}/v2`, TWILIO_API_URL: `${sandbox.url}/twilio`, VONAGE_API_URL: sandbox.url, API_RATE_LIMIT_PER_MINUTE: '1000000', NUMBER_ORDER_POLL_SECONDS: '30' },
    });
    customer = await ApiClient.forNewAccount(app);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.drop();
  });

  const sandboxNumbers = async () => (await (await fetch(`${sandbox.url}/sandbox/numbers`)).json()) as { stats: Record<string, number>; held: { phone_number: string; carrier: string; config: Record<string, string> }[] };

  it.each(['telnyx', 'twilio', 'vonage'] as Carrier[])('%s: a number found by search is bought once, becomes ours, and is released', async (carrier) => {
    const search = await customer.get(`/v2/available_phone_numbers?carrier=${carrier}&area_code=773&limit=3`);
    expect(search.status).toBe(200);
    expect(search.body.data).toHaveLength(3);
    const phoneNumber: string = search.body.data[0].phone_number;
    const placed = await customer.post('/v2/phone_number_orders', { carrier, phone_numbers: [phoneNumber] }, { 'Idempotency-Key': `sandbox-${carrier}` });
    expect(placed.status).toBe(202);
    const done = await waitFor(() => customer.get(`/v2/phone_number_orders/${placed.body.data.id}`), (r) => r.body.data.status !== 'pending', { what: 'the order settled', intervalMs: 200, timeoutMs: 30_000 });
    expect(done.body.data).toMatchObject({ status: 'success', phone_numbers: [{ phone_number: phoneNumber, status: 'active' }] });
    const held = (await sandboxNumbers()).held.find((n) => n.phone_number === phoneNumber);
    expect(held?.carrier).toBe(carrier);

    const numberId = done.body.data.phone_numbers[0].id;
    expect((await customer.request('DELETE', `/v2/phone_numbers/${numberId}`)).status).toBe(202);
    await waitFor(() => customer.get(`/v2/phone_numbers/${numberId}`), (r) => r.body.data.status === 'released', { what: 'released', timeoutMs: 30_000 });
    expect((await sandboxNumbers()).held.some((n) => n.phone_number === phoneNumber)).toBe(false);
  }, 60_000);

  it('nothing was bought twice, though answers were lost and completions duplicated', async () => {
    const { stats } = await sandboxNumbers();
    expect(stats.bought).toBe(3);
    expect(stats.bought_twice).toBe(0);
    expect(stats.released).toBe(3);
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'order.completed'`)).toBe(3);
  });
});
