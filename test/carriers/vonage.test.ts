import { describe, expect, it } from '@jest/globals';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { MalformedWebhook, SignatureRejected, type InboundWebhook } from '../../src/carriers/carrier-adapter.js';
import { VonageAdapter } from '../../src/carriers/vonage/vonage-adapter.js';
import { signVonageWebhook, vonagePayloadHash, verifyVonageWebhook } from '../../src/carriers/vonage/vonage-signature.js';
import { loadConfig } from '../../src/platform/config/app-config.js';
import { DEV_VONAGE_SIGNATURE_SECRET } from '../../src/telephony/dev-credentials.js';
import { nowSeconds, vonageFixture, vonageHeaders, vonageToken, vonageUnsignedToken } from '../support/carrier-signing.js';

const SECRET = 'test-vonage-signature-secret-with-32-bytes';
const TOLERANCE = 300;

function webhook(body: string, headers: Record<string, string>): InboundWebhook {
  return { rawBody: Buffer.from(body), body: JSON.parse(body), headers, url: '/webhooks/vonage/messages', peerAddress: '127.0.0.1' };
}

const adapter = (env: Record<string, string> = { VONAGE_SIGNATURE_SECRET: SECRET }) => new VonageAdapter(loadConfig({ WEBHOOK_TOLERANCE_SECONDS: String(TOLERANCE), ...env }));
const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (err: unknown) => err);

describe('Vonage signed webhooks (HS256 JWT bound to the body)', () => {
  const body = vonageFixture('status-delivered.json');

  it('accepts a token signed by jose: the jti is the nonce, message_uuid:status the key', async () => {
    const accepted = await adapter().accept(webhook(body, vonageHeaders(await vonageToken(SECRET, body, { jti: 'jti-1' }))));
    expect(accepted).toMatchObject({
      signatureNonce: 'jti-1', carrierEventType: 'delivered',
      event: { carrier: 'vonage', kind: 'message.status', status: 'delivered', carrierEventId: 'bbbbbbbb-cccc-4ddd-8eee-0123456789ab:delivered' },
    });
    expect(JSON.parse(accepted.payloadJson)).toEqual(JSON.parse(body));
  });

  it('our sandbox signer makes tokens jose verifies with the same claims', async () => {
    const token = await signVonageWebhook(SECRET, body, { jti: 'sandbox-jti', iat: 1_800_000_000 });
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'HS256' });
    const { payload } = await jwtVerify(token, new TextEncoder().encode(SECRET), { algorithms: ['HS256'], currentDate: new Date(1_800_000_000_000) });
    expect(payload).toMatchObject({ jti: 'sandbox-jti', iat: 1_800_000_000, payload_hash: vonagePayloadHash(body) });
    expect(decodeJwt(token).payload_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a body altered under a valid token (payload_hash mismatch) is refused', async () => {
    const token = await vonageToken(SECRET, body);
    const altered = body.replace('"delivered"', '"rejected"');
    const err = await refusal(adapter().accept(webhook(altered, vonageHeaders(token))));
    expect(err).toBeInstanceOf(SignatureRejected);
    expect((err as Error).message).toMatch(/payload_hash/);
    // Even one byte of whitespace is another body.
    await expect(adapter().accept(webhook(`${body} `, vonageHeaders(token)))).rejects.toThrow(SignatureRejected);
  });

  it('iat: the window holds in both directions, at the edges', async () => {
    const now = nowSeconds();
    const at = async (offset: number) => verifyVonageWebhook(SECRET, `Bearer ${await vonageToken(SECRET, body, { iat: now + offset })}`, Buffer.from(body), TOLERANCE, now);
    expect(await at(-TOLERANCE)).toHaveProperty('jti');
    expect(await at(TOLERANCE)).toHaveProperty('jti');
    expect(await at(-TOLERANCE - 1)).toEqual({ problem: expect.stringMatching(/iat/) });
    expect(await at(TOLERANCE + 1)).toEqual({ problem: expect.stringMatching(/iat/) });
    await expect(adapter().accept(webhook(body, vonageHeaders(await vonageToken(SECRET, body, { iat: nowSeconds() - 3600 }))))).rejects.toThrow(SignatureRejected);
    await expect(adapter().accept(webhook(body, vonageHeaders(await vonageToken(SECRET, body, { iat: nowSeconds() + 3600 }))))).rejects.toThrow(SignatureRejected);
  });

  it.each([
    ['alg none', async () => vonageUnsignedToken(body)],
    ['another secret', async () => vonageToken('another-secret-of-some-32-bytes-length', body)],
    ['HS512 with the right secret (only HS256 is Vonage\'s)', async () => vonageToken(SECRET, body, { alg: 'HS512' })],
    ['a signature cut off', async () => (await vonageToken(SECRET, body)).slice(0, -4)],
  ])('%s: refused', async (_, token) => {
    await expect(adapter().accept(webhook(body, vonageHeaders(await token())))).rejects.toThrow(SignatureRejected);
  });

  it('no Authorization, or not a Bearer JWT: refused before anything is parsed', async () => {
    await expect(adapter().accept(webhook(body, {}))).rejects.toThrow(SignatureRejected);
    await expect(adapter().accept(webhook(body, { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }))).rejects.toThrow(SignatureRejected);
  });

  it('a correctly signed body of the wrong shape is malformed (400), not a bad signature', async () => {
    const wrong = JSON.stringify({ hello: 'world' });
    await expect(adapter().accept(webhook(wrong, vonageHeaders(await vonageToken(SECRET, wrong))))).rejects.toThrow(MalformedWebhook);
  });
});

describe('the development signature secret is trusted only while VONAGE_API_URL is loopback', () => {
  const body = vonageFixture('inbound-sms.json');
  const signed = async (secret: string) => webhook(body, vonageHeaders(await vonageToken(secret, body)));

  it('verifies with the sandbox secret by default, and while the API is any loopback URL', async () => {
    await expect(adapter({}).accept(await signed(DEV_VONAGE_SIGNATURE_SECRET))).resolves.toMatchObject({ event: { kind: 'message.received', to: '+447700900000' } });
    await expect(adapter({ VONAGE_API_URL: 'http://localhost:9' }).accept(await signed(DEV_VONAGE_SIGNATURE_SECRET))).resolves.toBeDefined();
  });

  it('pointed at Vonage, the development secret (default or set) verifies nothing; the caller is not told why', async () => {
    const atVonage: Record<string, string>[] = [{ VONAGE_API_URL: 'https://api.nexmo.com' }, { VONAGE_API_URL: 'https://api.nexmo.com', VONAGE_SIGNATURE_SECRET: DEV_VONAGE_SIGNATURE_SECRET }];
    for (const env of atVonage) {
      const err = await refusal(adapter(env).accept(await signed(DEV_VONAGE_SIGNATURE_SECRET)));
      expect(err).toBeInstanceOf(SignatureRejected);
      expect((err as SignatureRejected).message).not.toMatch(/VONAGE|secret/i);
      expect((err as SignatureRejected).internalReason).toMatch(/VONAGE_SIGNATURE_SECRET/);
    }
    expect(loadConfig({ VONAGE_API_URL: 'https://api.nexmo.com' }).vonageSignatureSecret).toBeUndefined();
  });

  it('a real secret set explicitly is trusted wherever the API points', async () => {
    const env = { VONAGE_API_URL: 'https://api.nexmo.com', VONAGE_SIGNATURE_SECRET: SECRET };
    await expect(adapter(env).accept(await signed(SECRET))).resolves.toMatchObject({ event: { kind: 'message.received' } });
    await expect(adapter(env).accept(await signed(DEV_VONAGE_SIGNATURE_SECRET))).rejects.toThrow(SignatureRejected);
  });
});
