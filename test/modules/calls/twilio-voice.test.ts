import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { getExpectedTwilioSignature, validateRequest } from 'twilio/lib/webhooks/webhooks.js';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import { pausePoint } from '../../support/pause.js';
import { newCallSid, twiml, TwilioVoiceCaller, type TwimlReply } from '../../support/twilio-voice.js';
import { VoicePipeline } from '../../support/voice-pipeline.js';
import { waitFor } from '../../support/wait.js';

const T0 = '+15557810001';
const T1 = '+15557810002';
const VOICEMAIL_TO = '+15557810003';
const RINGING = '+15557810100';
const WITH_VOICEMAIL = '+15557810101';
const CALLS_OFF = '+15557810102';
const FORWARDS = '+15557810103';
const FORWARD_TO = '+15557810004';
const TRANSCRIBED = '+15557810104';
const CALLER = '+13125550199';

/**
 * Twilio Voice decided in the request (CONTRACT.md, Voice, "Twilio Programmable Voice"): the
 * test plays Twilio, signing each callback with the official package and reading the TwiML back,
 * compared byte for byte with what the official `twiml.VoiceResponse` writes.
 */
describe('Twilio Voice: TwiML answered in the request', () => {
  let voice: VoicePipeline;
  let twilio: TwilioVoiceCaller;
  let base: string;

  beforeAll(async () => {
    voice = await VoicePipeline.start();
    twilio = new TwilioVoiceCaller(voice.app);
    base = voice.app.config.publicBaseUrl;
    const number = (phone_number: string, ring: object | null) => voice.customer.assignNumber(phone_number, 'twilio', ring ?? undefined);
    const targets = [{ to: T0, timeout_secs: 15 }, { to: T1, timeout_secs: 25 }];
    await number(RINGING, { ring_plan: { targets, fallback: { action: 'hangup' } } });
    await number(WITH_VOICEMAIL, { ring_plan: { targets: [{ to: VOICEMAIL_TO, timeout_secs: 10 }], fallback: { action: 'voicemail' } } });
    await number(CALLS_OFF, null);
    await number(FORWARDS, { ring_plan: { targets: [{ to: T0, timeout_secs: 15 }], fallback: { action: 'forward', to: FORWARD_TO } } });
    await number(TRANSCRIBED, { ring_plan: { targets: [{ to: T0, timeout_secs: 15 }] }, transcribe: true });
  });

  afterAll(async () => {
    await voice.stop();
  });

  /** A new inbound call to RINGING: its CallSid, our call id, and the first reply. */
  async function ringingCall(): Promise<{ sid: string; callId: string; first: TwimlReply }> {
    const sid = newCallSid();
    const first = await twilio.incoming(sid, CALLER, RINGING);
    const { rows } = await voice.db.pool.query<{ id: string }>(`SELECT id FROM calls WHERE carrier = 'twilio' AND carrier_call_id = $1`, [sid]);
    return { sid, callId: rows[0]?.id, first };
  }

  const legCount = (callId: string) => voice.db.count(`SELECT count(*) FROM call_legs WHERE call_id = $1`, [callId]);
  const applied = (callId: string) => voice.db.count(`SELECT count(*) FROM call_timeline WHERE call_id = $1 AND outcome = 'applied'`, [callId]);

  it('an incoming call: a ringing call row and the first <Dial> with answerOnBridge, as text/xml', async () => {
    const { sid, callId, first } = await ringingCall();
    expect(first.status).toBe(200);
    expect(first.contentType).toMatch(/^text\/xml/);
    expect(first.body).toBe(twiml.dial(base, callId, 0, T0, 15));
    const call = await voice.call(callId);
    expect(call).toMatchObject({ status: 'ringing', carrier: 'twilio', carrier_call_id: sid, from: CALLER, to: RINGING });
    expect(call.legs).toEqual([expect.objectContaining({ target_index: 0, to: T0, status: 'dialing' })]);
    // nothing waits in the outbox for it: the event was processed in the request
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL AND reply = $2`, [`${sid}:incoming:ringing`, first.body])).toBe(1);
  });

  it('a repeated incoming request answers the same TwiML and records one call', async () => {
    const { sid, callId, first } = await ringingCall();
    const again = await twilio.incoming(sid, CALLER, RINGING);
    expect(again.body).toBe(first.body);
    expect(await voice.db.count(`SELECT count(*) FROM calls WHERE carrier_call_id = $1`, [sid])).toBe(1);
    expect(await legCount(callId)).toBe(1);
  });

  it('duplicate /dial callbacks for one step (sequential and concurrent): one decision, identical TwiML', async () => {
    const { sid, callId } = await ringingCall();
    const dialSid = newCallSid();
    const result = { status: 'no-answer', dialSid };
    const first = await twilio.dialResult(sid, callId, 0, result);
    expect(first.body).toBe(twiml.dial(base, callId, 1, T1, 25));
    const copies = await Promise.all([...Array.from({ length: 6 }, () => twilio.dialResult(sid, callId, 0, result)), twilio.dialResult(sid, callId, 0, result)]);
    for (const copy of copies) expect(copy).toEqual(first);
    expect(await legCount(callId)).toBe(2);
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1`, [`${sid}:dial:0:${dialSid}`])).toBe(1);
    expect((await voice.call(callId)).ring_plan.next).toBe(2);
  });

  it('two different steps of one chain (same CallSid, different DialCallSid) are both decided: next <Dial>, then the fallback', async () => {
    const { sid, callId } = await ringingCall();
    expect((await twilio.dialResult(sid, callId, 0, { status: 'busy' })).body).toBe(twiml.dial(base, callId, 1, T1, 25));
    expect((await twilio.dialResult(sid, callId, 1, { status: 'no-answer' })).body).toBe(twiml.hangup());
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id LIKE $1 AND processed_at IS NOT NULL`, [`${sid}:dial:%`])).toBe(2);
    const { rows } = await voice.db.pool.query(`SELECT ring_plan->>'phase' AS phase FROM calls WHERE id = $1`, [callId]);
    expect(rows).toEqual([{ phase: 'hangup' }]);
    const call = await voice.call(callId);
    expect(call.legs.map((l: { status: string }) => l.status)).toEqual(['ended', 'ended']);
    // the caller is hung up; the status callback ends the call as missed, nothing billed
    expect((await twilio.status(sid, 'completed', 0)).body).toBe(twiml.empty());
    expect(await voice.call(callId)).toMatchObject({ status: 'missed', billable_minutes: 0 });
    expect(await voice.usageRows(callId)).toBe(0);
  });

  it('ringing then completed: the progress report ends nothing; completed twice ends and bills once, minutes from CallDuration', async () => {
    const { sid, callId } = await ringingCall();
    const ringing = await twilio.status(sid, 'ringing');
    expect(ringing).toMatchObject({ status: 200, body: twiml.empty() });
    expect((await voice.call(callId)).status).toBe('ringing');
    expect((await twilio.status(sid, 'in-progress')).body).toBe(twiml.empty());
    expect((await voice.call(callId)).ended_at).toBeNull();
    // target 0 answered and talked for 70 s: the dial's result hangs the call up
    expect((await twilio.dialResult(sid, callId, 0, { status: 'completed', duration: 70 })).body).toBe(twiml.hangup());
    expect((await voice.call(callId)).status).toBe('in_progress');
    for (let i = 0; i < 2; i++) expect((await twilio.status(sid, 'completed', 75)).body).toBe(twiml.empty());
    const call = await voice.call(callId);
    expect(call).toMatchObject({ status: 'completed', duration_seconds: 75, billable_minutes: 2 });
    expect(await voice.usageRows(callId)).toBe(1);
    expect(await voice.events('call.completed', callId)).toBe(1);
  });

  it('a number set to transcribe: its Twilio calls say transcribe false and queue no transcript (no transcription on this carrier yet)', async () => {
    const sid = newCallSid();
    await twilio.incoming(sid, CALLER, TRANSCRIBED);
    const { rows } = await voice.db.pool.query<{ id: string }>(`SELECT id FROM calls WHERE carrier = 'twilio' AND carrier_call_id = $1`, [sid]);
    const callId = rows[0].id;
    expect((await twilio.dialResult(sid, callId, 0, { status: 'completed', duration: 30 })).body).toBe(twiml.hangup());
    expect((await twilio.status(sid, 'completed', 32)).body).toBe(twiml.empty());
    expect(await voice.call(callId)).toMatchObject({ status: 'completed', transcribe: false });
    expect(await voice.db.count(`SELECT count(*) FROM outbox_jobs WHERE name = 'call-transcript' AND data->>'callId' = $1`, [callId])).toBe(0);
  });

  it('a completed status before the dial result still bills from CallDuration (the report of who answered is late)', async () => {
    const { sid, callId } = await ringingCall();
    expect((await twilio.status(sid, 'completed', 30)).body).toBe(twiml.empty());
    const call = await voice.call(callId);
    expect(call).toMatchObject({ status: 'completed', duration_seconds: 30, billable_minutes: 1 });
    expect(Date.parse(call.ended_at) - Date.parse(call.answered_at)).toBe(30_000);
    expect((await twilio.dialResult(sid, callId, 0, { status: 'completed', duration: 28 })).body).toBe(twiml.hangup());
    expect(await voice.usageRows(callId)).toBe(1);
  });

  it('busy, no-answer, failed and canceled end a call; a call that never rang a target is missed', async () => {
    for (const status of ['busy', 'no-answer', 'failed', 'canceled']) {
      const { sid, callId } = await ringingCall();
      expect((await twilio.status(sid, status, 0)).body).toBe(twiml.empty());
      expect(await voice.call(callId)).toMatchObject({ status: 'missed', hangup_cause: status });
    }
  });

  it('<Reject/> and a missed call row for a number without voice settings; <Reject/> and no row for a number nobody owns', async () => {
    const sid = newCallSid();
    const reply = await twilio.incoming(sid, CALLER, CALLS_OFF);
    expect(reply).toMatchObject({ status: 200, body: twiml.reject() });
    const { rows } = await voice.db.pool.query(`SELECT status, hangup_cause FROM calls WHERE carrier_call_id = $1`, [sid]);
    expect(rows).toEqual([{ status: 'missed', hangup_cause: 'no_voice_settings' }]);
    const stranger = newCallSid();
    expect((await twilio.incoming(stranger, CALLER, '+15557819999')).body).toBe(twiml.reject());
    expect(await voice.db.count(`SELECT count(*) FROM calls WHERE carrier_call_id = $1`, [stranger])).toBe(0);
  });

  it('voicemail fallback: <Record> answers the caller, the recording is kept once, then <Hangup/>', async () => {
    const sid = newCallSid();
    await twilio.incoming(sid, CALLER, WITH_VOICEMAIL);
    const { rows } = await voice.db.pool.query<{ id: string }>(`SELECT id FROM calls WHERE carrier_call_id = $1`, [sid]);
    const callId = rows[0].id;
    expect((await twilio.dialResult(sid, callId, 0, { status: 'no-answer' })).body).toBe(twiml.record(base, callId));
    expect((await voice.call(callId)).status).toBe('in_progress');
    expect((await twilio.recording(sid, callId, 'https://api.twilio.com/rec/RE1')).body).toBe(twiml.hangup());
    expect((await twilio.status(sid, 'completed', 12)).body).toBe(twiml.empty());
    expect(await voice.call(callId)).toMatchObject({ status: 'completed', voicemail_url: 'https://api.twilio.com/rec/RE1', billable_minutes: 1 });
    expect(await voice.events('call.voicemail', callId)).toBe(1);
  });

  it('forward fallback: a last <Dial> to the forward number, then <Hangup/> when it too ends', async () => {
    const sid = newCallSid();
    await twilio.incoming(sid, CALLER, FORWARDS);
    const { rows } = await voice.db.pool.query<{ id: string }>(`SELECT id FROM calls WHERE carrier_call_id = $1`, [sid]);
    const callId = rows[0].id;
    expect((await twilio.dialResult(sid, callId, 0, { status: 'no-answer' })).body).toBe(twiml.dial(base, callId, 1, FORWARD_TO, 20));
    expect((await twilio.dialResult(sid, callId, 1, { status: 'no-answer' })).body).toBe(twiml.hangup());
    expect((await voice.call(callId)).legs.map((l: { to: string }) => l.to)).toEqual([T0, FORWARD_TO]);
  });

  it('a bad signature is 401 and stores nothing; the official validateRequest agrees with what we accept', async () => {
    const sid = newCallSid();
    const fields = { CallSid: sid, CallStatus: 'ringing', Direction: 'inbound', From: CALLER, To: RINGING };
    const refused = await twilio.post('/webhooks/twilio/voice', fields, 'bm90IGEgc2lnbmF0dXJl');
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body).errors[0].code).toBe('invalid_signature');
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id LIKE $1`, [`${sid}:%`])).toBe(0);
    // signed for the /dial URL but sent with another target: the query is signed too
    const { callId, sid: other } = await ringingCall();
    const { getExpectedTwilioSignature } = await import('twilio/lib/webhooks/webhooks.js');
    const dialFields = { CallSid: other, DialCallStatus: 'no-answer', DialCallSid: newCallSid() };
    const signed = getExpectedTwilioSignature(voice.app.config.twilioWebhookAuthToken!, `${base}/webhooks/twilio/voice/dial?call=${callId}&target=0`, dialFields);
    expect(validateRequest(voice.app.config.twilioWebhookAuthToken!, signed, `${base}/webhooks/twilio/voice/dial?call=${callId}&target=1`, dialFields)).toBe(false);
    expect((await twilio.post(`/webhooks/twilio/voice/dial?call=${callId}&target=1`, dialFields, signed)).status).toBe(401);
    expect(await legCount(callId)).toBe(1);
  });

  it('a captured incoming request re-split into other fields under the same signature (another dedupe key) is refused: no second call, no second decision', async () => {
    const { sid, callId } = await ringingCall();
    const genuine = { CallSid: sid, AccountSid: 'AC00000000000000000000000000000000', From: CALLER, To: RINGING, CallStatus: 'ringing', Direction: 'inbound' };
    const { getExpectedTwilioSignature } = await import('twilio/lib/webhooks/webhooks.js');
    const token = voice.app.config.twilioWebhookAuthToken!;
    const signature = getExpectedTwilioSignature(token, `${base}/webhooks/twilio/voice`, genuine);
    const { Direction: _dropped, ...rest } = genuine;
    const resplit = { ...rest, CallStatus: 'ringingDirectioninbound' };
    expect(getExpectedTwilioSignature(token, `${base}/webhooks/twilio/voice`, resplit)).toBe(signature);
    const reply = await twilio.post('/webhooks/twilio/voice', resplit, signature);
    expect(reply.status).toBe(400);
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id LIKE $1`, [`${sid}:%`])).toBe(1);
    expect(await legCount(callId)).toBe(1);
  });

  it('the in-request dedupe: a copy of a /dial callback arriving while the first is held after its INSERT waits, then gets the first one\'s TwiML', async () => {
    const { sid, callId } = await ringingCall();
    const dialSid = newCallSid();
    const pause = await pausePoint(voice.db.url, { table: 'carrier_events', on: 'INSERT', when: `NEW.carrier_event_id = '${sid}:dial:0:${dialSid}'` });
    await pause.hold();
    try {
      const held = twilio.dialResult(sid, callId, 0, { status: 'no-answer', dialSid });
      await pause.waitUntilPaused();
      const copy = twilio.dialResult(sid, callId, 0, { status: 'no-answer', dialSid });
      // the copy waits on the dedupe key's lock the held one took before its INSERT: it cannot decide on its own
      await waitFor(() => advisoryWaiters(voice), (n) => n >= 2, { what: 'the copy to wait on the key lock the held one holds' });
      await pause.release();
      const [a, b] = await Promise.all([held, copy]);
      expect(a.body).toBe(twiml.dial(base, callId, 1, T1, 25));
      expect(b).toEqual(a);
    } finally {
      await pause.remove();
    }
    expect(await legCount(callId)).toBe(2);
    expect(await applied(callId)).toBe(2);
  });

  it('the in-request cursor: a second report of the same step (another DialCallSid) while the first is held after its compare-and-set gets <Hangup/>, not a second <Dial>', async () => {
    const { sid, callId } = await ringingCall();
    const pause = await pausePoint(voice.db.url, { table: 'calls', on: 'UPDATE', when: `NEW.id = '${callId}' AND (NEW.ring_plan->>'next')::int = 2` });
    await pause.hold();
    try {
      const held = twilio.dialResult(sid, callId, 0, { status: 'no-answer' });
      await pause.waitUntilPaused();
      const competitor = twilio.dialResult(sid, callId, 0, { status: 'failed' });
      await waitFor(() => rowLockWaiters(voice), (n) => n >= 1, { what: 'the competitor to wait on the call row' });
      await pause.release();
      const [won, lost] = await Promise.all([held, competitor]);
      expect(won.body).toBe(twiml.dial(base, callId, 1, T1, 25));
      expect(lost.body).toBe(twiml.hangup());
    } finally {
      await pause.remove();
    }
    expect(await legCount(callId)).toBe(2);
    expect(await voice.db.count(`SELECT count(*) FROM call_timeline WHERE call_id = $1 AND outcome = 'superseded'`, [callId])).toBe(1);
  });

  // Issue 24, item 8: two identical requests carry the same signature, so the same nonce. Since
  // issue 44 (carrier_events partitioned) both are serialized by the dedupe key's advisory lock
  // (carrier_event_lock), taken before the look for a twin: a copy can no longer pass that look
  // before the first's row is indexed (the race the nonce index used to settle).
  /** The calls and stored events of one CallSid: exactly one of each, answered with `reply`. */
  async function expectOneCall(sid: string, reply: string): Promise<void> {
    const { rows: calls } = await voice.db.pool.query<{ id: string }>(`SELECT id FROM calls WHERE carrier = 'twilio' AND carrier_call_id = $1`, [sid]);
    expect(calls).toHaveLength(1);
    expect(reply).toBe(twiml.dial(base, calls[0]!.id, 0, T0, 15));
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND reply = $2`, [`${sid}:incoming:ringing`, reply])).toBe(1);
    expect(await voice.db.count(`SELECT count(*) FROM call_legs WHERE call_id = $1`, [calls[0]!.id])).toBe(1);
  }

  it('the copy arrives while the first is held after its INSERT: it waits on the key lock the first holds and gets the same TwiML', async () => {
    const sid = newCallSid();
    const pause = await pausePoint(voice.db.url, { table: 'carrier_events', on: 'INSERT', when: `NEW.carrier_event_id = '${sid}:incoming:ringing'` });
    await pause.hold();
    try {
      const held = twilio.incoming(sid, CALLER, RINGING);
      await pause.waitUntilPaused();
      const copy = twilio.incoming(sid, CALLER, RINGING);
      await waitFor(() => advisoryWaiters(voice), (n) => n >= 2, { what: 'the copy to wait on the key lock the held one holds' });
      await pause.release();
      const [a, b] = await Promise.all([held, copy]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(b.body).toBe(a.body);
      await expectOneCall(sid, a.body);
    } finally {
      await pause.remove();
    }
  }, 60_000);

  it('a different delivery under a signature already stored (a nonce-only collision) is still refused 400, with no call', async () => {
    const sid = newCallSid();
    const fields = { CallSid: sid, AccountSid: 'AC00000000000000000000000000000000', From: CALLER, To: RINGING, CallStatus: 'ringing', Direction: 'inbound' };
    const signature = getExpectedTwilioSignature(voice.app.config.twilioWebhookAuthToken!, `${base}/webhooks/twilio/voice`, fields);
    // a row stored under another dedupe key with this very signature
    await voice.db.pool.query(
      `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce)
       VALUES ('cev_planted_nonce', 'twilio', 'planted-other-key', 'planted', 'call.initiated', '{}', '{}', $1)`,
      [signature],
    );
    try {
      const refused = await twilio.post('/webhooks/twilio/voice', fields, signature);
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.body).errors[0].detail).toMatch(/signature was already used/);
      expect(await voice.db.count(`SELECT count(*) FROM calls WHERE carrier_call_id = $1`, [sid])).toBe(0);
    } finally {
      await voice.db.pool.query(`DELETE FROM carrier_events WHERE id = 'cev_planted_nonce'`);
    }
  }, 60_000);
  it('after all of the above, every invariant holds (minutes billed once, end announced once, one dial per try)', async () => {
    const report = await voice.app.app.get(VerifyService).run({ limit: 5 });
    expect(report.invariants.filter((i) => !i.ok)).toEqual([]);
  });
});

/**
 * Advisory locks of this database waited for: a transaction held at a pause point, and a copy
 * waiting on the dedupe key's lock the held one took (carrier_event_lock).
 */
function advisoryWaiters(voice: VoicePipeline): Promise<number> {
  return voice.db.count(`SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`);
}

/** Transactions of this database blocked on a row lock (not on the test's advisory lock). */
function rowLockWaiters(voice: VoicePipeline): Promise<number> {
  return voice.db.count(
    `SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype IN ('transactionid', 'tuple')
        AND pid IN (SELECT pid FROM pg_stat_activity WHERE datname = current_database())`,
  );
}

