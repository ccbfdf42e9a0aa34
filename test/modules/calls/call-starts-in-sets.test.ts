import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { CallCarrierEvents } from '../../../src/modules/calls/call-carrier-events.js';
import { CallTransitions } from '../../../src/modules/calls/call-transitions.js';
import { CarrierEventHandlers } from '../../../src/modules/ingest/carrier-event-handlers.js';
import { CarrierEventProcessor } from '../../../src/modules/ingest/carrier-event-processor.js';
import { PhoneNumbers } from '../../../src/modules/numbers/phone-numbers.service.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { captured } from '../../support/captured-statements.js';
import { boundaryIn } from '../../support/partitions.js';
import { pausePoint, type PausePointSpec } from '../../support/pause.js';
import { VoicePipeline, type TestCall } from '../../support/voice-pipeline.js';
import { waitFor } from '../../support/wait.js';

const CALLER = '+15557790901';
const A = '+15557791801';
const B = '+15557791802';
const RING = '+15550320001';
const PLAN = { ring_plan: { targets: [{ to: A, timeout_secs: 25 }, { to: B }], fallback: { action: 'voicemail' } }, transcribe: true };

/**
 * New calls started in sets (CallStartsInSets): the callers' call.initiated of many calls in one
 * statement, under each call's turn, the call inserted under its dedupe guard (call_twin) and the
 * plan decided from the number's settings as read before, compared again in the statement. Each
 * interleaving holds one side on a lock the test owns and checks what the other decided.
 */
describe('new calls started in sets', () => {
  let voice: VoicePipeline;

  beforeAll(async () => {
    voice = await VoicePipeline.start();
    await voice.number(RING, PLAN);
  });
  afterAll(async () => {
    await voice.stop();
  });

  const get = <T>(type: new (...args: never[]) => T) => voice.app.app.get(type);
  const callsOf = async (session: string) => (await voice.db.pool.query<{ id: string }>(`SELECT id FROM calls WHERE carrier_call_id = $1`, [session])).rows.map((r) => r.id);
  const timeline = async (callId: string) => ((await voice.customer.get(`/v2/calls/${callId}/timeline`)).body.data as { event_type: string; outcome: string }[]).map((e) => `${e.event_type}:${e.outcome}`);
  const startStatements = (texts: string[]) => texts.filter((text) => text.startsWith('WITH evt_input') && text.includes('calls_started'));
  /** The transaction path's own statements for a caller's call.initiated: its number lookup, its insert, its lock of a repeat's call. */
  const transactionTexts = (texts: string[]) =>
    texts.filter((text) => !text.startsWith('WITH evt_input') && (text.startsWith('SELECT account_id, carrier, voice FROM phone_numbers') || text.startsWith('INSERT INTO calls') || text.includes('FROM calls WHERE carrier = $1 AND carrier_call_id = $2 FOR UPDATE')));
  /** Set statements (they start with the input rows) waiting on an advisory lock. */
  const setStatementsWaiting = () => voice.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory' AND query LIKE 'WITH evt_input%'`);
  /** Transactions (not set statements) waiting for a call's turn. */
  const transactionsWaiting = () => voice.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory' AND query NOT LIKE 'WITH evt_input%'`);
  const noteOf = async (session: string) => (await voice.db.pool.query<{ note: string | null }>(`SELECT note FROM carrier_events WHERE normalized->>'callSessionId' = $1 AND kind = 'call.initiated' ORDER BY created_at, id`, [session])).rows.map((r) => r.note);
  /** A caller's call.initiated (a new session, or a repeat of `call`'s under a new event id). */
  const initiated = (call: TestCall) => voice.callerEvent(call, 'call.initiated', { direction: 'incoming', state: 'parked' }, { id: randomUUID() });
  const newCall = (): TestCall => {
    const call = { session: randomUUID(), caller: `v3:caller-${randomUUID()}`, from: CALLER, to: RING };
    voice.telnyx.sessionFor = () => call.session;
    return call;
  };
  /** The id of the latest stored event of `kind` of a session, once `count` are stored. */
  const lastStored = async (session: string, kind: string, count = 1) => {
    const { rows } = await voice.db.pool.query<{ id: string }>(`SELECT id FROM carrier_events WHERE normalized->>'callSessionId' = $1 AND kind = $2 ORDER BY created_at DESC, id DESC`, [session, kind]);
    return rows.length >= count ? rows[0].id : undefined;
  };
  /** Another worker's run of a stored event (as from Redis), in a transaction of its own. */
  const runElsewhere = (eventId: string | undefined) => {
    const run = get(UnitOfWork).run((tx) => get(CarrierEventProcessor).process(tx, eventId!));
    run.catch(() => undefined);
    return run;
  };
  /** The start statement of `session`, held after it inserted the call (its turn, its key's lock and its rows held). */
  const startHeld = (session: string): PausePointSpec => ({ table: 'calls', on: 'INSERT', when: `NEW.carrier_call_id = '${session}'` });

  /**
   * The call's start in sets held after its insert, while the competitor `deliver` stores the
   * `count`th event of `kind` of the session; that event's run here and another worker's (as
   * from Redis) wait for the call's turn; `whileWaiting` checks what is written meanwhile. Then
   * the start commits and the competitor decides on what it left.
   */
  async function competingWithHeldStart(call: TestCall, kind: string, count: number, deliver: () => Promise<number>, whileWaiting: () => Promise<void> = async () => undefined): Promise<void> {
    const pause = await pausePoint(voice.db.url, startHeld(call.session));
    try {
      await pause.hold();
      expect(await initiated(call)).toBe(200);
      await pause.waitUntilPaused();
      expect(await setStatementsWaiting()).toBe(1);
      expect(await deliver()).toBe(200);
      const elsewhere = runElsewhere(await waitFor(() => lastStored(call.session, kind, count), Boolean, { what: `the ${kind} stored` }));
      await waitFor(transactionsWaiting, (n) => n >= 1, { what: `the ${kind} waiting for the call's turn` });
      await whileWaiting();
      await pause.release();
      expect(['processed', 'already_processed']).toContain((await elsewhere).outcome);
    } finally {
      await pause.remove();
    }
  }

  it('a new call starts in one statement after one read: the call, its first leg and dial, call.initiated and the timeline entry, no transaction', async () => {
    const call = newCall();
    const { texts } = await captured(async () => {
      expect(await initiated(call)).toBe(200);
      await voice.dialOfTarget(await voice.callId(call), 0);
      await voice.settled();
    });
    expect(startStatements(texts)).toHaveLength(1);
    expect(transactionTexts(texts)).toEqual([]);
    // The first dial is sent from the commands the statement wrote, not from a read of its job's row.
    expect(texts.filter((text) => text.startsWith('SELECT data FROM outbox_jobs'))).toEqual([]);
    const [callId] = await callsOf(call.session);
    expect(await voice.call(callId)).toMatchObject({ status: 'ringing', direction: 'inbound', from: CALLER, to: RING, transcribe: true, ring_plan: { next: 1 } });
    expect(await timeline(callId)).toEqual(['call.initiated:applied']);
    expect(await voice.events('call.initiated', callId)).toBe(1);
    const [dial] = voice.telnyx.dials(callId);
    expect(dial.body).toMatchObject({ to: A, from: CALLER, link_to: call.caller, timeout_secs: 25 });
    expect(dial.clientState).toEqual({ call_id: callId, target: 0, attempt: 1 });
  });

  it('call.initiated is announced with the same payload, and the call, its leg, its dial and its timeline are the same, as on the transaction path', async () => {
    const inSets = newCall();
    expect(await initiated(inSets)).toBe(200);
    const setCallId = await voice.callId(inSets);
    await voice.dialOfTarget(setCallId, 0);
    await voice.settled();
    // The same event, decided by its transaction alone (no set handler for the kind).
    const undo = get(CarrierEventHandlers).override('call.initiated', get(CallCarrierEvents).initiated.bind(get(CallCarrierEvents)));
    let txCallId: string;
    try {
      const inTransaction = newCall();
      const { texts } = await captured(async () => {
        expect(await initiated(inTransaction)).toBe(200);
        txCallId = await voice.callId(inTransaction);
        await voice.dialOfTarget(txCallId, 0);
        await voice.settled();
      });
      expect(startStatements(texts)).toEqual([]);
    } finally {
      undo();
    }
    const ids = (text: string, callId: string) => text.replaceAll(callId, 'CALL').replace(/leg_[0-9a-z]{26}/g, 'LEG').replace(/v3:caller-[0-9a-f-]{36}/g, 'CALLER').replace(/v3:leg-[0-9a-f-]{36}/g, 'LEG_CONTROL').replace(/"[0-9a-f-]{36}"/g, '"SESSION"');
    const payload = async (callId: string) => {
      const { rows } = await voice.db.pool.query<{ payload: object; created: string; at: string }>(
        `SELECT payload, payload->>'created_at' AS created, to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at
           FROM outbound_events e JOIN calls c ON c.id = e.payload->>'id' WHERE e.type = 'call.initiated' AND c.id = $1`,
        [callId],
      );
      expect(rows).toHaveLength(1);
      // created_at is the call's own (its id's time).
      expect(rows[0].created).toBe(rows[0].at);
      return ids(JSON.stringify({ ...rows[0].payload, created_at: 'T' }), callId);
    };
    expect(await payload(setCallId)).toBe(await payload(txCallId!));
    const row = async (callId: string) => {
      const { rows } = await voice.db.pool.query(
        `SELECT direction, from_number, to_number, status, carrier, caller_control_id, ring_plan, answered_leg, ended_at, transcribe, duration_seconds, billable_minutes, hangup_cause,
                (SELECT jsonb_agg(jsonb_build_object('t', target_index, 'a', attempt, 'to', to_number, 's', status, 'c', control_id)) FROM call_legs WHERE call_id = c.id) AS legs
           FROM calls c WHERE id = $1`,
        [callId],
      );
      return ids(JSON.stringify(rows[0]), callId);
    };
    expect(await row(setCallId)).toBe(await row(txCallId!));
    const dial = (callId: string) => ids(JSON.stringify({ ...voice.telnyx.dials(callId)[0].body, client_state: voice.telnyx.dials(callId)[0].clientState }), callId);
    expect(dial(setCallId)).toBe(dial(txCallId!));
    const job = async (callId: string) => ids(JSON.stringify((await voice.db.pool.query(`SELECT data FROM outbox_jobs WHERE name = 'call-commands' AND data->>'callId' = $1`, [callId])).rows), callId);
    expect(await job(setCallId)).toBe(await job(txCallId!));
    expect(await timeline(setCallId)).toEqual(await timeline(txCallId!));
  });

  it('a repeat under another event id is decided in sets: one probe, `duplicate`, nothing started twice', async () => {
    const call = newCall();
    expect(await initiated(call)).toBe(200);
    const callId = await voice.callId(call);
    await voice.dialOfTarget(callId, 0);
    await voice.settled();
    const { texts } = await captured(async () => {
      expect(await initiated(call)).toBe(200);
      await voice.settled();
    });
    expect(startStatements(texts)).toHaveLength(1);
    expect(transactionTexts(texts)).toEqual([]);
    expect(await callsOf(call.session)).toEqual([callId]);
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.initiated:duplicate']);
    expect(await noteOf(call.session)).toEqual([null, 'duplicate call.initiated']);
    expect(await voice.events('call.initiated', callId)).toBe(1);
    expect(voice.telnyx.dials(callId)).toHaveLength(1);
  });

  it("a repeat after a partition boundary, its call before it: the start's guard (call_twin) finds the call in the other partition, whose unique index the new one's would not meet", async () => {
    const { before, after, passed } = await boundaryIn(voice.db.pool, 'calls', 1000);
    const call = newCall();
    expect(await initiated(call)).toBe(200);
    const callId = await voice.callId(call);
    await voice.dialOfTarget(callId, 0);
    await voice.settled();
    const partition = async () => (await voice.db.pool.query(`SELECT tableoid::regclass::text AS part FROM calls WHERE id = $1`, [callId])).rows[0].part;
    expect(await partition()).toBe(before);
    await passed();
    expect(await initiated(call)).toBe(200);
    await voice.settled();
    expect(await callsOf(call.session)).toEqual([callId]);
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.initiated:duplicate']);
    expect(voice.telnyx.dials(callId)).toHaveLength(1);
    expect(after).not.toBe(before);
  });

  it("two call.initiated of one session under two event ids, the first's statement held after its insert: the second waits for the call's turn, then is a duplicate", async () => {
    const call = newCall();
    // The twin, re-signed under a new event id. Nothing of its is written while the first holds the turn.
    await competingWithHeldStart(call, 'call.initiated', 2, () => initiated(call), async () =>
      expect(await voice.db.count(`SELECT count(*) FROM call_timeline WHERE event_type = 'call.initiated' AND call_id IN (SELECT id FROM calls WHERE carrier_call_id = $1)`, [call.session])).toBe(0),
    );
    const [callId, ...others] = await callsOf(call.session);
    expect(others).toEqual([]);
    await voice.dialOfTarget(callId, 0);
    await voice.settled();
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.initiated:duplicate']);
    expect(await voice.events('call.initiated', callId)).toBe(1);
    expect(voice.telnyx.distinct('dial', (c) => c.clientState?.call_id === callId)).toHaveLength(1);
    expect(await voice.db.count(`SELECT count(*) FROM call_legs WHERE call_id = $1`, [callId])).toBe(1);
  });

  it("a start of the same session held uncommitted by a transaction that does not take the call's turn: the statement waits on the session key (call_twin), then finds it and records a duplicate", async () => {
    const call = newCall();
    const { account_id: accountId } = (await voice.db.pool.query(`SELECT account_id FROM phone_numbers WHERE phone_number = $1`, [RING])).rows[0];
    const pause = await pausePoint(voice.db.url, startHeld(call.session));
    let twin: Promise<unknown> | undefined;
    try {
      await pause.hold();
      twin = get(UnitOfWork).run((tx) =>
        get(CallTransitions).create(tx, { accountId, direction: 'inbound', from: CALLER, to: RING, carrier: 'telnyx', carrierCallId: call.session, callerControlId: call.caller, transcribe: false, status: 'ringing' }),
      );
      twin.catch(() => undefined);
      await pause.waitUntilPaused();
      expect(await initiated(call)).toBe(200);
      // The statement holds the call's turn (the twin took none) and waits for the session's key.
      await waitFor(setStatementsWaiting, (n) => n === 1, { what: "the start statement waiting on the session's key" });
      await pause.release();
      expect(await twin).toBeDefined();
    } finally {
      await pause.remove();
    }
    await voice.settled();
    const [callId, ...others] = await callsOf(call.session);
    expect(others).toEqual([]);
    expect(await timeline(callId)).toEqual(['call.initiated:duplicate']);
    expect(await noteOf(call.session)).toEqual(['duplicate call.initiated']);
    expect(voice.telnyx.dials(callId)).toEqual([]);
    expect(await voice.events('call.initiated', callId)).toBe(0);
  });

  it("the start racing the caller's hangup: the hangup waits for the call's turn the held start has, then ends the call missed; no leg is left up", async () => {
    const call = newCall();
    await competingWithHeldStart(call, 'call.hangup', 1, () => voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' }));
    const [callId] = await callsOf(call.session);
    await voice.callUntil(callId, (c) => c.status === 'missed', 'the call missed');
    await voice.settled();
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.hangup:applied']);
    expect(await voice.events('call.initiated', callId)).toBe(1);
    expect(await voice.events('call.missed', callId)).toBe(1);
    // No leg is left up: the first leg, never named by the carrier, ended with the call; one the
    // carrier named (its dial went out, sent right after the start's commit, before the end) is hung up.
    const leg = (await voice.db.pool.query(`SELECT ended_at, control_id FROM call_legs WHERE call_id = $1`, [callId])).rows[0];
    if (leg.control_id === null) expect(leg.ended_at).not.toBeNull();
    for (const dial of voice.telnyx.dials(callId)) await voice.telnyx.next((c) => c.action === 'hangup' && c.controlId === dial.controlId);
  });

  it("the number's settings changed after the read the statement decided from: it starts nothing, and the transaction starts the call on the settings as they are", async () => {
    const numbers = get(PhoneNumbers);
    const read = numbers.voiceRoutes.bind(numbers);
    const numberId = (await voice.db.pool.query(`SELECT id FROM phone_numbers WHERE phone_number = $1`, [RING])).rows[0].id;
    const changed = { ring_plan: { targets: [{ to: B, timeout_secs: 30 }], fallback: { action: 'hangup' } }, transcribe: false };
    // The change commits between the read and the statement.
    const spy = jest.spyOn(numbers, 'voiceRoutes').mockImplementationOnce(async (phoneNumbers) => {
      const routes = await read(phoneNumbers);
      expect((await voice.customer.request('PATCH', `/v2/phone_numbers/${numberId}`, { voice: changed })).status).toBe(200);
      return routes;
    });
    const call = newCall();
    try {
      const { texts } = await captured(async () => {
        expect(await initiated(call)).toBe(200);
        await voice.dialOfTarget(await voice.callId(call), 0);
        await voice.settled();
      });
      expect(spy).toHaveBeenCalled();
      // The statement ran and left the event to its transaction.
      expect(startStatements(texts)).toHaveLength(1);
      expect(transactionTexts(texts).length).toBeGreaterThan(0);
    } finally {
      spy.mockRestore();
      await voice.customer.request('PATCH', `/v2/phone_numbers/${numberId}`, { voice: PLAN });
    }
    const callId = await voice.callId(call);
    expect(await callsOf(call.session)).toEqual([callId]);
    expect(voice.telnyx.dials(callId).map((d) => [d.body.to, d.body.timeout_secs])).toEqual([[B, 30]]);
    expect(await voice.call(callId)).toMatchObject({ transcribe: false, ring_plan: { targets: [{ to: B, timeout_secs: 30 }] } });
    expect(await timeline(callId)).toEqual(['call.initiated:applied']);
  });

  it('a missed call (no voice settings) and a number nobody owns are left to the transaction, as before', async () => {
    const OFF = '+15550320002';
    await voice.number(OFF);
    const missed = { ...newCall(), to: OFF };
    const nobodys = { ...newCall(), to: '+15550320003' };
    expect(await initiated(missed)).toBe(200);
    expect(await initiated(nobodys)).toBe(200);
    await voice.settled();
    const [missedId] = await callsOf(missed.session);
    expect(await voice.call(missedId)).toMatchObject({ status: 'missed', hangup_cause: 'no_voice_settings' });
    expect(await timeline(missedId)).toEqual(['call.initiated:applied']);
    expect(await voice.events('call.missed', missedId)).toBe(1);
    expect(await callsOf(nobodys.session)).toEqual([]);
    await voice.telnyx.next((c) => c.action === 'hangup' && c.controlId === missed.caller);
    await voice.telnyx.next((c) => c.action === 'hangup' && c.controlId === nobodys.caller);
  });
});
