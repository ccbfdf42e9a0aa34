import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { decodeJwt, jwtVerify } from 'jose';
import { normalizeVonage, readCallback } from '../../src/carriers/vonage/vonage-events.js';
import { verifyVonageWebhook } from '../../src/carriers/vonage/vonage-signature.js';
import { DEV_VONAGE_API_KEY, DEV_VONAGE_API_SECRET, DEV_VONAGE_SIGNATURE_SECRET } from '../../src/telephony/dev-credentials.js';
import { carrierFixture } from '../support/carrier-signing.js';
import { startSandboxChild, type SandboxChild } from '../support/sandbox-child.js';
import { waitFor } from '../support/wait.js';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.js';

const AUTH = `Basic ${Buffer.from(`${DEV_VONAGE_API_KEY}:${DEV_VONAGE_API_SECRET}`).toString('base64')}`;
const SMS = { message_type: 'text', channel: 'sms', from: '447700900000', to: '447700900002', text: 'hello' };

/** The sandbox's Vonage Messages emulation (node dist/main.js sandbox), a local receiver in place of the app. */
describe('the sandbox as Vonage: POST /v1/messages and JWT-signed webhooks', () => {
  let receiver: WebhookReceiver;
  let sandbox: SandboxChild;

  const send = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${sandbox.url}/v1/messages`, { method: 'POST', headers: { authorization: AUTH, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const hooksFor = (uuid: string) => receiver.requests.filter((r) => r.path === '/webhooks/vonage/messages' && JSON.parse(r.body).message_uuid === uuid);
  const jti = (hook: ReceivedRequest) => decodeJwt(hook.headers.authorization!.replace('Bearer ', '')).jti;
  const idle = () => waitFor(() => sandbox.stats(), (s) => s.webhooks.pending === 0, { what: 'the sandbox to be idle' });

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    receiver.fallback = { status: 200, body: '{"status":"accepted"}' };
    sandbox = await startSandboxChild({ PUBLIC_BASE_URL: receiver.url, SANDBOX_RECEIPT_DELAY_MS: '30' });
  });
  afterAll(async () => {
    await sandbox?.stop();
    await receiver?.close();
  });
  beforeEach(async () => {
    await idle();
    await fetch(`${sandbox.url}/sandbox/stats/reset`, { method: 'POST' });
  });

  it('checks basic auth and the body; 202 {message_uuid}, then submitted and delivered under HS256 tokens jose verifies', async () => {
    expect((await send(SMS, { authorization: 'Basic d3Jvbmc6d3Jvbmc=' })).status).toBe(401);
    const bad = await send({ ...SMS, to: 'nope' });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as any).invalid_parameters).toEqual([{ name: 'to', reason: expect.any(String) }]);
    const res = await send({ ...SMS, client_ref: 'msg_first' });
    expect(res.status).toBe(202);
    const { message_uuid: uuid } = (await res.json()) as { message_uuid: string };
    const hooks = await waitFor(() => hooksFor(uuid), (rs) => rs.length === 2, { what: 'two Vonage webhooks' });
    await idle();
    const statuses = [];
    for (const hook of hooks) {
      const token = hook.headers.authorization!.replace('Bearer ', '');
      const { payload } = await jwtVerify(token, new TextEncoder().encode(DEV_VONAGE_SIGNATURE_SECRET), { algorithms: ['HS256'] });
      expect(payload).toMatchObject({ jti: expect.any(String), iat: expect.any(Number), payload_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect(await verifyVonageWebhook(DEV_VONAGE_SIGNATURE_SECRET, hook.headers.authorization, Buffer.from(hook.body), 300)).toEqual({ jti: payload.jti });
      statuses.push(normalizeVonage(readCallback(JSON.parse(hook.body))));
    }
    expect(statuses.map((e) => [e.kind, (e as { status?: string }).status])).toEqual([['message.status', 'sent'], ['message.status', 'delivered']]);
    expect(JSON.parse(hooks[1]!.body)).toMatchObject({ client_ref: 'msg_first', status: 'delivered' });
    expect(Object.keys(JSON.parse(hooks[1]!.body))).toEqual(expect.arrayContaining(Object.keys(JSON.parse(carrierFixture('vonage/status-delivered.json'))).filter((k) => k !== 'destination')));
  });

  it('a repeated client_ref is a second message, as at Vonage (it does not deduplicate): each has its series, and the Reports API lists both with their client_ref', async () => {
    const first = (await (await send({ ...SMS, client_ref: 'msg_same' })).json()) as any;
    const again = (await (await send({ ...SMS, client_ref: 'msg_same' })).json()) as any;
    expect(again.message_uuid).not.toBe(first.message_uuid);
    await idle();
    expect(hooksFor(first.message_uuid)).toHaveLength(2);
    expect(hooksFor(again.message_uuid)).toHaveLength(2);
    expect((await sandbox.stats()).sends).toMatchObject({ requests: 2, accepted: 2, replayed: 0 });
    const query = new URLSearchParams({ account_id: DEV_VONAGE_API_KEY, product: 'MESSAGES', direction: 'outbound', date_start: new Date(Date.now() - 60_000).toISOString(), date_end: new Date(Date.now() + 60_000).toISOString() });
    const auth = `Basic ${Buffer.from(`${DEV_VONAGE_API_KEY}:${DEV_VONAGE_API_SECRET}`).toString('base64')}`;
    const records = (await (await fetch(`${sandbox.url}/v2/reports/records?${query}`, { headers: { authorization: auth } })).json()) as any;
    const listed = records.records.filter((r: { client_ref: string }) => r.client_ref === 'msg_same').map((r: { message_id: string }) => r.message_id);
    expect(listed.sort()).toEqual([first.message_uuid, again.message_uuid].sort());
  });

  it('duplicate=3,resign,contradict: exact copies replay the token (same jti), re-signed ones carry a new jti; then undeliverable', async () => {
    const res = await send(SMS, { 'x-sandbox-chaos': 'duplicate=3,resign,contradict' });
    const uuid = ((await res.json()) as any).message_uuid;
    await idle();
    const hooks = hooksFor(uuid);
    expect(hooks).toHaveLength(9);
    for (const status of ['submitted', 'delivered', 'undeliverable']) {
      const copies = hooks.filter((h) => JSON.parse(h.body).status === status);
      expect(copies).toHaveLength(3);
      expect(new Set(copies.map(jti)).size).toBe(2);
      expect(new Set(copies.map((h) => h.body)).size).toBe(1);
    }
    expect(JSON.parse(hooks.find((h) => JSON.parse(h.body).status === 'undeliverable')!.body).error.title).toBe(1320);
  });

  it('POST /sandbox/inbound with carrier vonage: an inbound SMS as the fixture, numbers without the +', async () => {
    const res = await fetch(`${sandbox.url}/sandbox/inbound`, { method: 'POST', body: JSON.stringify({ from: '+447700900001', to: '+447700900000', text: 'hi', carrier: 'vonage' }) });
    expect(res.status).toBe(202);
    const { data } = (await res.json()) as any;
    const [hook] = await waitFor(() => hooksFor(data.id), (rs) => rs.length === 1, { what: 'the inbound webhook' });
    const body = JSON.parse(hook!.body);
    expect(Object.keys(body).sort()).toEqual(Object.keys(JSON.parse(carrierFixture('vonage/inbound-sms.json'))).sort());
    expect(body).toMatchObject({ from: '447700900001', to: '447700900000', text: 'hi', channel: 'sms', message_type: 'text' });
    expect(await verifyVonageWebhook(DEV_VONAGE_SIGNATURE_SECRET, hook!.headers.authorization, Buffer.from(hook!.body), 300)).toHaveProperty('jti');
  });
});
