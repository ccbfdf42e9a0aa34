import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { carrierFixture, formBody, parseForm, telnyxFixture, telnyxSigner, twilioHeaders, vonageFixture, vonageHeaders, vonageToken, type TwilioFields } from '../../support/carrier-signing.js';
import { badSeconds, deepJsonText, HOSTILE_SIGNED_RUNS, longId, longWord, outOfRangeTime, unstorableText, withRawJson, type Hostile } from '../../support/hostile-values.js';
import { withTestApp } from '../../support/with-test-app.js';

const AUTH_TOKEN = 'hostile-signed-twilio-token';
const VONAGE_SECRET = 'hostile-signed-vonage-secret-0123456789';
const PUBLIC_BASE = 'https://hooks.example.test';
const signer = telnyxSigner();

interface Delivery {
  path: string;
  body: string;
  headers: Record<string, string>;
  /** The carrier_event_id it is stored under when good. */
  key?: string;
}

/** One carrier: a good delivery (a new event each time) and its hostile variants. */
interface CarrierCase {
  carrier: string;
  good: () => Promise<Delivery>;
  hostile: fc.Arbitrary<Hostile<Delivery>>;
}

// ---- Telnyx: Ed25519 over the JSON bytes ------------------------------------------------------

function telnyxDelivery(change: (body: any) => void, raw?: string): Delivery {
  const body = JSON.parse(telnyxFixture('message.finalized.delivered.json', { id: randomUUID() }));
  change(body);
  const text = raw === undefined ? JSON.stringify(body) : withRawJson(JSON.stringify(body), raw);
  return { path: '/webhooks/telnyx', body: text, headers: signer.headers(text), key: body.data.id };
}

const telnyx: CarrierCase = {
  carrier: 'telnyx',
  good: async () => telnyxDelivery(() => undefined),
  hostile: fc.oneof(
    longId.map((v) => ({ case: 'data.id too long', names: 'data.id', make: () => telnyxDelivery((b) => (b.data.id = v)) })),
    longId.map((v) => ({ case: 'data.payload.id too long', names: 'data.payload.id', make: () => telnyxDelivery((b) => (b.data.payload.id = v)) })),
    longWord.map((v) => ({ case: 'data.event_type too long', names: 'data.event_type', make: () => telnyxDelivery((b) => (b.data.event_type = v)) })),
    longWord.map((v) => ({ case: 'to[0].status too long', names: 'data.payload.to[0].status', make: () => telnyxDelivery((b) => (b.data.payload.to[0].status = v)) })),
    outOfRangeTime.map((v) => ({ case: 'occurred_at out of range', names: 'data.occurred_at', make: () => telnyxDelivery((b) => (b.data.occurred_at = v)) })),
    unstorableText.map((v) => ({ case: 'unstorable text', names: 'data.payload.text', make: () => telnyxDelivery((b) => (b.data.payload.text = v)) })),
    deepJsonText.map((raw) => ({ case: 'nested too deep', names: 'nests deeper than 64 levels', make: () => telnyxDelivery((b) => (b.data.payload.extra = '__DEEP__'), raw) })),
    fc.integer({ min: 2_001, max: 20_000 }).map((n) => ({
      case: 'transcript past its key bound',
      names: 'data.payload.transcription_data.transcript',
      make: () => telnyxDelivery((b) => {
        b.data.event_type = 'call.transcription';
        b.data.payload = { call_control_id: 'v3:leg', call_session_id: randomUUID(), transcription_data: { transcript: 'w'.repeat(n), is_final: true } };
      }),
    })),
  ),
};

// ---- Twilio: HMAC-SHA1 over URL + form fields -------------------------------------------------

function twilioDelivery(path: string, fields: TwilioFields, key?: string): Delivery {
  return { path, body: formBody(fields), headers: twilioHeaders(AUTH_TOKEN, PUBLIC_BASE + path, fields), key };
}

function twilioStatus(change: (fields: TwilioFields) => void = () => undefined): Delivery {
  const sid = `SM${randomUUID().replaceAll('-', '')}`;
  const fields = { ...parseForm(carrierFixture('twilio/status-delivered.form')), MessageSid: sid, SmsSid: sid };
  change(fields);
  return twilioDelivery('/webhooks/twilio/messaging', fields, `${sid}:delivered`);
}

const voiceFields = (more: TwilioFields): TwilioFields => ({ CallSid: `CA${randomUUID().replaceAll('-', '')}`, From: '+13125550001', To: '+14155550100', Direction: 'inbound', ...more });
const dialPath = `/webhooks/twilio/voice/dial?call=call_${'0'.repeat(26)}&target=0`;

const twilio: CarrierCase = {
  carrier: 'twilio',
  good: async () => twilioStatus(),
  hostile: fc.oneof(
    longId.map((v) => ({ case: 'MessageSid too long', names: 'MessageSid', make: () => twilioStatus((f) => ((f.MessageSid = v), (f.SmsSid = v))) })),
    longWord.map((v) => ({ case: 'MessageStatus too long', names: 'MessageStatus', make: () => twilioStatus((f) => ((f.MessageStatus = v), (f.SmsStatus = v))) })),
    // A form body carries no unpaired surrogate (percent-encoding writes U+FFFD): NUL is the one to try.
    unstorableText.filter((v) => v.includes('\u0000')).map((v) => ({ case: 'unstorable text', names: 'ErrorMessage', make: () => twilioStatus((f) => (f.ErrorMessage = v)) })),
    longId.map((v) => ({ case: 'CallSid too long', names: 'CallSid', make: () => twilioDelivery('/webhooks/twilio/voice/status', voiceFields({ CallSid: v, CallStatus: 'ringing' })) })),
    badSeconds.map((v) => ({ case: 'CallDuration out of range', names: 'CallDuration', make: () => twilioDelivery('/webhooks/twilio/voice/status', voiceFields({ CallStatus: 'completed', CallDuration: v })) })),
    outOfRangeTime.map((v) => ({ case: 'Timestamp out of range', names: 'Timestamp', make: () => twilioDelivery('/webhooks/twilio/voice/status', voiceFields({ CallStatus: 'ringing', Timestamp: v })) })),
    badSeconds.map((v) => ({ case: 'DialCallDuration out of range', names: 'DialCallDuration', make: () => twilioDelivery(dialPath, voiceFields({ DialCallStatus: 'completed', DialCallSid: 'CA1', DialCallDuration: v })) })),
    longId.map((v) => ({ case: 'DialCallSid too long', names: 'DialCallSid', make: () => twilioDelivery(dialPath, voiceFields({ DialCallStatus: 'completed', DialCallSid: v, DialCallDuration: '5' })) })),
    longId.map((v) => ({ case: 'RecordingSid too long', names: 'RecordingSid', make: () => twilioDelivery(`/webhooks/twilio/voice/recording?call=call_${'0'.repeat(26)}`, voiceFields({ RecordingSid: v, RecordingUrl: 'https://api.twilio.com/r/RE1' })) })),
  ),
};

// ---- Vonage: HS256 JWT bound to the JSON bytes ------------------------------------------------

async function vonageDelivery(change: (body: any) => void, raw?: string): Promise<Delivery> {
  const body = JSON.parse(vonageFixture('status-delivered.json', { message_uuid: randomUUID() }));
  change(body);
  const text = raw === undefined ? JSON.stringify(body) : withRawJson(JSON.stringify(body), raw);
  return { path: '/webhooks/vonage/messages', body: text, headers: vonageHeaders(await vonageToken(VONAGE_SECRET, text)), key: `${body.message_uuid}:${body.status}` };
}

const vonage: CarrierCase = {
  carrier: 'vonage',
  good: () => vonageDelivery(() => undefined),
  hostile: fc.oneof(
    longId.map((v) => ({ case: 'message_uuid too long', names: 'body.message_uuid', make: () => vonageDelivery((b) => (b.message_uuid = v)) })),
    longWord.map((v) => ({ case: 'status too long', names: 'body.status', make: () => vonageDelivery((b) => (b.status = v)) })),
    outOfRangeTime.map((v) => ({ case: 'timestamp out of range', names: 'body.timestamp', make: () => vonageDelivery((b) => (b.timestamp = v)) })),
    unstorableText.map((v) => ({ case: 'unstorable text', names: 'client_ref', make: () => vonageDelivery((b) => (b.client_ref = v)) })),
    deepJsonText.map((raw) => ({ case: 'nested too deep', names: 'nests deeper than 64 levels', make: () => vonageDelivery((b) => (b.extra = '__DEEP__'), raw) })),
  ),
};

/**
 * Issue 25, properties per carrier: a correctly signed delivery holding a hostile id, depth,
 * number, time or text, sent at the same moment as good deliveries (so they share group-commit
 * batches), is refused alone with a 400 naming the field; nothing of it is stored, and every good
 * delivery beside it is accepted and stored exactly once. Never a 5xx.
 */
describe('signed but hostile carrier webhooks (issue 25)', () => {
  const t = withTestApp({ env: { TELNYX_PUBLIC_KEY: signer.publicKey, TWILIO_AUTH_TOKEN: AUTH_TOKEN, PUBLIC_BASE_URL: PUBLIC_BASE, VONAGE_SIGNATURE_SECRET: VONAGE_SECRET } });
  const rows = () => t.db.count(`SELECT count(*) FROM carrier_events`);

  async function send(d: Delivery): Promise<{ status: number; body: any }> {
    const res = await fetch(t.app.url + d.path, { method: 'POST', headers: d.headers, body: d.body });
    return { status: res.status, body: await res.json() };
  }

  it.each([telnyx, twilio, vonage])('$carrier: the hostile delivery alone gets a 400 naming its field; the good ones beside it are stored once', async ({ good, hostile }) => {
    await fc.assert(
      fc.asyncProperty(hostile, async (h) => {
        const goods = await Promise.all(Array.from({ length: 6 }, good));
        const bad = await h.make();
        const before = await rows();
        const [badReply, ...goodReplies] = await Promise.all([bad, ...goods].map(send));

        expect(badReply.status).toBe(400);
        expect(badReply.body).toEqual({ errors: [expect.objectContaining({ code: 'invalid_event', detail: expect.stringContaining(h.names) })] });
        expect(goodReplies.map((r) => [r.status, r.body.status])).toEqual(Array(6).fill([200, 'accepted']));
        expect(await t.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = ANY($1)`, [goods.map((g) => g.key)])).toBe(6);
        // Nothing of the hostile one: exactly the six good rows are new.
        expect(await rows()).toBe(before + 6);
      }),
      { numRuns: HOSTILE_SIGNED_RUNS, endOnFailure: true },
    );
  });
});
