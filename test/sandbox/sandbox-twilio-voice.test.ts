import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApiClient } from '../support/api-client.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/ports.js';
import { startSandboxChild, type SandboxChild } from '../support/sandbox-child.js';
import { waitFor } from '../support/wait.js';

const RING = '+17735550301';
const VOICEMAIL = '+17735550302';
const BUSY = '+17735550401';
const ANSWERS = '+17735550402';
const AWAY = '+17735550403';
const CALLS = 4;

/**
 * The sandbox playing Twilio Voice against the real app: each call requests our voice URL and
 * follows the TwiML (dial, the dial's action, record, hangup), every TwiML request sent three
 * times at once and every status callback duplicated and re-signed. Copies must get identical
 * TwiML; each call dials each target once and is billed once.
 */
describe('sandbox Twilio Voice following our TwiML under chaos', () => {
  let db: TestDatabase;
  let app: TestApp;
  let sandbox: SandboxChild;
  let customer: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    const port = await freePort();
    sandbox = await startSandboxChild({ PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, SANDBOX_CHAOS: 'duplicate=3,resign,delay_ms=30', LOG_LEVEL: 'error' });
    app = await startTestApp({ databaseUrl: db.url, relay: true, worker: true, port, env: { PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, TWILIO_API_URL: `${sandbox.url}/twilio` } });
    customer = await ApiClient.forNewAccount(app);
    const number = (phone_number: string, voice: object) => customer.assignNumber(phone_number, 'twilio', voice);
    await number(RING, { ring_plan: { targets: [{ to: BUSY }, { to: ANSWERS }], fallback: { action: 'hangup' } } });
    await number(VOICEMAIL, { ring_plan: { targets: [{ to: AWAY, timeout_secs: 5 }], fallback: { action: 'voicemail' } } });
    const behaviours = { time_scale: 0.05, [BUSY]: { busy: true }, [ANSWERS]: { answer_after_ms: 1000, talk_ms: 70_000 }, [AWAY]: { no_answer: true } };
    expect((await fetch(`${sandbox.url}/sandbox/calls/behaviours`, { method: 'POST', body: JSON.stringify(behaviours) })).status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.drop();
  });

  const inbound = async (from: string, to: string) => {
    const res = await fetch(`${sandbox.url}/sandbox/calls/inbound`, { method: 'POST', body: JSON.stringify({ from, to, carrier: 'twilio' }) });
    expect(res.status).toBe(202);
    return ((await res.json()) as { data: { call_sid: string } }).data.call_sid;
  };

  it(`${CALLS} calls through busy → answer, and one to voicemail: one decision per step, identical TwiML for every copy, billed once`, async () => {
    const sids = [];
    for (let i = 0; i < CALLS; i++) sids.push(await inbound(`+1312555${2000 + i}`, RING));
    const voicemail = await inbound('+13125553000', VOICEMAIL);
    await waitFor(() => db.count(`SELECT count(*) FROM calls WHERE ended_at IS NOT NULL`), (n) => n === CALLS + 1, { timeoutMs: 60_000, intervalMs: 250, what: 'every call ended' });
    await waitFor(() => sandbox.stats(), (s) => s.webhooks.pending === 0, { timeoutMs: 30_000, what: 'status callbacks delivered' });

    const { rows } = await db.pool.query(`SELECT carrier_call_id, status, duration_seconds, billable_minutes, voicemail_url, answered_at, created_at FROM calls ORDER BY created_at`);
    const log = await (await fetch(`${sandbox.url}/sandbox/calls/log`)).text();
    const lines = log.trim().split('\n').map((l) => JSON.parse(l));
    // The call lasts what Twilio's CallDuration says (the sandbox's log line has the same figure):
    // real seconds, as Telnyx's occurred_at are: 70 s of talk in call time is 3.5 s at time_scale
    // 0.05, plus the dial action's HTTP, so only the lower bound is fixed. Billed ceil(duration / 60)
    // minutes, at least 1; the answer it implies is never before the call row was created.
    for (const sid of sids) {
      const call = rows.find((r) => r.carrier_call_id === sid);
      const line = lines.find((l) => l.call_sid === sid);
      expect(line).toMatchObject({ status: 'completed', duration_secs: expect.any(Number) });
      expect(call).toMatchObject({ status: 'completed', duration_seconds: line.duration_secs, billable_minutes: Math.max(1, Math.ceil(line.duration_secs / 60)) });
      expect(call.duration_seconds).toBeGreaterThanOrEqual(3);
      expect(call.answered_at.getTime()).toBeGreaterThanOrEqual(call.created_at.getTime());
    }
    expect(rows.find((r) => r.carrier_call_id === voicemail)).toMatchObject({ status: 'completed', voicemail_url: expect.stringMatching(/Recordings\/RE/) });
    expect(await db.count(`SELECT count(*) FROM (SELECT call_id FROM call_legs GROUP BY call_id HAVING count(*) = 2 AND count(DISTINCT target_index) = 2) l`)).toBe(CALLS);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE kind = 'call_minutes'`)).toBe(CALLS + 1);
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'call.completed'`)).toBe(CALLS + 1);
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'call.voicemail'`)).toBe(1);
    expect(await db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL`)).toBe(0);

    const stats = (await sandbox.stats()).twilio_voice;
    expect(stats).toMatchObject({ calls: CALLS + 1, mismatched_replies: 0, bad_replies: 0 });
    // each call: voice URL + two dial actions (ring) or one dial action + the record action (voicemail), three copies each
    expect(stats.requests).toBe(3 * (3 * CALLS + 3));
    expect(stats.verbs).toEqual({ Dial: 2 * CALLS + 1, Hangup: CALLS + 1, Record: 1 });
  }, 90_000);
});
