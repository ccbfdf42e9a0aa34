import { describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { nowSeconds, vonageFixture, vonageHeaders, vonageToken } from '../../support/carrier-signing.js';
import { withTestApp } from '../../support/with-test-app.js';

const SECRET = 'ingest-vonage-signature-secret-0123456789';
/** What an error body must never show: our settings' names, which secret is missing, a stack. */
const INTERNALS = /VONAGE_|secret|not configured|postgres|(?:\\n|\n)\s+at \S/i;

describe('Vonage webhooks over HTTP: the token nonce and message_uuid + status', () => {
  const t = withTestApp({ env: { VONAGE_SIGNATURE_SECRET: SECRET } });
  const rows = () => t.db.count(`SELECT count(*) FROM carrier_events`);
  const jobs = () => t.db.count(`SELECT count(*) FROM outbox_jobs WHERE name = 'process-carrier-event'`);

  async function post(body: string, token: string): Promise<{ status: number; body: any }> {
    const res = await fetch(`${t.app.url}/webhooks/vonage/messages`, { method: 'POST', headers: vonageHeaders(token), body });
    return { status: res.status, body: await res.json() };
  }

  it('the same token replayed is a duplicate: one row, one job, the jti stored as the nonce', async () => {
    const body = vonageFixture('status-delivered.json', { message_uuid: randomUUID() });
    const token = await vonageToken(SECRET, body, { jti: `jti-${randomUUID()}` });
    expect(await post(body, token)).toEqual({ status: 200, body: { status: 'accepted' } });
    const [rowsBefore, jobsBefore] = [await rows(), await jobs()];
    for (let i = 0; i < 3; i++) expect(await post(body, token)).toEqual({ status: 200, body: { status: 'duplicate' } });
    expect([await rows(), await jobs()]).toEqual([rowsBefore, jobsBefore]);
    const { rows: stored } = await t.db.pool.query(`SELECT carrier, carrier_event_id, kind, event_type, signature_nonce FROM carrier_events WHERE carrier_event_id = $1`, [`${JSON.parse(body).message_uuid}:delivered`]);
    expect(stored).toEqual([{ carrier: 'vonage', carrier_event_id: `${JSON.parse(body).message_uuid}:delivered`, kind: 'message.status', event_type: 'delivered', signature_nonce: JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).jti }]);
  });

  it('a new token (new jti, new iat) for the same message_uuid + status is a duplicate', async () => {
    const body = vonageFixture('status-delivered.json', { message_uuid: randomUUID() });
    expect((await post(body, await vonageToken(SECRET, body, { iat: nowSeconds() - 60 }))).body).toEqual({ status: 'accepted' });
    const before = await rows();
    expect((await post(body, await vonageToken(SECRET, body))).body).toEqual({ status: 'duplicate' });
    expect(await rows()).toBe(before);
    // A new status of that message is a new event.
    const rejected = JSON.stringify({ ...JSON.parse(body), status: 'rejected' });
    expect((await post(rejected, await vonageToken(SECRET, rejected))).body).toEqual({ status: 'accepted' });
  });

  it('a jti seen before is a duplicate whatever the body it now signs (the partial unique index refuses it)', async () => {
    const jti = `jti-${randomUUID()}`;
    const first = vonageFixture('inbound-sms.json', { message_uuid: randomUUID() });
    expect((await post(first, await vonageToken(SECRET, first, { jti }))).body).toEqual({ status: 'accepted' });
    const other = vonageFixture('inbound-sms.json', { message_uuid: randomUUID(), text: 'another message, same nonce' });
    const before = await rows();
    expect(await post(other, await vonageToken(SECRET, other, { jti }))).toEqual({ status: 200, body: { status: 'duplicate' } });
    expect(await rows()).toBe(before);
    expect(await t.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1`, [`${JSON.parse(other).message_uuid}:inbound`])).toBe(0);
  });

  it.each([
    ['a body altered under a valid token', async (body: string) => ({ body: body.replace('Hello', 'Hullo'), token: await vonageToken(SECRET, body) })],
    ['iat past the tolerance', async (body: string) => ({ body, token: await vonageToken(SECRET, body, { iat: nowSeconds() - 301 }) })],
    ['iat ahead of the tolerance', async (body: string) => ({ body, token: await vonageToken(SECRET, body, { iat: nowSeconds() + 301 }) })],
    ['another secret', async (body: string) => ({ body, token: await vonageToken('not-the-secret-but-just-as-long-0123', body) })],
  ])('%s: 401, nothing written, nothing internal said', async (_, make) => {
    const { body, token } = await make(vonageFixture('inbound-sms.json', { message_uuid: randomUUID() }));
    const [rowsBefore, jobsBefore] = [await rows(), await jobs()];
    const reply = await post(body, token);
    expect(reply.status).toBe(401);
    expect(reply.body.errors[0].code).toBe('invalid_signature');
    expect(JSON.stringify(reply.body)).not.toMatch(INTERNALS);
    expect([await rows(), await jobs()]).toEqual([rowsBefore, jobsBefore]);
  });

  it.each([
    ['no message_uuid', { message_uuid: undefined }],
    ['no timestamp', { timestamp: undefined }],
    ['a status that is not a word', { status: 42 }],
  ])('a correctly signed body with %s: 400, nothing written', async (_, changes) => {
    const body = vonageFixture('status-delivered.json', { message_uuid: randomUUID(), ...changes });
    const before = await rows();
    const reply = await post(body, await vonageToken(SECRET, body));
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0].code).toBe('invalid_event');
    expect(await rows()).toBe(before);
  });
});

describe('Vonage webhooks with the development secret while VONAGE_API_URL points at Vonage', () => {
  const t = withTestApp({ env: { VONAGE_API_URL: 'https://api.nexmo.com' } });

  it('401 until the real secret is set, without saying which', async () => {
    const { DEV_VONAGE_SIGNATURE_SECRET } = await import('../../../src/telephony/dev-credentials.js');
    const body = vonageFixture('inbound-sms.json', { message_uuid: randomUUID() });
    const res = await fetch(`${t.app.url}/webhooks/vonage/messages`, { method: 'POST', headers: vonageHeaders(await vonageToken(DEV_VONAGE_SIGNATURE_SECRET, body)), body });
    expect(res.status).toBe(401);
    expect(await res.text()).not.toMatch(INTERNALS);
    expect(await t.db.count(`SELECT count(*) FROM carrier_events`)).toBe(0);
  });
});
