import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApiClient } from '../support/api-client.js';
import { telnyxSigner, vonageHeaders, vonageToken } from '../support/carrier-signing.js';
import { checkWebhook, exampleOf, expectConformant, publishedWebhooks, type PublishedWebhook } from '../support/carrier-contract/index.js';
import { FakeCallControl } from '../support/fake-call-control.js';
import { FakeCarrier } from '../support/fake-carrier.js';
import { telnyxRouter } from '../support/telnyx-router.js';
import { waitFor } from '../support/wait.js';
import { withTestApp } from '../support/with-test-app.js';

/** The webhooks of the documents whose event types the app consumes (src/carriers/*-events.ts). */
const CONSUMED = {
  telnyx: ['callInitiated', 'callAnswered', 'callBridged', 'callRecordingSaved', 'transcription', 'callHangup', 'deliveryUpdate', 'inboundMessage', 'numberOrderStatusUpdate'],
  'vonage-messages': ['inbound-message', 'messageStatusSMS'],
};

/**
 * Where a document's own example disagrees with its schema (test/fixtures/carrier-specs/README.md):
 * the app is fed the example as published all the same.
 */
const EXAMPLE_DEFECTS: Record<string, string[]> = { messageStatusSMS: ['/body/error/title'] };

const signer = telnyxSigner();
const webhook = (api: string, name: string): PublishedWebhook => publishedWebhooks().find((w) => w.api === api && w.name === name)!;
const example = (w: PublishedWebhook): any => structuredClone(exampleOf(w.api, w.schema));

describe('contract tier: every webhook the documents publish for an event type we consume, fed to the running app as the carrier signs it', () => {
  let sends: FakeCarrier;
  let calls: FakeCallControl;
  let router: Awaited<ReturnType<typeof telnyxRouter>>;
  let customer: ApiClient;
  beforeAll(async () => {
    sends = await new FakeCarrier().start();
    calls = await new FakeCallControl().start();
    router = await telnyxRouter(calls, sends);
  });
  const t = withTestApp({
    relay: true, worker: true,
    env: () => ({ ...sends.env(), TELNYX_API_URL: `${router.url}/v2`, TELNYX_PUBLIC_KEY: signer.publicKey, CARRIER_EVENT_RETRY_BASE_MS: '100' }),
  });
  beforeAll(async () => {
    customer = await ApiClient.forNewAccount(t.app);
  });
  afterAll(async () => {
    await router?.close();
    await Promise.all([sends?.stop(), calls?.stop()]);
  });

  async function deliverTelnyx(body: unknown): Promise<number> {
    const raw = JSON.stringify(body);
    return (await fetch(`${t.app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(raw), body: raw })).status;
  }
  async function deliverVonage(body: unknown): Promise<number> {
    const raw = JSON.stringify(body);
    return (await fetch(`${t.app.url}/webhooks/vonage/messages`, { method: 'POST', headers: vonageHeaders(await vonageToken(t.app.config.VONAGE_SIGNATURE_SECRET!, raw)), body: raw })).status;
  }

  /** The stored event, once processing decided: acted on (processed, not `ignored`, no error) or kept visibly unhandled. */
  async function expectActedOn(carrier: string, carrierEventId: string): Promise<{ note: string | null; unhandled: boolean }> {
    const row = await waitFor(
      async () => (await t.db.pool.query(`SELECT processed_at, unhandled_since, error, note FROM carrier_events WHERE carrier = $1 AND carrier_event_id = $2`, [carrier, carrierEventId])).rows[0],
      (r) => r && (r.processed_at || r.unhandled_since || r.error),
      { what: `${carrier} event ${carrierEventId} processed` },
    );
    expect({ error: row.error, ignored: /^ignored/.test(row.note ?? '') }).toEqual({ error: null, ignored: false });
    return { note: row.note, unhandled: row.unhandled_since !== null };
  }

  it('every consumed webhook is published, and each published example is valid by its own schema', () => {
    const names = publishedWebhooks().map((w) => `${w.api} ${w.name}`);
    for (const [api, list] of Object.entries(CONSUMED)) for (const name of list) expect(names).toContain(`${api} ${name}`);
    // Every Telnyx event type the parser reads is one of a consumed webhook's.
    const parsed = [...readFileSync(new URL('../../src/carriers/telnyx/telnyx-events.ts', import.meta.url), 'utf8').matchAll(/(?<!kind: )'((?:call|message|number_order)\.[a-z_.]+)'/g)].map((m) => m[1]);
    const consumedTypes = CONSUMED.telnyx.flatMap((n) => webhook('telnyx', n).eventTypes);
    expect(parsed.filter((type) => !consumedTypes.includes(type))).toEqual([]);
    for (const [api, list] of Object.entries(CONSUMED)) {
      for (const name of list) {
        const headers = { 'telnyx-timestamp': '1', 'telnyx-signature-ed25519': 'x' };
        const divergences = checkWebhook(api as 'telnyx', { method: 'POST', url: '/', headers, body: JSON.stringify(example(webhook(api, name))) });
        expect({ name, divergences: divergences.map((d) => d.field) }).toEqual({ name, divergences: EXAMPLE_DEFECTS[name] ?? [] });
      }
    }
  });

  it('Telnyx call events, as published, in one call to a number of ours: each is acted on (the saved recording becomes the voicemail)', async () => {
    const initiated = example(webhook('telnyx', 'callInitiated'));
    const { call_session_id: session, call_control_id: caller, to } = initiated.data.payload;
    await customer.assignNumber(to, 'telnyx', { ring_plan: { targets: [{ to: '+15557790199' }], fallback: { action: 'voicemail' } } });
    for (const name of CONSUMED.telnyx.filter((n) => n.startsWith('call') || n === 'transcription')) {
      const body = example(webhook('telnyx', name));
      body.data.id = randomUUID();
      // The transcription example is of another call: here, of this call's caller (the call examples share one).
      if (name === 'transcription') Object.assign(body.data.payload, { call_session_id: session, call_control_id: caller });
      expect({ name, status: await deliverTelnyx(body) }).toEqual({ name, status: 200 });
      const { note } = await expectActedOn('telnyx', body.data.id);
      expect({ name, note }).not.toEqual({ name, note: expect.stringMatching(/not a leg of a call of ours/) });
    }
    const recordingUrl = example(webhook('telnyx', 'callRecordingSaved')).data.payload.recording_urls.mp3;
    expect(await t.db.count(`SELECT count(*) FROM calls WHERE carrier_call_id = $1 AND voicemail_url = $2`, [session, recordingUrl])).toBe(1);
    calls.contract.clear();
  });

  it('Telnyx inboundMessage as published is recorded', async () => {
    const body = example(webhook('telnyx', 'inboundMessage'));
    body.data.id = randomUUID();
    body.data.payload.id = randomUUID();
    await customer.assignNumber(body.data.payload.to[0].phone_number, 'telnyx');
    expect(await deliverTelnyx(body)).toBe(200);
    await expectActedOn('telnyx', body.data.id);
    expect(await t.db.count(`SELECT count(*) FROM messages WHERE direction = 'inbound' AND carrier_message_id = $1`, [body.data.payload.id])).toBe(1);
  });

  it('Telnyx deliveryUpdate as published updates the message it names', async () => {
    const body = example(webhook('telnyx', 'deliveryUpdate'));
    const { from, to } = body.data.payload;
    await customer.assignNumber(from.phone_number, 'telnyx');
    sends.answerNext({ status: 200, body: { data: { id: body.data.payload.id, record_type: 'message' } } });
    const sent = await customer.post('/v2/messages', { from: from.phone_number, to: to[0].phone_number, text: 'contract' });
    await waitFor(() => customer.get(`/v2/messages/${sent.body.data.id}`), (r) => r.body.data.status === 'sent', { what: 'the send' });
    body.data.id = randomUUID();
    expect(await deliverTelnyx(body)).toBe(200);
    await expectActedOn('telnyx', body.data.id);
    sends.contract.clear();
  });

  it('Telnyx numberOrderStatusUpdate as published is accepted: an order that is not ours is kept and noted, nothing asked', async () => {
    const body = example(webhook('telnyx', 'numberOrderStatusUpdate'));
    body.data.id = randomUUID();
    expect(await deliverTelnyx(body)).toBe(200);
    const { note } = await expectActedOn('telnyx', body.data.id);
    expect(note).toBe(`no telnyx order of ours has customer_reference ${JSON.stringify(body.data.payload.customer_reference)}: kept, not acted on`);
    expect(await t.db.count(`SELECT count(*) FROM outbox_jobs WHERE name = 'poll-number-order'`)).toBe(0);
  });

  it('Vonage inbound-message (SMS) as published, without message_type, is recorded', async () => {
    const body = example(webhook('vonage-messages', 'inbound-message'));
    body.message_uuid = randomUUID();
    expect(body.message_type).toBeUndefined();
    await customer.assignNumber(`+${body.to}`, 'vonage');
    expect(await deliverVonage(body)).toBe(200);
    await expectActedOn('vonage', `${body.message_uuid}:inbound`);
    expect(await t.db.count(`SELECT count(*) FROM messages WHERE direction = 'inbound' AND carrier_message_id = $1`, [body.message_uuid])).toBe(1);
  });

  it('Vonage messageStatusSMS as published updates the message it names', async () => {
    const body = example(webhook('vonage-messages', 'messageStatusSMS'));
    body.message_uuid = randomUUID();
    await customer.assignNumber(`+${body.from}`, 'vonage');
    sends.answerNext({ status: 202, body: { message_uuid: body.message_uuid } });
    const sent = await customer.post('/v2/messages', { from: `+${body.from}`, to: `+${body.to}`, text: 'contract' });
    await waitFor(() => customer.get(`/v2/messages/${sent.body.data.id}`), (r) => r.body.data.status === 'sent', { what: 'the send' });
    expect(await deliverVonage(body)).toBe(200);
    await expectActedOn('vonage', `${body.message_uuid}:${body.status}`);
    expectConformant(sends.contract, 'Vonage send');
  });
});
