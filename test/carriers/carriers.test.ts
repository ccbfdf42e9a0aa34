import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createPrivateKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { TelnyxWebhook } from 'telnyx/lib/webhooks';
import { getExpectedTwilioSignature, validateRequest } from 'twilio/lib/webhooks/webhooks.js';
import { MalformedWebhook, SignatureRejected, type InboundWebhook } from '../../src/carriers/carrier-adapter.js';
import { Ed25519Verifier } from '../../src/carriers/ed25519-verifier.js';
import { TelnyxAdapter } from '../../src/carriers/telnyx/telnyx-adapter.js';
import { telnyxPublicKey, telnyxSignatureProblem } from '../../src/carriers/telnyx/telnyx-signature.js';
import { TwilioAdapter } from '../../src/carriers/twilio/twilio-adapter.js';
import { twilioSignature, twilioSignatureMatches } from '../../src/carriers/twilio/twilio-signature.js';
import { loadConfig } from '../../src/platform/config/app-config.js';
import { DEV_TWILIO_AUTH_TOKEN } from '../../src/telephony/dev-credentials.js';
import { DEFAULT_SANDBOX_TELNYX_SEED, telnyxDevKeyPair } from '../../src/telephony/telnyx-dev-key.js';
import type { NormalizedEvent } from '../../src/carriers/normalized-event.js';
import { NaclReferenceWorker } from '../support/nacl-reference.js';
import { carrierFixture, formBody, nowSeconds, parseForm, telnyxFixture, telnyxSigner, twilioHeaders } from '../support/carrier-signing.js';

const TOLERANCE = 300;
const AUTH_TOKEN = 'test-auth-token';
const BASE = 'https://hooks.example.test';

/** PKCS#8 DER header of an Ed25519 private key; the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

function telnyxAdapter(publicKey: string): TelnyxAdapter {
  return new TelnyxAdapter(loadConfig({ TELNYX_PUBLIC_KEY: publicKey, WEBHOOK_TOLERANCE_SECONDS: String(TOLERANCE) }));
}

function twilioAdapter(): TwilioAdapter {
  return new TwilioAdapter(loadConfig({ TWILIO_AUTH_TOKEN: AUTH_TOKEN, PUBLIC_BASE_URL: BASE }));
}

function telnyxWebhook(body: string, headers: Record<string, string>): InboundWebhook {
  return { rawBody: Buffer.from(body), body: JSON.parse(body), headers, url: '/webhooks/telnyx', peerAddress: '127.0.0.1' };
}

type TwilioChannel = 'messaging' | 'voice' | 'voice.status' | 'voice.dial' | 'voice.recording';
const twilioPath = (channel: TwilioChannel) => `/webhooks/twilio/${channel.replace('.', '/')}`;

function twilioWebhook(channel: TwilioChannel, fields: Record<string, string>, headers: Record<string, string>, path = twilioPath(channel)): InboundWebhook {
  return { rawBody: Buffer.from(formBody(fields)), body: fields, headers, url: path, channel, peerAddress: '127.0.0.1' };
}

describe('Telnyx Ed25519 signatures', () => {
  it('a fresh key pair: our verifier and the telnyx package verifier both accept, and both refuse tampering', async () => {
    const signer = telnyxSigner();
    const body = telnyxFixture('message.received.json');
    const headers = signer.headers(body);
    const key = telnyxPublicKey(signer.publicKey);
    expect(telnyxSignatureProblem(key, { signature: headers['telnyx-signature-ed25519'], timestamp: headers['telnyx-timestamp'], rawBody: Buffer.from(body) }, TOLERANCE)).toBeUndefined();
    await expect(new TelnyxWebhook(signer.publicKey).verify(body, headers)).resolves.toBeUndefined();

    const tampered = body.replace('Hello from Telnyx!', 'Hello from Mallory');
    expect(telnyxSignatureProblem(key, { signature: headers['telnyx-signature-ed25519'], timestamp: headers['telnyx-timestamp'], rawBody: Buffer.from(tampered) }, TOLERANCE)).toBe('signature does not match');
    await expect(new TelnyxWebhook(signer.publicKey).verify(tampered, headers)).rejects.toThrow(/signature/i);

    const otherTime: Record<string, string> = { ...headers, 'telnyx-timestamp': String(Number(headers['telnyx-timestamp']) - 1) };
    expect(telnyxSignatureProblem(key, { signature: otherTime['telnyx-signature-ed25519'], timestamp: otherTime['telnyx-timestamp'], rawBody: Buffer.from(body) }, TOLERANCE)).toBe('signature does not match');
    await expect(new TelnyxWebhook(signer.publicKey).verify(body, otherTime)).rejects.toThrow();
  });

  it('the timestamp window holds in both directions, at the edges', () => {
    const signer = telnyxSigner();
    const key = telnyxPublicKey(signer.publicKey);
    const body = Buffer.from(telnyxFixture('message.sent.json'));
    const now = nowSeconds();
    const at = (offset: number) => {
      const h = signer.headers(body, now + offset);
      return telnyxSignatureProblem(key, { signature: h['telnyx-signature-ed25519'], timestamp: h['telnyx-timestamp'], rawBody: body }, TOLERANCE, now);
    };
    expect(at(-TOLERANCE)).toBeUndefined();
    expect(at(TOLERANCE)).toBeUndefined();
    expect(at(-TOLERANCE - 1)).toMatch(/tolerance/);
    expect(at(TOLERANCE + 1)).toMatch(/tolerance/);
  });

  it('property: node:crypto and tweetnacl agree on random keys, bodies and tampered signatures', async () => {
    // tweetnacl (the reference) runs on its own thread: see NaclReferenceWorker.
    const tweetnacl = new NaclReferenceWorker();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.uint8Array({ minLength: 32, maxLength: 32 }),
          fc.uint8Array({ maxLength: 600 }),
          fc.integer({ min: 0, max: 63 }),
          fc.integer({ min: 1, max: 255 }),
          fc.boolean(),
          async (seed, bodyBytes, flipAt, flipBits, tamper) => {
            const timestamp = String(nowSeconds());
            const body = Buffer.from(bodyBytes);
            const message = Buffer.concat([Buffer.from(`${timestamp}|`), body]);
            // tweetnacl signs (and judges the signature, tampered or not); node's own signer over the same seed must agree byte for byte.
            const reference = await tweetnacl.run(seed, message, tamper ? { at: flipAt, bits: flipBits } : undefined);
            const signature = Buffer.from(reference.signature);
            const nodeKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, Buffer.from(seed)]), format: 'der', type: 'pkcs8' });
            expect(sign(null, message, nodeKey).equals(signature)).toBe(true);
            if (tamper) signature[flipAt] ^= flipBits;
            const ours = telnyxSignatureProblem(telnyxPublicKey(Buffer.from(reference.publicKey).toString('base64')), { signature: signature.toString('base64'), timestamp, rawBody: body }, TOLERANCE) === undefined;
            expect(ours).toBe(reference.verified);
            expect(ours).toBe(!tamper);
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      await tweetnacl.close();
    }
  });

  it('refuses a key that is not 32 raw bytes in base64', () => {
    expect(() => telnyxPublicKey('c2hvcnQ=')).toThrow(/TELNYX_PUBLIC_KEY/);
  });
});

describe('Ed25519 verification on worker threads', () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  /** Pairs with every third one tampered (a flipped byte in the message or the signature). */
  const pairs = (n: number) => Array.from({ length: n }, (_, i) => {
    const message = randomBytes(1 + (i % 900));
    const signature = sign(null, message, privateKey);
    if (i % 3 === 1) message[i % message.length] ^= 1;
    if (i % 3 === 2) signature[i % 64] ^= 0x80;
    return { message, signature, genuine: i % 3 === 0 };
  });

  it.each([0, 1, 2])('%i threads: a burst of 300 concurrent checks gets the inline answer for each, genuine or tampered', async (threads) => {
    const verifier = new Ed25519Verifier(publicKey, threads);
    try {
      const burst = pairs(300);
      // Views into one shared allocation, as the HTTP layer hands bodies over.
      const shared = Buffer.concat(burst.map((p) => p.message));
      let at = 0;
      const views = burst.map((p) => { const view = shared.subarray(at, at + p.message.length); at += p.message.length; return view; });
      const results = await Promise.all(burst.map((p, i) => verifier.verify(views[i], p.signature)));
      expect(results).toEqual(burst.map((p) => p.genuine));
      expect(await verifier.verify(Buffer.from('x'), Buffer.from('not a signature'))).toBe(false);
    } finally {
      await verifier.close();
    }
  });

  it('a worker that dies mid-batch: its checks are answered inline, and later ones still run on a new worker', async () => {
    const verifier = new Ed25519Verifier(publicKey, 1);
    try {
      const [warm] = pairs(1);
      await verifier.verify(warm.message, warm.signature);
      const burst = pairs(60);
      const answers = Promise.all(burst.map((p) => verifier.verify(p.message, p.signature)));
      // Internals on purpose: nothing outside can kill the thread, which is the case to prove.
      const lanes = (verifier as unknown as { lanes: { worker: { terminate(): Promise<number> } }[] }).lanes;
      await new Promise((resolve) => setImmediate(resolve));
      await lanes[0].worker.terminate();
      expect(await answers).toEqual(burst.map((p) => p.genuine));
      const again = pairs(30);
      expect(await Promise.all(again.map((p) => verifier.verify(p.message, p.signature)))).toEqual(again.map((p) => p.genuine));
    } finally {
      await verifier.close();
    }
  });
});

describe('Twilio HMAC-SHA1 signatures', () => {
  it("matches Twilio's documented example", () => {
    const fields = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
    const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
    expect(twilioSignature('12345', url, fields)).toBe('0/KCTR6DLpKmkAf8muzZqo1nDgQ=');
    expect(twilioSignatureMatches('12345', url, fields, '0/KCTR6DLpKmkAf8muzZqo1nDgQ=')).toBe(true);
    expect(twilioSignatureMatches('12345', url, { ...fields, Digits: '1235' }, '0/KCTR6DLpKmkAf8muzZqo1nDgQ=')).toBe(false);
    expect(twilioSignatureMatches('12345', url, fields, '0/KCTR6DLpKmkAf8muzZqo1nDgQ')).toBe(false);
    expect(twilioSignatureMatches('12345', url, fields, undefined)).toBe(false);
  });

  // Names and values as a form can carry them (no prototype keys), some repeated with duplicates.
  const formValue = fc.oneof(fc.string({ unit: 'binary', maxLength: 20 }), fc.array(fc.constantFrom('a', 'b', 'B', '1', ''), { minLength: 1, maxLength: 4 }));
  const form = fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !(k in {})), formValue, { maxKeys: 8 });
  const webhookUrl = fc.tuple(fc.constantFrom('https://hooks.example.test', 'http://127.0.0.1:3000'), fc.webPath(), fc.webQueryParameters())
    .map(([base, path, query]) => `${base}/webhooks/twilio/messaging${path}${query ? `?${query}` : ''}`);

  it('property: our signature is the twilio package\'s, byte for byte, and each side validates the other\'s; a changed field fails both', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), webhookUrl, form, fc.string({ maxLength: 5 }), (token, url, fields, extra) => {
        const ours = twilioSignature(token, url, fields);
        expect(ours).toBe(getExpectedTwilioSignature(token, url, fields));
        expect(validateRequest(token, ours, url, fields)).toBe(true);
        const theirs = getExpectedTwilioSignature(token, url, fields);
        expect(twilioSignatureMatches(token, url, fields, theirs)).toBe(true);
        const changed = { ...fields, ChangedAfterSigning: extra }; // longer than any generated name: always a new field
        expect(twilioSignatureMatches(token, url, changed, theirs)).toBe(false);
        expect(validateRequest(token, theirs, url, changed)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('the adapter accepts a callback signed by the twilio package and refuses it re-signed with another token', async () => {
    const fields = parseForm(carrierFixture('twilio/inbound-sms.form'));
    const url = `${BASE}/webhooks/twilio/messaging`;
    const signed = { 'x-twilio-signature': getExpectedTwilioSignature(AUTH_TOKEN, url, fields) };
    expect((await twilioAdapter().accept(twilioWebhook('messaging', fields, signed))).event.kind).toBe('message.received');
    const forged = { 'x-twilio-signature': getExpectedTwilioSignature(DEV_TWILIO_AUTH_TOKEN, url, fields) };
    await expect(twilioAdapter().accept(twilioWebhook('messaging', fields, forged))).rejects.toThrow(SignatureRejected);
  });

  it('signs PUBLIC_BASE_URL + path + query string', async () => {
    const fields = parseForm(carrierFixture('twilio/status-delivered.form'));
    const good = twilioHeaders(AUTH_TOKEN, `${BASE}/webhooks/twilio/messaging?tenant=7`, fields);
    expect((await twilioAdapter().accept(twilioWebhook('messaging', fields, good, '/webhooks/twilio/messaging?tenant=7'))).event.kind).toBe('message.status');
    const withoutQuery = twilioHeaders(AUTH_TOKEN, `${BASE}/webhooks/twilio/messaging`, fields);
    await expect(twilioAdapter().accept(twilioWebhook('messaging', fields, withoutQuery, '/webhooks/twilio/messaging?tenant=7'))).rejects.toThrow(SignatureRejected);
  });
});

describe('Telnyx adapter normalization', () => {
  const signer = telnyxSigner();
  const adapter = telnyxAdapter(signer.publicKey);
  const normalize = async (body: string): Promise<NormalizedEvent> => (await adapter.accept(telnyxWebhook(body, signer.headers(body)))).event;

  it('message.received', async () => {
    expect(await normalize(telnyxFixture('message.received.json'))).toEqual({
      carrier: 'telnyx', carrierEventId: 'b301ed3f-1490-491f-995f-6e64e69674d4', occurredAt: '2026-11-29T20:16:07.588Z',
      kind: 'message.received', carrierMessageId: '84cca175-9755-4859-b67f-4730d7f58aa3', from: '+13125550001', to: '+17735550002', text: 'Hello from Telnyx!',
    });
  });

  it('message receipts read the recipient status and the first error', async () => {
    expect(await normalize(telnyxFixture('message.sent.json'))).toMatchObject({ kind: 'message.status', carrierMessageId: 'ac012cbf-2d9e-4c0e-a9fb-8f9e7b8c4a11', status: 'sent', carrierStatus: 'sent' });
    expect(await normalize(telnyxFixture('message.finalized.delivered.json'))).toMatchObject({ kind: 'message.status', status: 'delivered' });
    expect(await normalize(telnyxFixture('message.finalized.failed.json'))).toMatchObject({
      kind: 'message.status', status: 'failed', carrierStatus: 'delivery_failed', errorCode: '40008', errorDetail: 'The recipient carrier did not accept the message.',
    });
    expect(await normalize(telnyxFixture('message.finalized.failed.json'))).not.toHaveProperty('reason');
    // 40300 "Blocked due to STOP message" (https://developers.telnyx.com/api/errors/40300): the handset opted out at Telnyx
    expect(await normalize(telnyxFixture('message.finalized.opted-out.json'))).toMatchObject({ kind: 'message.status', status: 'failed', errorCode: '40300', reason: 'recipient_opted_out' });
  });

  it.each([
    ['queued', 'queued'], ['sending', 'sending'], ['sent', 'sent'], ['delivered', 'delivered'],
    ['sending_failed', 'failed'], ['delivery_failed', 'failed'], ['delivery_unconfirmed', 'unknown'], ['something_new', 'unknown'],
  ])('Telnyx message status %s → %s (unknown is stored, not guessed)', async (word, status) => {
    const body = JSON.parse(telnyxFixture('message.finalized.delivered.json'));
    body.data.payload.to[0].status = word;
    expect(await normalize(JSON.stringify(body))).toMatchObject({ kind: 'message.status', status, carrierStatus: word });
  });

  it('calls: initiated and answered do not end anything, hangup does; direction is read', async () => {
    expect(await normalize(telnyxFixture('call.initiated.json'))).toMatchObject({ kind: 'call.initiated', progress: 'initiated', direction: 'inbound', carrierCallId: 'v3:MdI91X4lWFEs7IgbBEOT9M4AigoY08M0WWZFISt1Yw2axZ_IiE4pqg' });
    expect(await normalize(telnyxFixture('call.answered.json'))).toMatchObject({ kind: 'call.answered', progress: 'answered', direction: 'outbound' });
    expect(await normalize(telnyxFixture('call.hangup.json'))).toMatchObject({ kind: 'call.hangup', progress: 'ended', hangupCause: 'normal_clearing', direction: 'unknown', occurredAt: '2026-11-29T22:26:40.000Z' });
  });

  it('an unknown event type is kept as ignored', async () => {
    const body = JSON.parse(telnyxFixture('message.sent.json'));
    body.data.event_type = 'fax.received';
    expect(await normalize(JSON.stringify(body))).toMatchObject({ kind: 'ignored', carrierEventType: 'fax.received' });
  });

  it('number_order.complete: our order id (customer_reference) and what became of each number', async () => {
    const body = JSON.parse(telnyxFixture('message.sent.json'));
    body.data.event_type = 'number_order.complete';
    body.data.payload = {
      record_type: 'number_order', id: 'f1486bae-f067-460c-ad43-73a92848f902', status: 'success', customer_reference: 'ord_01jd5x2m3n4p5q6r7s8t9v0w1x',
      phone_numbers: [{ id: 'dc8e4d67-33a0-4b80-9d33-7d5d8f2ee1a7', phone_number: '+13125550143', status: 'success' }],
    };
    expect(await normalize(JSON.stringify(body))).toMatchObject({
      kind: 'number.order.completed',
      orderId: 'ord_01jd5x2m3n4p5q6r7s8t9v0w1x',
      placement: { outcome: 'settled', carrierOrderId: 'f1486bae-f067-460c-ad43-73a92848f902', numbers: [{ phoneNumber: '+13125550143', bought: true }] },
    });
    body.data.payload.phone_numbers = 'none';
    await expect(normalize(JSON.stringify(body))).rejects.toThrow(/phone_numbers must be an array/);
  });

  it.each([
    ['no data', (b: any) => delete b.data],
    ['no data.id', (b: any) => delete b.data.id],
    ['record_type not event', (b: any) => (b.data.record_type = 'message')],
    ['occurred_at not a time', (b: any) => (b.data.occurred_at = 'yesterday')],
    ['payload without to[]', (b: any) => delete b.data.payload.to],
    ['payload without id', (b: any) => delete b.data.payload.id],
  ])('a signed body with %s is malformed', async (_, mutate) => {
    const body = JSON.parse(telnyxFixture('message.sent.json'));
    mutate(body);
    await expect(normalize(JSON.stringify(body))).rejects.toThrow(MalformedWebhook);
  });

  it('refuses everything when no public key is configured', async () => {
    const body = telnyxFixture('message.sent.json');
    const unconfigured = new TelnyxAdapter(loadConfig({}));
    await expect(unconfigured.accept(telnyxWebhook(body, signer.headers(body)))).rejects.toThrow(SignatureRejected);
  });
});

describe('Twilio adapter normalization', () => {
  const adapter = twilioAdapter();
  const accept = (channel: TwilioChannel, fields: Record<string, string>, token?: string, query = '') =>
    adapter.accept(twilioWebhook(channel, fields, twilioHeaders(AUTH_TOKEN, `${BASE}${twilioPath(channel)}${query}`, fields, token), `${twilioPath(channel)}${query}`));

  it('inbound SMS', async () => {
    const { event, carrierEventType } = await accept('messaging', parseForm(carrierFixture('twilio/inbound-sms.form')));
    expect(carrierEventType).toBe('messaging.received');
    expect(event).toMatchObject({
      carrier: 'twilio', kind: 'message.received', carrierEventId: 'SM0f8b6d3c2e1a4b5c6d7e8f9a0b1c2d3e:received',
      carrierMessageId: 'SM0f8b6d3c2e1a4b5c6d7e8f9a0b1c2d3e', from: '+13125550001', to: '+14155550100', text: 'Hello from Twilio',
    });
  });

  it('status callbacks: dedupe on the signed Sid:Status, never the unsigned I-Twilio-Idempotency-Token; the signature is the nonce', async () => {
    expect((await accept('messaging', parseForm(carrierFixture('twilio/status-delivered.form')))).event).toMatchObject({
      kind: 'message.status', status: 'delivered', carrierEventId: 'SM1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d:delivered',
    });
    const undelivered = parseForm(carrierFixture('twilio/status-undelivered.form'));
    const accepted = await accept('messaging', undelivered, 'tok-1');
    expect(accepted.event).toMatchObject({
      kind: 'message.status', status: 'failed', carrierStatus: 'undelivered', errorCode: '30003', carrierEventId: 'SM9f8e7d6c5b4a39281706f5e4d3c2b1a0:undelivered',
    });
    expect(accepted.signatureNonce).toBe(getExpectedTwilioSignature(AUTH_TOKEN, `${BASE}/webhooks/twilio/messaging`, undelivered));
    const replayed = await accept('messaging', undelivered, 'tok-2');
    expect([replayed.event.carrierEventId, replayed.signatureNonce]).toEqual([accepted.event.carrierEventId, accepted.signatureNonce]);
  });

  it('a failed status callback with ErrorCode 21610 (unsubscribed recipient) says the recipient opted out; another code does not', async () => {
    expect((await accept('messaging', { MessageSid: 'SM2', MessageStatus: 'failed', ErrorCode: '21610' })).event).toMatchObject({ status: 'failed', errorCode: '21610', reason: 'recipient_opted_out' });
    expect((await accept('messaging', parseForm(carrierFixture('twilio/status-undelivered.form')))).event).not.toHaveProperty('reason');
  });

  it.each([
    ['accepted', 'queued'], ['queued', 'queued'], ['sending', 'sending'], ['sent', 'sent'], ['delivered', 'delivered'],
    ['read', 'delivered'], ['undelivered', 'failed'], ['failed', 'failed'], ['partially_delivered', 'unknown'],
  ])('Twilio MessageStatus %s → %s', async (word, status) => {
    expect((await accept('messaging', { MessageSid: 'SM1', MessageStatus: word })).event).toMatchObject({ kind: 'message.status', status, carrierStatus: word });
  });

  it.each([
    ['queued', 'call.status', 'initiated'],
    // only the incoming-call request starts a call; a status callback saying `initiated` is progress
    ['initiated', 'call.status', 'initiated'],
    ['ringing', 'call.status', 'ringing'],
    ['in-progress', 'call.answered', 'answered'],
    ['completed', 'call.hangup', 'ended'],
    ['busy', 'call.hangup', 'ended'],
    ['no-answer', 'call.hangup', 'ended'],
    ['failed', 'call.hangup', 'ended'],
    ['canceled', 'call.hangup', 'ended'],
    ['transferring', 'call.status', 'unknown'],
  ])('Twilio CallStatus %s → %s / %s', async (word, kind, progress) => {
    const { event } = await accept('voice.status', { CallSid: 'CA1', CallStatus: word, Direction: 'outbound-api', CallDuration: '61' });
    expect(event).toMatchObject({ kind, progress, carrierStatus: word, direction: 'outbound' });
  });

  it('ringing, initiated and queued never end a call (no hangup kind, no ended progress)', async () => {
    for (const word of ['ringing', 'initiated', 'queued']) {
      for (const direction of ['inbound', 'outbound-dial']) {
        const { event } = await accept('voice.status', { CallSid: 'CA2', CallStatus: word, Direction: direction });
        expect(event.kind).not.toBe('call.hangup');
        expect(event).not.toMatchObject({ progress: 'ended' });
        expect(event).not.toHaveProperty('hangupCause');
      }
    }
  });

  it('reads duration and the ending word', async () => {
    expect((await accept('voice.status', { CallSid: 'CA3', CallStatus: 'completed', Direction: 'inbound', CallDuration: '61' })).event).toMatchObject({ durationSeconds: 61, direction: 'inbound' });
    expect((await accept('voice.status', { CallSid: 'CA3', CallStatus: 'busy', Direction: 'inbound' })).event).toMatchObject({ hangupCause: 'busy' });
  });

  it('the incoming call request is the call\'s start, keyed <CallSid>:incoming:<CallStatus> (a status callback saying ringing is another event)', async () => {
    const { event, carrierEventType } = await accept('voice', { CallSid: 'CA4', CallStatus: 'ringing', Direction: 'inbound', From: '+13125550001', To: '+14155550100' });
    expect(carrierEventType).toBe('voice.incoming.ringing');
    expect(event).toMatchObject({ kind: 'call.initiated', carrierEventId: 'CA4:incoming:ringing', callSessionId: 'CA4', carrierCallId: 'CA4', direction: 'inbound', to: '+14155550100' });
    const status = await accept('voice.status', { CallSid: 'CA4', CallStatus: 'ringing', Direction: 'inbound' });
    expect(status.event.carrierEventId).toBe('CA4:ringing');
  });

  it('a dial\'s result: our call and target from the signed query, keyed by CallSid + target + DialCallSid; answered only when it talked', async () => {
    const query = '?call=call_x&target=1';
    const noAnswer = await accept('voice.dial', { CallSid: 'CA5', DialCallStatus: 'no-answer', DialCallSid: 'CA6' }, undefined, query);
    expect(noAnswer.event).toMatchObject({ kind: 'call.hangup', carrierEventId: 'CA5:dial:1:CA6', callSessionId: 'CA5', carrierCallId: 'CA6', ourLeg: { callId: 'call_x', target: 1, attempt: 1 }, endReason: 'no_answer', answered: false, hangupCause: 'no-answer' });
    expect((await accept('voice.dial', { CallSid: 'CA5', DialCallStatus: 'busy', DialCallSid: 'CA7' }, undefined, query)).event).toMatchObject({ endReason: 'declined' });
    const talked = await accept('voice.dial', { CallSid: 'CA5', DialCallStatus: 'completed', DialCallSid: 'CA8', DialCallDuration: '42' }, undefined, query);
    expect(talked.event).toMatchObject({ answered: true, durationSeconds: 42, endReason: 'completed' });
    await expect(accept('voice.dial', { CallSid: 'CA5', DialCallStatus: 'busy' }, undefined, '?call=call_x&target=-1')).rejects.toThrow(MalformedWebhook);
    await expect(accept('voice.dial', { CallSid: 'CA5', DialCallStatus: 'busy' }, undefined, '?target=0')).rejects.toThrow(MalformedWebhook);
  });

  it('the voicemail recording, keyed by its RecordingSid', async () => {
    const { event } = await accept('voice.recording', { CallSid: 'CA9', RecordingSid: 'RE1', RecordingUrl: 'https://api.twilio.com/rec/RE1' }, undefined, '?call=call_x');
    expect(event).toMatchObject({ kind: 'call.recording.saved', carrierEventId: 'CA9:recording:RE1', callSessionId: 'CA9', recordingUrl: 'https://api.twilio.com/rec/RE1' });
  });

  it('a signed callback without its Sid or status is malformed; an unsigned one is refused first', async () => {
    await expect(accept('messaging', { From: '+1' })).rejects.toThrow(MalformedWebhook);
    await expect(accept('voice', { CallSid: 'CA1' })).rejects.toThrow(MalformedWebhook);
    await expect(adapter.accept(twilioWebhook('voice', { CallSid: 'CA1' }, {}))).rejects.toThrow(SignatureRejected);
  });
});

describe('a carrier credential at its development default is trusted only while that carrier\'s API is loopback', () => {
  const REAL_TWILIO = 'https://api.twilio.com';
  const REAL_TELNYX = 'https://api.telnyx.com/v2';
  const fields = parseForm(carrierFixture('twilio/status-delivered.form'));
  const signedWith = (token: string) => twilioWebhook('messaging', fields, twilioHeaders(token, `${BASE}/webhooks/twilio/messaging`, fields));
  const twilioWith = (env: Record<string, string>) => new TwilioAdapter(loadConfig({ PUBLIC_BASE_URL: BASE, ...env }));

  it('Twilio: the development token verifies while TWILIO_API_URL is the sandbox, not once it points at Twilio', async () => {
    await expect(twilioWith({}).accept(signedWith(DEV_TWILIO_AUTH_TOKEN))).resolves.toMatchObject({ event: { kind: 'message.status' } });
    await expect(twilioWith({ TWILIO_API_URL: 'http://localhost:9/twilio' }).accept(signedWith(DEV_TWILIO_AUTH_TOKEN))).resolves.toBeDefined();
    const unset: Record<string, string> = { TWILIO_API_URL: REAL_TWILIO };
    for (const env of [unset, { ...unset, TWILIO_AUTH_TOKEN: DEV_TWILIO_AUTH_TOKEN }]) {
      const refused = await twilioWith(env).accept(signedWith(DEV_TWILIO_AUTH_TOKEN)).then(() => undefined, (err: unknown) => err);
      expect(refused).toBeInstanceOf(SignatureRejected);
      // The caller is told its signature is refused; which setting is missing is for our log.
      expect((refused as SignatureRejected).message).toBe('X-Twilio-Signature missing or wrong');
      expect((refused as SignatureRejected).internalReason).toMatch(/TWILIO_AUTH_TOKEN/);
    }
  });

  it('Twilio: a token set explicitly is trusted wherever the API points; sends keep using TWILIO_AUTH_TOKEN as set', async () => {
    await expect(twilioWith({ TWILIO_API_URL: REAL_TWILIO, TWILIO_AUTH_TOKEN: AUTH_TOKEN }).accept(signedWith(AUTH_TOKEN))).resolves.toMatchObject({ event: { kind: 'message.status' } });
    await expect(twilioWith({ TWILIO_API_URL: REAL_TWILIO, TWILIO_AUTH_TOKEN: AUTH_TOKEN }).accept(signedWith(DEV_TWILIO_AUTH_TOKEN))).rejects.toThrow(SignatureRejected);
    const atTwilio = loadConfig({ TWILIO_API_URL: REAL_TWILIO });
    expect(atTwilio.twilioWebhookAuthToken).toBeUndefined();
    expect(atTwilio.TWILIO_AUTH_TOKEN).toBe(DEV_TWILIO_AUTH_TOKEN);
    expect(loadConfig({ TWILIO_API_URL: REAL_TWILIO, TWILIO_AUTH_TOKEN: AUTH_TOKEN }).twilioWebhookAuthToken).toBe(AUTH_TOKEN);
  });

  it('Telnyx: the published development key is no key once TELNYX_API_URL points at Telnyx, even set explicitly; the refusal reads as a mismatch', async () => {
    const published = telnyxDevKeyPair(DEFAULT_SANDBOX_TELNYX_SEED);
    expect(loadConfig({ TELNYX_PUBLIC_KEY: published.publicKey }).telnyxPublicKey).toBe(published.publicKey);
    expect(loadConfig({ TELNYX_PUBLIC_KEY: published.publicKey, TELNYX_API_URL: REAL_TELNYX }).telnyxPublicKey).toBeUndefined();
    const body = telnyxFixture('message.sent.json');
    const timestamp = String(nowSeconds());
    const headers = { 'telnyx-timestamp': timestamp, 'telnyx-signature-ed25519': sign(null, Buffer.from(`${timestamp}|${body}`), published.privateKey).toString('base64') };
    await expect(new TelnyxAdapter(loadConfig({})).accept(telnyxWebhook(body, headers))).resolves.toMatchObject({ event: { kind: 'message.status' } });
    for (const env of [{ TELNYX_API_URL: REAL_TELNYX }, { TELNYX_API_URL: REAL_TELNYX, TELNYX_PUBLIC_KEY: published.publicKey }]) {
      const refused = await new TelnyxAdapter(loadConfig(env)).accept(telnyxWebhook(body, headers)).then(() => undefined, (err: unknown) => err);
      expect(refused).toBeInstanceOf(SignatureRejected);
      expect((refused as SignatureRejected).message).toBe('signature does not match');
      expect((refused as SignatureRejected).internalReason).toMatch(/TELNYX_PUBLIC_KEY/);
    }
  });
});
