import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { randomUUID, sign } from 'node:crypto';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks.js';
import { DEV_TWILIO_AUTH_TOKEN } from '../../../src/telephony/dev-credentials.js';
import { telnyxDevKeyPair } from '../../../src/telephony/telnyx-dev-key.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { carrierFixture, formBody, nowSeconds, parseForm, telnyxEvent, telnyxFixture, telnyxSigner, twilioHeaders, type TwilioFields } from '../../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

const AUTH_TOKEN = 'ingest-test-token';
/** What an error body must never show: database text, our settings' names, a stack. */
const INTERNALS = /postgres|jsonb|unsupported unicode escape|invalid byte sequence|not configured|TWILIO_AUTH_TOKEN|TWILIO_API_URL|TELNYX_PUBLIC_KEY|TELNYX_API_URL|(?:\\n|\n)\s+at \S/i;
const PUBLIC_BASE = 'https://hooks.example.test';
const signer = telnyxSigner();

interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

async function post(app: TestApp, path: string, headers: Record<string, string>, body: string | Buffer): Promise<Reply> {
  const res = await fetch(app.url + path, { method: 'POST', headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the assertion message
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

function postTelnyx(app: TestApp, body: string, headers = signer.headers(body)): Promise<Reply> {
  return post(app, '/webhooks/telnyx', headers, body);
}

function postTwilio(app: TestApp, channel: 'messaging' | 'voice' | 'voice/status', fields: TwilioFields, token?: string): Promise<Reply> {
  const path = `/webhooks/twilio/${channel}`;
  return post(app, path, twilioHeaders(AUTH_TOKEN, PUBLIC_BASE + path, fields, token), formBody(fields));
}

describe('carrier webhook ingest over HTTP', () => {
  let db: TestDatabase;
  let app: TestApp;
  const rows = () => db.count(`SELECT count(*) FROM carrier_events`);
  const jobs = () => db.count(`SELECT count(*) FROM outbox_jobs WHERE name = 'process-carrier-event'`);

  beforeAll(async () => {
    db = await createTestDatabase();
    // No relay or worker: these tests look at what ingest itself writes.
    app = await startTestApp({
      databaseUrl: db.url,
      env: { TELNYX_PUBLIC_KEY: signer.publicKey, TWILIO_AUTH_TOKEN: AUTH_TOKEN, PUBLIC_BASE_URL: PUBLIC_BASE },
    });
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it('accepts a Telnyx event once; the retry with a higher meta.attempt (new body, new signature) is a duplicate', async () => {
    const id = randomUUID();
    const first = await postTelnyx(app, telnyxFixture('message.received.json', { id, attempt: 1 }));
    expect(first).toMatchObject({ status: 200, body: { status: 'accepted' } });
    const retry = await postTelnyx(app, telnyxFixture('message.received.json', { id, attempt: 2 }));
    expect(retry).toMatchObject({ status: 200, body: { status: 'duplicate' } });
    const { rows: stored } = await db.pool.query(`SELECT id, carrier, kind, event_type, payload, normalized FROM carrier_events WHERE carrier_event_id = $1`, [id]);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ carrier: 'telnyx', kind: 'message.received', event_type: 'message.received' });
    expect(stored[0].payload.meta.attempt).toBe(1);
    expect(stored[0].normalized).toMatchObject({ kind: 'message.received', carrierEventId: id, text: 'Hello from Telnyx!' });
    const { rows: job } = await db.pool.query(`SELECT job_id, data FROM outbox_jobs WHERE name = 'process-carrier-event' AND data->>'carrierEventId' = $1`, [stored[0].id]);
    expect(job).toEqual([{ job_id: stored[0].id, data: { carrierEventId: stored[0].id } }]);
  });

  it.each([5, 50])('%i concurrent deliveries of one event: one row, one job, exactly one accepted', async (n) => {
    const id = randomUUID();
    const [rowsBefore, jobsBefore] = [await rows(), await jobs()];
    const replies = await Promise.all(
      Array.from({ length: n }, (_, i) => postTelnyx(app, telnyxFixture('message.finalized.delivered.json', { id, attempt: i + 1 }))),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(n).fill(200));
    const statuses = replies.map((r) => r.body.status);
    expect(statuses.filter((s) => s === 'accepted')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(n - 1);
    expect(await db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1`, [id])).toBe(1);
    expect(await rows()).toBe(rowsBefore + 1);
    expect(await jobs()).toBe(jobsBefore + 1);
  });

  it('Twilio messaging and voice status callbacks: Sid:Status is the key, so each new status is a new event and a repeat is a duplicate', async () => {
    const inbound = parseForm(carrierFixture('twilio/inbound-sms.form'));
    inbound.MessageSid = inbound.SmsSid = inbound.SmsMessageSid = `SM${randomUUID().replace(/-/g, '')}`;
    expect((await postTwilio(app, 'messaging', inbound)).body).toEqual({ status: 'accepted' });
    expect((await postTwilio(app, 'messaging', inbound)).body).toEqual({ status: 'duplicate' });

    const callSid = `CA${randomUUID().replace(/-/g, '')}`;
    const call = (CallStatus: string) => ({ CallSid: callSid, CallStatus, Direction: 'inbound', From: '+13125550001', To: '+14155550100' });
    // Voice status callbacks are answered with TwiML in the request (test/modules/calls/twilio-voice.test.ts): always <Response/>.
    for (const status of ['ringing', 'in-progress', 'completed', 'completed']) {
      const reply = await postTwilio(app, 'voice/status', call(status));
      expect(reply).toMatchObject({ status: 200, body: '<?xml version="1.0" encoding="UTF-8"?><Response/>' });
    }
    const { rows: stored } = await db.pool.query(`SELECT carrier_event_id, kind FROM carrier_events WHERE carrier = 'twilio' AND carrier_event_id LIKE $1 ORDER BY created_at`, [`${callSid}:%`]);
    expect(stored).toEqual([
      { carrier_event_id: `${callSid}:ringing`, kind: 'call.status' },
      { carrier_event_id: `${callSid}:in-progress`, kind: 'call.answered' },
      { carrier_event_id: `${callSid}:completed`, kind: 'call.hangup' },
    ]);
  });

  it('a signed Twilio callback replayed with a fresh I-Twilio-Idempotency-Token (not signed) is a duplicate: one carrier event, its signature as the nonce', async () => {
    const fields = { ...parseForm(carrierFixture('twilio/status-delivered.form')), MessageSid: `SM${randomUUID().replace(/-/g, '')}` };
    const [rowsBefore, jobsBefore] = [await rows(), await jobs()];
    expect((await postTwilio(app, 'messaging', fields, `tok-${randomUUID()}`)).body).toEqual({ status: 'accepted' });
    expect((await postTwilio(app, 'messaging', fields, `tok-${randomUUID()}`)).body).toEqual({ status: 'duplicate' });
    expect((await postTwilio(app, 'messaging', fields)).body).toEqual({ status: 'duplicate' });
    const { rows: stored } = await db.pool.query(`SELECT carrier_event_id, signature_nonce FROM carrier_events WHERE carrier = 'twilio' AND carrier_event_id LIKE $1`, [`${fields.MessageSid}:%`]);
    expect(stored).toEqual([{ carrier_event_id: `${fields.MessageSid}:delivered`, signature_nonce: getExpectedTwilioSignature(AUTH_TOKEN, `${PUBLIC_BASE}/webhooks/twilio/messaging`, fields) }]);
    expect([await rows(), await jobs()]).toEqual([rowsBefore + 1, jobsBefore + 1]);
  });

  it('a captured Twilio callback re-split into other fields under the same signature (name+value concatenation is ambiguous) is a duplicate, not a new status', async () => {
    const sid = `SM${randomUUID().replace(/-/g, '')}`;
    const genuine = { AccountSid: 'AC00000000000000000000000000000000', MessageSid: sid, MessageStatus: 'sent', To: '+13125550001' };
    // Sorted names concatenated with their values give the same bytes: ...MessageStatus + "sentT" + "o" + "+1312...".
    const resplit = { AccountSid: genuine.AccountSid, MessageSid: sid, MessageStatus: 'sentT', o: '+13125550001' };
    const path = '/webhooks/twilio/messaging';
    const headers = twilioHeaders(AUTH_TOKEN, PUBLIC_BASE + path, genuine);
    expect(headers['x-twilio-signature']).toBe(getExpectedTwilioSignature(AUTH_TOKEN, PUBLIC_BASE + path, resplit));
    expect((await post(app, path, headers, formBody(genuine))).body).toEqual({ status: 'accepted' });
    expect((await post(app, path, headers, formBody(resplit))).body).toEqual({ status: 'duplicate' });
    expect(await db.count(`SELECT count(*) FROM carrier_events WHERE carrier = 'twilio' AND carrier_event_id LIKE $1`, [`${sid}:%`])).toBe(1);
  });

  it('20 concurrent copies of one signed Twilio callback, each with its own I-Twilio-Idempotency-Token: exactly one accepted, one row, one job', async () => {
    const fields = { ...parseForm(carrierFixture('twilio/status-undelivered.form')), MessageSid: `SM${randomUUID().replace(/-/g, '')}` };
    const [rowsBefore, jobsBefore] = [await rows(), await jobs()];
    const replies = await Promise.all(Array.from({ length: 20 }, () => postTwilio(app, 'messaging', fields, `tok-${randomUUID()}`)));
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(replies.filter((r) => r.body.status === 'accepted')).toHaveLength(1);
    expect([await rows(), await jobs()]).toEqual([rowsBefore + 1, jobsBefore + 1]);
  });

  it('a signed body Postgres cannot store is answered 400 saying what is wrong with it, never the database text', async () => {
    const telnyxBody = telnyxEvent('message.received', { id: 'm1', from: { phone_number: '+1' }, to: [{ phone_number: '+2' }], text: 'a\u0000b' });
    const twilioNul = { ...parseForm(carrierFixture('twilio/inbound-sms.form')), MessageSid: `SM${randomUUID().replace(/-/g, '')}`, Body: 'a\u0000b' };
    for (const reply of [await postTelnyx(app, telnyxBody), await postTwilio(app, 'messaging', twilioNul)]) {
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual({ errors: [{ code: 'invalid_event', title: 'Not a valid carrier event', detail: expect.stringMatching(/NUL character/) }] });
      expect(JSON.stringify(reply.body)).not.toMatch(INTERNALS);
    }
  });

  describe('every rejection answers its status and writes nothing', () => {
    let before: [number, number];
    beforeEach(async () => {
      before = [await rows(), await jobs()];
    });

    const good = () => telnyxFixture('message.sent.json', { id: randomUUID() });
    const signedAt = (offset: number) => {
      const body = good();
      return { body, headers: signer.headers(body, nowSeconds() + offset) };
    };
    const other = telnyxSigner();
    const twilioPath = '/webhooks/twilio/messaging';
    const twilioFields = () => ({ ...parseForm(carrierFixture('twilio/status-delivered.form')), MessageSid: `SM${randomUUID()}` });

    const CASES: Array<[string, number, () => { path?: string; body: string | Buffer; headers: Record<string, string> }]> = [
      ['telnyx: no signature headers', 401, () => ({ body: good(), headers: { 'content-type': 'application/json' } })],
      ['telnyx: signature by another key', 401, () => { const body = good(); return { body, headers: other.headers(body) }; }],
      ['telnyx: signature of another body', 401, () => ({ body: good(), headers: signer.headers(good()) })],
      ['telnyx: signature not base64', 401, () => { const body = good(); return { body, headers: { ...signer.headers(body), 'telnyx-signature-ed25519': '!!!' } }; }],
      ['telnyx: timestamp too old', 401, () => signedAt(-301)],
      // 30 s past the window: a loaded machine may take seconds between signing and checking
      ['telnyx: timestamp in the future', 401, () => signedAt(330)],
      ['telnyx: timestamp not a number', 401, () => { const body = good(); return { body, headers: { ...signer.headers(body), 'telnyx-timestamp': 'soon' } }; }],
      ['telnyx: signed, but not an envelope', 400, () => { const body = '{"hello":"world"}'; return { body, headers: signer.headers(body) }; }],
      ['telnyx: signed, but a JSON array', 400, () => { const body = '[1,2]'; return { body, headers: signer.headers(body) }; }],
      ['telnyx: signed, data.id missing', 400, () => { const b = JSON.parse(good()); delete b.data.id; const body = JSON.stringify(b); return { body, headers: signer.headers(body) }; }],
      ['telnyx: signed, not JSON', 400, () => { const body = '{"data":'; return { body, headers: signer.headers(body) }; }],
      ['telnyx: signed, text Postgres cannot store (\\u0000)', 400, () => { const body = telnyxEvent('message.received', { id: 'm1', from: { phone_number: '+1' }, to: [{ phone_number: '+2' }], text: 'a\u0000b' }); return { body, headers: signer.headers(body) }; }],
      ['telnyx: body over 256 KiB', 413, () => { const body = telnyxEvent('message.received', { id: 'm', from: { phone_number: '+1' }, to: [{ phone_number: '+2' }], text: 'x'.repeat(270_000) }); return { body, headers: signer.headers(body) }; }],
      ['twilio: no signature', 401, () => { const f = twilioFields(); return { path: twilioPath, body: formBody(f), headers: { 'content-type': 'application/x-www-form-urlencoded' } }; }],
      ['twilio: signed with another token', 401, () => { const f = twilioFields(); return { path: twilioPath, body: formBody(f), headers: twilioHeaders('wrong', PUBLIC_BASE + twilioPath, f) }; }],
      ['twilio: signed for another URL', 401, () => { const f = twilioFields(); return { path: twilioPath, body: formBody(f), headers: twilioHeaders(AUTH_TOKEN, `${PUBLIC_BASE}/webhooks/twilio/voice`, f) }; }],
      ['twilio: a field changed after signing', 401, () => { const f = twilioFields(); return { path: twilioPath, body: formBody({ ...f, MessageStatus: 'failed' }), headers: twilioHeaders(AUTH_TOKEN, PUBLIC_BASE + twilioPath, f) }; }],
      ['twilio: signed, no MessageSid', 400, () => { const f = { MessageStatus: 'sent', From: '+1' }; return { path: twilioPath, body: formBody(f), headers: twilioHeaders(AUTH_TOKEN, PUBLIC_BASE + twilioPath, f) }; }],
      ['twilio voice: signed, no CallStatus', 400, () => { const f = { CallSid: 'CA1', Direction: 'inbound' }; const p = '/webhooks/twilio/voice'; return { path: p, body: formBody(f), headers: twilioHeaders(AUTH_TOKEN, PUBLIC_BASE + p, f) }; }],
      ['twilio: signed, a field Postgres cannot store (\\u0000)', 400, () => { const f = { ...twilioFields(), ErrorMessage: 'x\u0000' }; return { path: twilioPath, body: formBody(f), headers: twilioHeaders(AUTH_TOKEN, PUBLIC_BASE + twilioPath, f) }; }],
      ['twilio: body over 256 KiB', 413, () => { const f = { ...twilioFields(), Body: 'x'.repeat(270_000) }; return { path: twilioPath, body: formBody(f), headers: twilioHeaders(AUTH_TOKEN, PUBLIC_BASE + twilioPath, f) }; }],
    ];

    it.each(CASES)('%s → %i', async (_, status, make) => {
      const { path = '/webhooks/telnyx', body, headers } = make();
      const reply = await post(app, path, headers, body);
      expect(reply.status).toBe(status);
      expect(reply.body).toEqual({ errors: [expect.objectContaining({ code: expect.any(String), title: expect.any(String) })] });
      expect(JSON.stringify(reply.body)).not.toMatch(INTERNALS);
      expect([await rows(), await jobs()]).toEqual(before);
    });
  });

  it('fuzz: random bodies and headers never get a 5xx and never write without a valid signature', async () => {
    const before = [await rows(), await jobs()];
    const realBody = telnyxFixture('message.sent.json');
    const realHeaders = signer.headers(realBody);
    const body = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.json({ maxDepth: 3 }),
      fc.constant(realBody),
      fc.constant(realBody.replace('"sent"', '"delivered"')),
      fc.constant(formBody(parseForm(carrierFixture('twilio/status-delivered.form')))),
    );
    const headerValue = fc.oneof(fc.string({ maxLength: 100 }), fc.base64String({ maxLength: 100 }), fc.constant(realHeaders['telnyx-signature-ed25519']), fc.constant(String(nowSeconds())));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/webhooks/telnyx', '/webhooks/twilio/messaging', '/webhooks/twilio/voice', '/webhooks/twilio/voice/dial?call=call_x&target=0', '/webhooks/twilio/voice/status'),
        fc.constantFrom('application/json', 'application/x-www-form-urlencoded'),
        body,
        fc.record({ 'telnyx-signature-ed25519': headerValue, 'telnyx-timestamp': headerValue, 'x-twilio-signature': headerValue }, { requiredKeys: [] }),
        async (path, contentType, payload, headers) => {
          // The one genuine combination (the real body with its real signature and timestamp) may write.
          const genuine = path === '/webhooks/telnyx' && payload === realBody
            && headers['telnyx-signature-ed25519'] === realHeaders['telnyx-signature-ed25519']
            && headers['telnyx-timestamp'] === realHeaders['telnyx-timestamp'];
          fc.pre(!genuine);
          // Header values must be sendable at all (fetch refuses control characters).
          const clean = Object.fromEntries(Object.entries(headers).filter(([, v]) => /^[\x20-\x7e]*$/.test(v)));
          const reply = await post(app, path, { ...clean, 'content-type': contentType }, payload);
          expect(reply.status).toBeGreaterThanOrEqual(400);
          expect(reply.status).toBeLessThan(500);
          expect(JSON.stringify(reply.body)).not.toMatch(INTERNALS);
        },
      ),
      { numRuns: 150 },
    );
    expect([await rows(), await jobs()]).toEqual(before);
  });
});

describe('a deployment pointed at the real carriers with their development credentials', () => {
  let db: TestDatabase;
  let app: TestApp;
  const devTelnyx = telnyxDevKeyPair();

  beforeAll(async () => {
    db = await createTestDatabase();
    // Nothing is sent in these tests: the API URLs only decide which credentials are trusted.
    app = await startTestApp({
      databaseUrl: db.url,
      env: { PUBLIC_BASE_URL: PUBLIC_BASE, TWILIO_API_URL: 'https://api.twilio.com', TELNYX_API_URL: 'https://api.telnyx.com/v2' },
    });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('refuses webhooks signed with the published development token and key (401), naming no setting, and stores nothing', async () => {
    const fields = { ...parseForm(carrierFixture('twilio/inbound-sms.form')), MessageSid: `SM${randomUUID().replace(/-/g, '')}` };
    const path = '/webhooks/twilio/messaging';
    const twilio = await post(app, path, twilioHeaders(DEV_TWILIO_AUTH_TOKEN, PUBLIC_BASE + path, fields), formBody(fields));
    expect(twilio).toMatchObject({ status: 401, body: { errors: [{ code: 'invalid_signature', title: 'Signature verification failed', detail: 'X-Twilio-Signature missing or wrong' }] } });

    const body = telnyxFixture('message.received.json', { id: randomUUID() });
    const timestamp = String(nowSeconds());
    const headers = { 'content-type': 'application/json', 'telnyx-timestamp': timestamp, 'telnyx-signature-ed25519': sign(null, Buffer.from(`${timestamp}|${body}`), devTelnyx.privateKey).toString('base64') };
    const telnyx = await post(app, '/webhooks/telnyx', headers, body);
    expect(telnyx).toMatchObject({ status: 401, body: { errors: [{ code: 'invalid_signature', title: 'Signature verification failed', detail: 'signature does not match' }] } });

    for (const reply of [twilio, telnyx]) expect(JSON.stringify(reply.body)).not.toMatch(INTERNALS);
    expect(await db.count(`SELECT count(*) FROM carrier_events`)).toBe(0);
  });
});
