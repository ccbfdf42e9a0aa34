import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sign } from 'node:crypto';
import { connect } from 'node:net';
import { SignatureRejected, type InboundWebhook } from '../../src/carriers/carrier-adapter.js';
import { StripeAdapter } from '../../src/carriers/stripe/stripe-adapter.js';
import { TelnyxAdapter } from '../../src/carriers/telnyx/telnyx-adapter.js';
import { TwilioAdapter } from '../../src/carriers/twilio/twilio-adapter.js';
import { VonageAdapter } from '../../src/carriers/vonage/vonage-adapter.js';
import { loadConfig } from '../../src/platform/config/app-config.js';
import { DEV_STRIPE_WEBHOOK_SECRET, DEV_TWILIO_AUTH_TOKEN, DEV_VONAGE_SIGNATURE_SECRET } from '../../src/telephony/dev-credentials.js';
import { telnyxDevKeyPair } from '../../src/telephony/telnyx-dev-key.js';
import { carrierFixture, formBody, nowSeconds, parseForm, telnyxFixture, telnyxSigner, twilioHeaders, vonageFixture, vonageHeaders, vonageToken } from '../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { freePort } from '../support/ports.js';
import { RoleProcess, waitHttpOk } from '../support/processes.js';
import { invoicePaid, stripeHeaders } from '../support/stripe-signing.js';
import { waitFor } from '../support/wait.js';

/** A peer beyond this machine, as the socket would report it (no traffic is sent anywhere: the adapters are called in-process). */
const REMOTE = '192.0.2.10';
const LOOPBACK_PEERS = ['127.0.0.1', '::1', '::ffff:127.0.0.1'];

type Signed = (peerAddress: string | undefined) => Promise<InboundWebhook>;

/** The development (sandbox) set-up of `npm start`: every credential the published one, every carrier URL loopback. */
const devConfig = () => loadConfig({});

const telnyxDev: Signed = async (peerAddress) => {
  const body = telnyxFixture('message.sent.json');
  const timestamp = String(nowSeconds());
  const signature = sign(null, Buffer.from(`${timestamp}|${body}`), telnyxDevKeyPair().privateKey).toString('base64');
  return { rawBody: Buffer.from(body), body: JSON.parse(body), headers: { 'telnyx-signature-ed25519': signature, 'telnyx-timestamp': timestamp }, url: '/webhooks/telnyx', peerAddress };
};
const twilioDev: Signed = async (peerAddress) => {
  const fields = parseForm(carrierFixture('twilio/status-delivered.form'));
  const headers = twilioHeaders(DEV_TWILIO_AUTH_TOKEN, `${devConfig().publicBaseUrl}/webhooks/twilio/messaging`, fields);
  return { rawBody: Buffer.from(formBody(fields)), body: fields, headers, url: '/webhooks/twilio/messaging', channel: 'messaging', peerAddress };
};
const vonageDev: Signed = async (peerAddress) => {
  const body = vonageFixture('status-delivered.json');
  return { rawBody: Buffer.from(body), body: JSON.parse(body), headers: vonageHeaders(await vonageToken(DEV_VONAGE_SIGNATURE_SECRET, body)), url: '/webhooks/vonage/messages', peerAddress };
};
const stripeDev: Signed = async (peerAddress) => {
  const body = invoicePaid({ invoiceId: 'in_dev', customer: 'cus_dev', lines: [{ lookupKey: 'sms_1000' }] });
  return { rawBody: Buffer.from(body), body: JSON.parse(body), headers: stripeHeaders(body, { secret: DEV_STRIPE_WEBHOOK_SECRET }), url: '/webhooks/billing/stripe', peerAddress };
};

const adapters = {
  telnyx: (config = devConfig()) => new TelnyxAdapter(config),
  twilio: (config = devConfig()) => new TwilioAdapter(config),
  vonage: (config = devConfig()) => new VonageAdapter(config),
  stripe: (config = devConfig()) => ({ accept: async (w: InboundWebhook) => new StripeAdapter(config).accept(w), onModuleDestroy: async () => undefined }),
};

describe('development credentials are taken from loopback peers only (issue 25, item 9)', () => {
  it.each([
    ['telnyx', telnyxDev],
    ['twilio', twilioDev],
    ['vonage', vonageDev],
    ['stripe', stripeDev],
  ] as const)('%s: signed with the published development credential, accepted from loopback, refused (401, a signature problem) from a network peer', async (name, signed) => {
    const adapter = adapters[name]();
    try {
      for (const peer of LOOPBACK_PEERS) await expect(adapter.accept(await signed(peer))).resolves.toBeDefined();
      for (const peer of [REMOTE, '10.0.0.5', '::ffff:192.0.2.10', undefined]) {
        const refused = await adapter.accept(await signed(peer)).then(() => undefined, (err: unknown) => err);
        expect(refused).toBeInstanceOf(SignatureRejected);
        // The caller hears only that the signature failed; which credential, and why, is for the log.
        expect((refused as SignatureRejected).message).not.toMatch(/development|loopback|TOKEN|SECRET|KEY/);
        expect((refused as SignatureRejected).internalReason).toMatch(/loopback peers only/);
      }
    } finally {
      await (adapter as { onModuleDestroy?: () => Promise<void> }).onModuleDestroy?.();
    }
  });

  it('a real credential is not bound to loopback: a Telnyx key of its own verifies a network peer', async () => {
    const signer = telnyxSigner();
    const config = loadConfig({ TELNYX_PUBLIC_KEY: signer.publicKey });
    expect(config.isDevelopmentCredential('telnyx')).toBe(false);
    const adapter = new TelnyxAdapter(config);
    try {
      const body = telnyxFixture('message.sent.json');
      await expect(adapter.accept({ rawBody: Buffer.from(body), body: JSON.parse(body), headers: signer.headers(body), url: '/webhooks/telnyx', peerAddress: REMOTE })).resolves.toBeDefined();
    } finally {
      await adapter.onModuleDestroy();
    }
  });

  it('the configuration names the development credentials in use', () => {
    expect(devConfig().developmentWebhookCredentials).toEqual(['Telnyx webhook key (sandbox)', 'Twilio auth token (sandbox)', 'Vonage signature secret (development)', 'Stripe webhook secret (development)']);
    const real = loadConfig({ TELNYX_PUBLIC_KEY: telnyxSigner().publicKey, TWILIO_AUTH_TOKEN: 'real-token', VONAGE_SIGNATURE_SECRET: 'a-real-vonage-secret-0123456789abcdef', STRIPE_WEBHOOK_SECRET: 'whsec_real' });
    expect(real.developmentWebhookCredentials).toEqual([]);
  });

  it('buying numbers at the real Vonage (VONAGE_NUMBERS_API_URL) is not a development deployment: the development Stripe secret is no longer trusted', () => {
    expect(devConfig().isDevelopmentDeployment).toBe(true);
    const numbersAtVonage = loadConfig({ VONAGE_NUMBERS_API_URL: 'https://rest.nexmo.com' });
    expect(numbersAtVonage.isDevelopmentDeployment).toBe(false);
    expect(numbersAtVonage.stripeWebhookSecret).toBeUndefined();
  });
});

describe('the api process listens on 127.0.0.1 unless HOST says otherwise (issue 25, item 9)', () => {
  let db: TestDatabase;
  const processes: RoleProcess[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await db.drop();
  });

  /** Whether a TCP connection to host:port is accepted (127.0.0.2 is this machine too, but not 127.0.0.1). */
  const accepts = (host: string, port: number) =>
    new Promise<boolean>((resolve) => {
      const socket = connect({ host, port }, () => (socket.destroy(), resolve(true)));
      socket.on('error', () => resolve(false));
    });

  async function startApi(env: Record<string, string>): Promise<{ api: RoleProcess; port: number }> {
    const port = await freePort();
    const api = new RoleProcess('api', { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: `host${port}`, PORT: String(port), LOG_LEVEL: 'warn', ...env }).start();
    processes.push(api);
    await waitHttpOk(`http://127.0.0.1:${port}/health/live`);
    await waitFor(() => api.output, (out) => out.includes('started'), { what: 'the start-up line' });
    return { api, port };
  }

  it('by default: 127.0.0.1 only, and the start-up log names the development credentials', async () => {
    const { api, port } = await startApi({});
    expect(await accepts('127.0.0.1', port)).toBe(true);
    expect(await accepts('127.0.0.2', port)).toBe(false);
    expect(api.output).toContain(`onceline api started on http://127.0.0.1:${port}`);
    expect(api.output).toMatch(/development credentials in use \(webhooks they sign are taken from loopback peers only\): Telnyx webhook key \(sandbox\), Twilio auth token \(sandbox\), Vonage signature secret \(development\), Stripe webhook secret \(development\)/);
  });

  it('HOST=0.0.0.0 (what Docker sets): every interface', async () => {
    const { api, port } = await startApi({ HOST: '0.0.0.0' });
    expect(await accepts('127.0.0.2', port)).toBe(true);
    expect(api.output).toContain(`onceline api started on http://0.0.0.0:${port}`);
  });
});
