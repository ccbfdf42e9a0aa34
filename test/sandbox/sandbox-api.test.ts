import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { TelnyxWebhook } from 'telnyx/lib/webhooks';
import { loadConfig } from '../../src/platform/config/app-config.js';
import { readEnvelope, normalizeTelnyx } from '../../src/carriers/telnyx/telnyx-events.js';
import { telnyxPublicKey, telnyxSignatureProblem } from '../../src/carriers/telnyx/telnyx-signature.js';
import { readCallback } from '../../src/carriers/twilio/twilio-events.js';
import { twilioSignatureMatches } from '../../src/carriers/twilio/twilio-signature.js';
import { ChaosSyntaxError, formatChaos, parseChaos } from '../../src/sandbox/chaos.js';
import { DEFAULT_SANDBOX_TELNYX_SEED, telnyxDevKeyPair } from '../../src/telephony/telnyx-dev-key.js';
import { carrierFixture, parseForm } from '../support/carrier-signing.js';
import { runNode } from '../support/run-node.js';
import { startSandboxChild, type SandboxChild } from '../support/sandbox-child.js';
import { waitFor } from '../support/wait.js';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.js';

const SID = 'AC00000000000000000000000000000000';
const TOKEN = 'sandbox-twilio-auth-token';
const TWILIO_AUTH = `Basic ${Buffer.from(`${SID}:${TOKEN}`).toString('base64')}`;
const SEED = 'sandbox-api-test-seed';

describe('sandbox chaos syntax and the dev Telnyx key', () => {
  it('parses every knob, prints it back, and names a bad one', () => {
    const chaos = parseChaos('duplicate=3,resign,early_receipt,contradict,reorder,delay_ms=200,fail_rate=0.3,reject');
    expect(chaos).toEqual({ duplicate: 3, resign: true, earlyReceipt: true, contradict: true, reorder: true, delayMs: 200, failRate: 0.3, rejectRate: 1 });
    expect(parseChaos(formatChaos(chaos))).toEqual(chaos);
    expect(formatChaos(parseChaos(''))).toBe('off');
    expect(parseChaos('resign', parseChaos('duplicate=2'))).toMatchObject({ duplicate: 2, resign: true });
    expect(parseChaos('off', chaos)).toEqual(parseChaos(''));
    expect(() => parseChaos('duplicate=0')).toThrow(ChaosSyntaxError);
    expect(() => parseChaos('delay_ms=999999')).toThrow(/delay_ms/);
    expect(() => parseChaos('fail_rate=2')).toThrow(/fail_rate/);
    expect(() => parseChaos('explode')).toThrow(/unknown chaos knob "explode"/);
  });

  it('derives one key pair per seed; the app trusts it only while its Telnyx API is loopback or when configured', () => {
    const pair = telnyxDevKeyPair(SEED);
    expect(telnyxDevKeyPair(SEED).publicKey).toBe(pair.publicKey);
    expect(telnyxDevKeyPair('another seed').publicKey).not.toBe(pair.publicKey);
    expect(loadConfig({}).telnyxPublicKey).toBe(telnyxDevKeyPair(DEFAULT_SANDBOX_TELNYX_SEED).publicKey);
    expect(loadConfig({ SANDBOX_TELNYX_SEED: SEED, TELNYX_API_URL: 'http://localhost:9/v2' }).telnyxPublicKey).toBe(pair.publicKey);
    expect(loadConfig({ TELNYX_API_URL: 'https://api.telnyx.com/v2' }).telnyxPublicKey).toBeUndefined();
    const explicit = telnyxDevKeyPair('explicit').publicKey;
    expect(loadConfig({ TELNYX_API_URL: 'https://api.telnyx.com/v2', TELNYX_PUBLIC_KEY: explicit }).telnyxPublicKey).toBe(explicit);
  });
});

describe('the sandbox as a child process (node dist/main.js sandbox), a local receiver in place of the app', () => {
  let receiver: WebhookReceiver;
  let sandbox: SandboxChild;
  const publicKey = telnyxDevKeyPair(SEED).publicKey;

  const telnyxSend = (body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${sandbox.url}/v2/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer sandbox-telnyx-key', 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal,
    });
  /** Telnyx's SearchDetailRecords for messages from `cli` to `cld`, as a sender's lookup asks it. */
  const detailRecords = (cli: string, cld: string) =>
    fetch(`${sandbox.url}/v2/detail_records?${new URLSearchParams({ 'filter[record_type]': 'messaging', 'filter[cli]': cli, 'filter[cld]': cld })}`, { headers: { authorization: 'Bearer sandbox-telnyx-key' } });
  const twilioSend = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${sandbox.url}/twilio/2010-04-01/Accounts/${SID}/Messages.json`, {
      method: 'POST',
      headers: { authorization: TWILIO_AUTH, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields).toString(),
    });
  const sms = { from: '+15550001111', to: '+15550002222', text: 'hello' };
  const telnyxFor = (carrierId: string) => receiver.requests.filter((r) => r.path.split('?')[0] === '/webhooks/telnyx' && JSON.parse(r.body).data.payload.id === carrierId);
  const twilioFor = (sid: string) => receiver.requests.filter((r) => r.path.startsWith('/webhooks/twilio') && parseForm(r.body).MessageSid === sid);
  const idle = () => waitFor(() => sandbox.stats(), (s) => s.webhooks.pending === 0, { what: 'the sandbox to be idle' });

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    receiver.fallback = { status: 200, body: '{"status":"accepted"}' };
    sandbox = await startSandboxChild({ PUBLIC_BASE_URL: receiver.url, SANDBOX_TELNYX_SEED: SEED, SANDBOX_RECEIPT_DELAY_MS: '30' });
  });
  afterAll(async () => {
    await sandbox?.stop();
    await receiver?.close();
  });
  beforeEach(async () => {
    await idle();
    await fetch(`${sandbox.url}/sandbox/stats/reset`, { method: 'POST' });
  });

  it('Telnyx: bearer auth and body checked; a send answers the message and is followed by signed message.sent then message.finalized', async () => {
    expect((await telnyxSend(sms, { authorization: 'Bearer wrong' })).status).toBe(401);
    const bad = await telnyxSend({ ...sms, to: '555' });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as any).errors[0].source.pointer).toBe('/to');

    const res = await telnyxSend(sms);
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as any;
    expect(data).toMatchObject({ record_type: 'message', direction: 'outbound', from: { phone_number: sms.from }, to: [{ phone_number: sms.to, status: 'queued' }], parts: 1 });
    const hooks = await waitFor(() => telnyxFor(data.id), (rs) => rs.length === 2, { what: 'two Telnyx webhooks' });
    await idle();
    expect(telnyxFor(data.id)).toHaveLength(2);
    const key = telnyxPublicKey(publicKey);
    const telnyxLib = new TelnyxWebhook(publicKey);
    const normalized = [];
    for (const hook of hooks) {
      const headers = { 'telnyx-signature-ed25519': hook.headers['telnyx-signature-ed25519'], 'telnyx-timestamp': hook.headers['telnyx-timestamp'] };
      expect(telnyxSignatureProblem(key, { signature: headers['telnyx-signature-ed25519'], timestamp: headers['telnyx-timestamp'], rawBody: Buffer.from(hook.body) }, 300)).toBeUndefined();
      await expect(telnyxLib.verify(hook.body, headers)).resolves.toBeUndefined();
      normalized.push(normalizeTelnyx(readEnvelope(JSON.parse(hook.body))));
    }
    expect(normalized.map((e) => [e.kind, (e as { status?: string }).status])).toEqual([['message.status', 'sent'], ['message.status', 'delivered']]);
    // The same shape as the shared fixture, key for key.
    const fixture = JSON.parse(carrierFixture('telnyx/message.finalized.delivered.json'));
    const finalized = JSON.parse(hooks[1]!.body);
    expect(Object.keys(finalized.data).sort()).toEqual(Object.keys(fixture.data).sort());
    expect(Object.keys(finalized.data.payload).sort()).toEqual(expect.arrayContaining(Object.keys(fixture.data.payload).sort()));
  });

  it('Telnyx: an Idempotency-Key is ignored, as at Telnyx (SendMessage declares none): a second send is a second message; both are in the detail records with their webhook_url', async () => {
    const webhookUrl = `${receiver.url}/webhooks/telnyx?ref=twice`;
    const first = (await (await telnyxSend({ ...sms, webhook_url: webhookUrl }, { 'idempotency-key': 'msg_same' })).json()) as any;
    const again = (await (await telnyxSend({ ...sms, webhook_url: webhookUrl }, { 'idempotency-key': 'msg_same' })).json()) as any;
    expect(again.data.id).not.toBe(first.data.id);
    await idle();
    expect(telnyxFor(first.data.id)).toHaveLength(2);
    expect(telnyxFor(again.data.id)).toHaveLength(2);
    expect(JSON.parse(telnyxFor(first.data.id)[0]!.body).data.payload.webhook_url).toBe(webhookUrl);
    expect((await sandbox.stats()).sends).toMatchObject({ requests: 2, accepted: 2, replayed: 0 });
    const records = (await (await detailRecords(sms.from, sms.to)).json()) as any;
    const ours = records.data.filter((r: { delivery_status_webhook_url: string }) => r.delivery_status_webhook_url === webhookUrl).map((r: { uuid: string }) => r.uuid);
    expect(ours.sort()).toEqual([first.data.id, again.data.id].sort());
  });

  it('Twilio: basic auth and form checked; 201 queued, then sent and delivered callbacks to StatusCallback, signed over that URL and the sorted fields', async () => {
    const callback = `${receiver.url}/webhooks/twilio/messaging`;
    const fields = { From: sms.from, To: sms.to, Body: sms.text, StatusCallback: callback };
    expect((await twilioSend(fields, { authorization: 'Basic d3Jvbmc6d3Jvbmc=' })).status).toBe(401);
    expect((await twilioSend({ ...fields, To: 'nope' })).status).toBe(400);
    const res = await twilioSend(fields);
    expect(res.status).toBe(201);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ status: 'queued', account_sid: SID, to: sms.to });
    expect(body.sid).toMatch(/^SM[0-9a-f]{32}$/);
    const hooks = await waitFor(() => twilioFor(body.sid), (rs) => rs.length === 2, { what: 'two Twilio callbacks' });
    const fixtureKeys = Object.keys(parseForm(carrierFixture('twilio/status-delivered.form'))).sort();
    for (const hook of hooks) {
      const form = parseForm(hook.body);
      expect(twilioSignatureMatches(TOKEN, callback, form, hook.headers['x-twilio-signature'])).toBe(true);
      expect(hook.headers['i-twilio-idempotency-token']).toBeTruthy();
      expect(Object.keys(form).sort()).toEqual(fixtureKeys);
    }
    expect(hooks.map((h) => readCallback(parseForm(h.body), 'messaging').status)).toEqual(['sent', 'delivered']);
    // Without a StatusCallback Twilio calls nobody back.
    const silent = (await (await twilioSend({ From: sms.from, To: sms.to, Body: 'no callback' })).json()) as any;
    await idle();
    expect(twilioFor(silent.sid)).toHaveLength(0);
  });

  it('duplicate=3,resign,contradict: each event three times, the second copy under a new event id, the third repeating the first id; then delivery_failed', async () => {
    const res = await telnyxSend(sms, { 'x-sandbox-chaos': 'duplicate=3,resign,contradict' });
    const id = ((await res.json()) as any).data.id;
    await idle();
    const hooks = telnyxFor(id).map((r: ReceivedRequest) => JSON.parse(r.body).data);
    expect(hooks).toHaveLength(9);
    const byStatus = (status: string) => hooks.filter((d) => d.payload.to[0].status === status);
    for (const status of ['sent', 'delivered', 'delivery_failed']) {
      const copies = byStatus(status);
      expect(copies).toHaveLength(3);
      expect(new Set(copies.map((d) => d.id)).size).toBe(2);
    }
    expect(byStatus('delivery_failed')[0].payload.errors[0].code).toBe('40008');
    const attempts = telnyxFor(id).map((r) => JSON.parse(r.body).meta.attempt).sort();
    expect(attempts).toEqual([1, 1, 1, 1, 1, 1, 2, 2, 2]);
    expect((await sandbox.stats()).webhooks).toMatchObject({ events: 3, deliveries: 9, duplicates: 6, resigned: 3, contradictions: 1 });
  });

  it('a webhook the app does not take (500) is retried, Telnyx with the next meta.attempt', async () => {
    receiver.script({ status: 500 });
    const id = ((await (await telnyxSend(sms)).json()) as any).data.id;
    await idle();
    const sent = telnyxFor(id).map((r) => JSON.parse(r.body)).filter((b) => b.data.event_type === 'message.sent');
    expect(sent.map((b) => b.meta.attempt)).toEqual([1, 2]);
    expect(new Set(sent.map((b) => b.data.id)).size).toBe(1);
    expect((await sandbox.stats()).webhooks).toMatchObject({ retries: 1, failed: 0 });
  });

  it('reject: Telnyx 422 and Twilio 400, nothing sent back', async () => {
    const telnyx = await telnyxSend(sms, { 'x-sandbox-chaos': 'reject' });
    expect(telnyx.status).toBe(422);
    expect(((await telnyx.json()) as any).errors[0].code).toBe('40310');
    const twilio = await twilioSend({ From: sms.from, To: sms.to, Body: 'x', StatusCallback: `${receiver.url}/webhooks/twilio/messaging` }, { 'x-sandbox-chaos': 'reject' });
    expect(twilio.status).toBe(400);
    await idle();
    expect((await sandbox.stats()).sends).toMatchObject({ rejected: 2, accepted: 0 });
    expect((await sandbox.stats()).webhooks.deliveries).toBe(0);
  });

  it('fail_rate=1: 500, 503, or a send held unanswered that was accepted all the same: its series runs, and the detail records show it', async () => {
    let timedOut = false;
    for (let i = 0; i < 40 && !timedOut; i++) {
      try {
        const res = await telnyxSend({ ...sms, to: '+13125550999', webhook_url: `${receiver.url}/webhooks/telnyx?ref=k${i}` }, { 'x-sandbox-chaos': 'fail_rate=1' }, AbortSignal.timeout(1500));
        expect([500, 503]).toContain(res.status);
        await res.text();
      } catch (err) {
        expect((err as Error).name).toBe('TimeoutError');
        timedOut = true;
        const records = (await (await detailRecords(sms.from, '+13125550999')).json()) as any;
        const found = records.data.filter((r: { delivery_status_webhook_url: string }) => r.delivery_status_webhook_url.endsWith(`?ref=k${i}`));
        expect(found).toHaveLength(1);
        await idle();
        expect(telnyxFor(found[0].uuid)).toHaveLength(2);
      }
    }
    expect(timedOut).toBe(true);
    const stats = await sandbox.stats();
    expect(stats.sends.failed.timeout).toBe(1);
    expect(stats.sends.accepted).toBe(1);
    expect(stats.sends.replayed).toBe(0);
  });

  it('POST /sandbox/inbound: Telnyx message.received and Twilio inbound form, as the fixtures', async () => {
    expect((await fetch(`${sandbox.url}/sandbox/inbound`, { method: 'POST', body: '{"from":"x"}' })).status).toBe(400);
    const inbound = async (carrier: string) => {
      const res = await fetch(`${sandbox.url}/sandbox/inbound`, { method: 'POST', body: JSON.stringify({ from: '+13125550001', to: '+17735550002', text: 'hi there', carrier }) });
      expect(res.status).toBe(202);
      return ((await res.json()) as any).data.id as string;
    };
    const telnyxId = await inbound('telnyx');
    const twilioSid = await inbound('twilio');
    await idle();
    const [telnyxHook] = telnyxFor(telnyxId);
    const event = normalizeTelnyx(readEnvelope(JSON.parse(telnyxHook!.body)));
    expect(event).toMatchObject({ kind: 'message.received', from: '+13125550001', to: '+17735550002', text: 'hi there', carrierMessageId: telnyxId });
    const [twilioHook] = twilioFor(twilioSid);
    const form = parseForm(twilioHook!.body);
    expect(Object.keys(form).sort()).toEqual(Object.keys(parseForm(carrierFixture('twilio/inbound-sms.form'))).sort());
    expect(twilioSignatureMatches(TOKEN, `${receiver.url}/webhooks/twilio/messaging`, form, twilioHook!.headers['x-twilio-signature'])).toBe(true);
    expect((await sandbox.stats()).inbound).toBe(2);
  });

  it('throughput per sending number (POST /sandbox/throughput): past it a new message is answered 429 with Retry-After in each carrier\'s words, counted', async () => {
    const control = (body: unknown) => fetch(`${sandbox.url}/sandbox/throughput`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await control({ per_number: -1 })).status).toBe(400);
    expect((await control({ numbers: { '555': 1 } })).status).toBe(400);
    try {
      expect(await (await control({ per_number: 0, numbers: { [sms.from]: 2 } })).json()).toEqual({ per_number: 0, numbers: { [sms.from]: 2 } });
      const answers = [await telnyxSend(sms, { 'idempotency-key': 'msg_t1' }), await telnyxSend(sms), await telnyxSend(sms)];
      expect(answers.map((r) => r.status)).toEqual([200, 200, 429]);
      expect(answers[2].headers.get('retry-after')).toBe('1');
      expect(((await answers[2].json()) as any).errors[0].title).toBe('Too many requests');
      const twilio = await twilioSend({ From: sms.from, To: sms.to, Body: 'hello' });
      expect(twilio.status).toBe(429);
      expect(((await twilio.json()) as any).code).toBe(20429);
      // another number is not limited
      expect((await telnyxSend({ ...sms, from: '+15550003333' })).status).toBe(200);
      expect((await sandbox.stats()).sends).toMatchObject({ throttled: 2, throttled_by_number: { [sms.from]: 2 }, accepted_by_number: { [sms.from]: 2, '+15550003333': 1 }, replayed: 0 });
    } finally {
      await control({ per_number: 0, numbers: { [sms.from]: null } });
      await idle();
    }
  });

  it('chaos switched at run time by POST /sandbox/chaos applies to later sends; a bad spec is refused', async () => {
    const bad = await fetch(`${sandbox.url}/sandbox/chaos`, { method: 'POST', body: '{"chaos":"duplicate=many"}' });
    expect(bad.status).toBe(400);
    await sandbox.setChaos('duplicate=2');
    const id = ((await (await telnyxSend(sms)).json()) as any).data.id;
    await sandbox.setChaos('off');
    await idle();
    expect(telnyxFor(id)).toHaveLength(4);
    expect(((await (await fetch(`${sandbox.url}/sandbox/chaos`)).json()) as any).chaos).toBe('off');
  });

  it('a reset while a series runs keeps it pending until it ends, then counts its later deliveries afresh', async () => {
    await telnyxSend(sms, { 'x-sandbox-chaos': 'contradict' });
    await waitFor(() => sandbox.stats(), (s) => s.webhooks.deliveries >= 1, { what: 'the first delivery' });
    const reset = (await (await fetch(`${sandbox.url}/sandbox/stats/reset`, { method: 'POST' })).json()) as any;
    expect(reset.webhooks.pending).toBe(1);
    await idle();
    const after = await sandbox.stats();
    expect(after.webhooks.pending).toBe(0);
    expect(after.webhooks.deliveries).toBeGreaterThanOrEqual(1); // at least the contradiction, 1 s later
    expect(after.webhooks.deliveries).toBeLessThanOrEqual(2);
  });

  it('refuses a StatusCallback outside loopback without sending anything', async () => {
    const res = await twilioSend({ From: sms.from, To: sms.to, Body: 'x', StatusCallback: 'http://192.0.2.10/webhooks/twilio/messaging' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).message).toMatch(/loopback/);
    expect((await sandbox.stats()).sends.accepted).toBe(0);
  });
});

describe('the sandbox refuses to start', () => {
  it('when PUBLIC_BASE_URL is not loopback, naming it and SANDBOX_ALLOW_REMOTE', async () => {
    const run = await runNode(['dist/main.js', 'sandbox'], { PUBLIC_BASE_URL: 'http://192.0.2.10:3000', SANDBOX_PORT: '0' });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/PUBLIC_BASE_URL=http:\/\/192\.0\.2\.10:3000: 192\.0\.2\.10 is not a loopback address/);
    expect(run.stderr).toContain('SANDBOX_ALLOW_REMOTE=1');
  });

  it('when SANDBOX_CHAOS has a knob out of range or a bad syntax', async () => {
    const range = await runNode(['dist/main.js', 'sandbox'], { SANDBOX_CHAOS: 'duplicate=99', SANDBOX_PORT: '0' });
    expect(range.code).toBe(1);
    expect(range.stderr).toMatch(/SANDBOX_CHAOS="duplicate=99": chaos knob duplicate/);
    const syntax = await runNode(['dist/main.js', 'sandbox'], { SANDBOX_CHAOS: 'duplicate=lots', SANDBOX_PORT: '0' });
    expect(syntax.code).toBe(1);
    expect(syntax.stderr).toMatch(/SANDBOX_CHAOS/);
  });
});
