import { ApiClient } from './api-client.js';
import { startTestApp, type TestApp } from './app.js';
import { telnyxSigner, type TelnyxSigner } from './carrier-signing.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { FakeCarrier } from './fake-carrier.js';
import { waitFor } from './wait.js';

/**
 * The whole messaging pipeline of one test file: the app (HTTP, relay, worker) on its own
 * database, a fake carrier it sends to, a Telnyx key it verifies webhooks with, and a customer
 * owning the given numbers. Out-of-order receipts are retried after ~100 ms. A send whose outcome
 * is unknown is resolved within SEND_OUTCOME_WINDOW_SECONDS = 2 unless `env` says otherwise; the
 * fake carrier's status webhooks (sendReceipt) go to this app.
 */
export class MessagingPipeline {
  private constructor(
    readonly db: TestDatabase,
    readonly app: TestApp,
    readonly carrier: FakeCarrier,
    readonly telnyx: TelnyxSigner,
    readonly customer: ApiClient,
  ) {}

  static async start(numbers: Record<string, 'telnyx' | 'twilio' | 'vonage'>, env: Record<string, string> = {}): Promise<MessagingPipeline> {
    const db = await createTestDatabase();
    const carrier = await new FakeCarrier().start();
    const telnyx = telnyxSigner();
    const app = await startTestApp({
      databaseUrl: db.url,
      relay: true,
      worker: true,
      env: { ...carrier.env(), TELNYX_PUBLIC_KEY: telnyx.publicKey, CARRIER_EVENT_RETRY_BASE_MS: '100', SEND_OUTCOME_WINDOW_SECONDS: '2', ...env },
    });
    carrier.receiptsTo({ appUrl: app.url, telnyx });
    const customer = await ApiClient.forNewAccount(app);
    for (const [phoneNumber, carrierName] of Object.entries(numbers)) {
      await customer.assignNumber(phoneNumber, carrierName);
    }
    return new MessagingPipeline(db, app, carrier, telnyx, customer);
  }

  /** Every number of the account paced at `rate` messages a second (PATCH, as a customer would). */
  async paceEveryNumberAt(rate: number): Promise<void> {
    const { body } = await this.customer.get('/v2/phone_numbers');
    for (const n of body.data) {
      const res = await this.customer.request('PATCH', `/v2/phone_numbers/${n.id}`, { messaging: { send_rate_per_second: rate } });
      if (res.status !== 200) throw new Error(`PATCH send_rate_per_second of ${n.phone_number}: ${res.status}`);
    }
  }

  /** A signed Telnyx webhook delivered to the app; its HTTP status. */
  async deliverTelnyx(body: string): Promise<number> {
    const res = await fetch(`${this.app.url}/webhooks/telnyx`, { method: 'POST', headers: this.telnyx.headers(body), body });
    return res.status;
  }

  /** A message sent through the API, once the fake carrier accepted it and `sent` is recorded. */
  async sendAndWaitSent(from: string, to: string, text: string): Promise<{ id: string; carrierId: string }> {
    const { body } = await this.customer.post('/v2/messages', { from, to, text });
    const sent = await waitFor(() => this.customer.get(`/v2/messages/${body.data.id}`), (r) => r.body.data.status === 'sent', { what: `${text} to be sent` });
    return { id: body.data.id, carrierId: sent.body.data.carrier_message_id };
  }

  /** Customer events of this type (about this message, if given). */
  events(type: string, messageId?: string): Promise<number> {
    return this.db.count(`SELECT count(*) FROM outbound_events WHERE type = $1 AND ($2::text IS NULL OR payload->>'id' = $2)`, [type, messageId ?? null]);
  }

  async stop(): Promise<void> {
    await this.app.close();
    try {
      await this.carrier.stop();
    } finally {
      await this.db.drop();
    }
  }
}
