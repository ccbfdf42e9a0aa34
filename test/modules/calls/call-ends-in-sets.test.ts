import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { CallCarrierEvents } from '../../../src/modules/calls/call-carrier-events.js';
import { CallFlow } from '../../../src/modules/calls/call-flow.js';
import { CallTransitions } from '../../../src/modules/calls/call-transitions.js';
import { CarrierEventHandlers } from '../../../src/modules/ingest/carrier-event-handlers.js';
import { CarrierEventProcessor } from '../../../src/modules/ingest/carrier-event-processor.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { captured } from '../../support/captured-statements.js';
import { pausePoint, type PausePointSpec } from '../../support/pause.js';
import type { ReceivedCommand } from '../../support/fake-call-control.js';
import { VoicePipeline, type TestCall } from '../../support/voice-pipeline.js';
import { waitFor } from '../../support/wait.js';

const CALLER = '+15557790901';
const A = '+15557790911';
const RING = '+15550310091';
const T0 = Date.parse('2026-12-07T10:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

/**
 * A call's end decided in sets (CallEndsInSets): the hangup that ends a joined call, for many
 * calls in one statement, with what CallFlow.endCall writes in a transaction. Each race holds one
 * side on a lock the test owns (pause points) and checks the guard decides on the rows as the
 * other left them.
 */
describe('call ends decided in sets', () => {
  let voice: VoicePipeline;

  beforeAll(async () => {
    voice = await VoicePipeline.start();
    await voice.number(RING, { ring_plan: { targets: [{ to: A }], fallback: { action: 'hangup' } } });
  });
  afterAll(async () => {
    await voice.stop();
  });

  const leg = async (callId: string) =>
    (await voice.db.pool.query<{ id: string; status: string; ended_at: Date | null; hangup_cause: string | null }>(`SELECT id, status, ended_at, hangup_cause FROM call_legs WHERE call_id = $1 AND target_index = 0`, [callId])).rows[0];
  const timeline = async (callId: string) => ((await voice.customer.get(`/v2/calls/${callId}/timeline`)).body.data as { event_type: string; outcome: string }[]).map((e) => `${e.event_type}:${e.outcome}`);
  const row = async (callId: string) => (await voice.db.pool.query(`SELECT status, ended_at, bridged_at, billable_minutes FROM calls WHERE id = $1`, [callId])).rows[0];
  /** The set statements that end calls (their hangup guard's CTE). */
  const endStatements = (texts: string[]) => texts.filter((text) => text.startsWith('WITH evt_input') && text.includes('calls_ended AS'));
  /** The transaction path's own statements for a hangup: its lock of the call by session or leg, and CallTransitions.end. */
  const transactionEnds = (texts: string[]) => texts.filter((text) => !text.startsWith('WITH evt_input') && (text.startsWith('UPDATE calls c SET status') || text.includes('WITH use_fact')));

  /** A call answered by target 0 at T0 + 2 s and joined (the carrier's bridge), the caller's hangup not yet come. */
  async function joined({ answered = true, bridged = true } = {}): Promise<{ call: TestCall; callId: string; dial: ReceivedCommand }> {
    const call = await voice.incoming(CALLER, RING);
    const callId = await voice.callId(call);
    const dial = await voice.dial(callId);
    await waitFor(async () => (await voice.db.pool.query(`SELECT control_id FROM call_legs WHERE call_id = $1`, [callId])).rows[0]?.control_id, (id) => id === dial.controlId, { what: 'the leg named' });
    if (answered) {
      expect(await voice.legEvent(call, dial, 'call.answered', {}, { occurredAt: at(2) })).toBe(200);
      await voice.telnyx.next((c) => c.action === 'bridge' && c.controlId === call.caller);
    }
    if (bridged) {
      expect(await voice.legEvent(call, dial, 'call.bridged', {}, { occurredAt: at(3) })).toBe(200);
      await waitFor(() => row(callId), (r) => r.bridged_at !== null, { what: 'the call joined' });
    }
    await voice.settled();
    return { call, callId, dial };
  }
  const callerHangup = (call: TestCall, id?: string) => voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'caller' }, { occurredAt: at(97.6), id });
  const legHangup = (call: TestCall, dial: ReceivedCommand) => voice.legEvent(call, dial, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'callee' }, { occurredAt: at(97.6) });

  /** What a call's end wrote: its call.completed payload (and call.answered's), its usage cause and its hangups' job, each with the call's own ids and clock-made times named generically. */
  async function whatEnded(callId: string): Promise<unknown> {
    const { rows } = await voice.db.pool.query(`SELECT type, payload FROM outbound_events WHERE type IN ('call.answered', 'call.completed') AND payload->>'id' = $1`, [callId]);
    const [payload, answered] = ['call.completed', 'call.answered'].map((type) => rows.find((r) => r.type === type)?.payload);
    const [cause] = (await voice.db.pool.query(`SELECT cause FROM usage_records WHERE kind = 'call_minutes' AND resource_id = $1`, [callId])).rows.map((r) => r.cause);
    const [hangups] = (await voice.db.pool.query(`SELECT data FROM outbox_jobs WHERE job_id = $1`, [`cmd-${callId}-ended`])).rows.map((r) => r.data);
    const names = new Map<string, string>([[callId, 'CALL'], [payload.carrier_call_id, 'SESSION']]);
    // The clock-made times by their field: a call started in sets was created and first dialed by one statement (one now()).
    const clockFields: Record<string, string> = { created_at: 'CREATED', dialed_at: 'DIALED' };
    for (const l of payload.legs) names.set(l.id, `LEG${l.target_index}`);
    for (const e of cause.carrier_events) names.set(e.id, 'EVENT').set(e.carrier_event_id, 'CARRIER_EVENT');
    for (const c of hangups?.commands ?? []) names.set(c.controlId, 'CONTROL');
    return JSON.parse(JSON.stringify({ payload, answered, cause, hangups }), (key, value) => (key in clockFields && typeof value === 'string' ? clockFields[key] : typeof value === 'string' && names.has(value) ? names.get(value) : typeof value === 'string' ? [...names].reduce((s, [from, to]) => s.split(from).join(to), value) : value));
  }

  /** Runs `act` with call.hangup decided by its transaction only (no set statement), as before CallEndsInSets. */
  async function inTransactionOnly(act: () => Promise<void>): Promise<void> {
    const events = voice.app.app.get(CallCarrierEvents);
    const undo = voice.app.app.get(CarrierEventHandlers).override('call.hangup', (event, tx, context) => events.hangup(event, tx, context));
    try {
      await act();
    } finally {
      undo();
    }
  }

  it("the caller's hangup of a joined call is one set statement: the call completed, its minutes, call.completed, the leg hung up, no transaction", async () => {
    const { call, callId, dial } = await joined();
    const { texts } = await captured(async () => {
      expect(await callerHangup(call)).toBe(200);
      await voice.telnyx.next((c) => c.action === 'hangup' && c.controlId === dial.controlId);
      await voice.settled();
    });
    expect(endStatements(texts)).toHaveLength(1);
    expect(transactionEnds(texts)).toEqual([]);
    // No run of the event in a transaction (its first statement reads the event).
    expect(texts.filter((text) => text.startsWith('SELECT e.normalized'))).toEqual([]);
    expect(await row(callId)).toMatchObject({ status: 'completed', billable_minutes: 2 });
    expect(await voice.usageRows(callId)).toBe(1);
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(await voice.events('call.answered', callId)).toBe(1);
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.answered:applied', 'call.bridged:applied', 'call.hangup:applied']);
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === dial.controlId)).toHaveLength(1);
    expect(voice.telnyx.of('hangup', (c) => c.controlId === call.caller)).toEqual([]);
  });

  it('writes what the transaction writes: call.completed, the usage cause and the hangups alike, ended by the caller or by the answered leg', async () => {
    for (const [by, bridged] of [['caller', true], ['leg', true], ['caller', false]] as const) {
      const end = ({ call, dial }: { call: TestCall; dial: ReceivedCommand }) => (by === 'caller' ? callerHangup(call) : legHangup(call, dial));
      const inSets = await joined({ bridged });
      const { texts } = await captured(async () => {
        expect(await end(inSets)).toBe(200);
        await voice.settled();
      });
      expect(endStatements(texts)).toHaveLength(1);
      expect(transactionEnds(texts)).toEqual([]);
      const inTransaction = await joined({ bridged });
      await inTransactionOnly(async () => {
        expect(await end(inTransaction)).toBe(200);
        await voice.settled();
      });
      expect(await row(inTransaction.callId)).toMatchObject({ status: 'completed' });
      const expected = await whatEnded(inTransaction.callId);
      expect(await whatEnded(inSets.callId)).toEqual(expected);
      expect(expected).toMatchObject({ payload: { status: 'completed', duration_seconds: 96, billable_minutes: 2, legs: [{ status: by === 'leg' ? 'ended' : 'answered' }] },
        // Announced at the join, or (never reported joined) by the end, with the call as it ended.
        answered: { status: bridged ? 'in_progress' : 'completed' },
        hangups: { commands: [{ action: 'hangup', commandId: by === 'leg' ? 'CALL-hangup-caller' : 'LEG0-hangup', controlId: 'CONTROL' }] } });
      expect(await timeline(inSets.callId)).toEqual(await timeline(inTransaction.callId));
    }
  });

  /** Another worker's run of a stored event (as from Redis), in a transaction of its own. */
  const runElsewhere = (eventId: string) => {
    const run = voice.app.app.get(UnitOfWork).run((tx) => voice.app.app.get(CarrierEventProcessor).process(tx, eventId));
    run.catch(() => undefined);
    return run;
  };
  const storedHangups = async (session: string) =>
    (await voice.db.pool.query<{ id: string }>(`SELECT id FROM carrier_events WHERE normalized->>'callSessionId' = $1 AND kind = 'call.hangup' ORDER BY created_at DESC, id DESC`, [session])).rows.map((r) => r.id);
  const setStatementsWaiting = (waitEvent: string) =>
    voice.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = $1 AND query LIKE 'WITH evt_input%'`, [waitEvent]);
  const transactionsWaitingForTurns = () =>
    voice.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory' AND query NOT LIKE 'WITH evt_input%'`);

  /** Holds what `spec` pauses (set off by `start`) while `whilePaused` runs; then lets it go and runs what that returned. */
  async function whileHeld(spec: PausePointSpec, start: () => Promise<unknown>, whilePaused: () => Promise<(() => Promise<void>) | void>): Promise<void> {
    const pause = await pausePoint(voice.db.url, spec);
    try {
      await pause.hold();
      const started = start();
      await pause.waitUntilPaused();
      const afterRelease = await whilePaused();
      await pause.release();
      await started;
      await afterRelease?.();
    } finally {
      await pause.remove();
    }
  }
  /** The set statement held after its hangup guard ended the call (the call's turn and row held). */
  const endHeld = (callId: string): PausePointSpec => ({ table: 'calls', on: 'UPDATE', when: `NEW.id = '${callId}' AND NEW.ended_at IS NOT NULL` });

  /** While the set statement is held: another event of the call (`deliver` stores it), run elsewhere, waits for the call's turn. */
  async function racedElsewhere(session: string, deliver: () => Promise<number>): Promise<() => Promise<void>> {
    expect(await setStatementsWaiting('advisory')).toBe(1);
    expect(await deliver()).toBe(200);
    const stored = await waitFor(() => storedHangups(session), (ids) => ids.length === 2, { what: 'the second hangup stored' });
    const elsewhere = runElsewhere(stored[0]);
    await waitFor(transactionsWaitingForTurns, (n) => n === 1, { what: "the second hangup waiting for the call's turn" });
    return async () => expect(['processed', 'already_processed']).toContain((await elsewhere).outcome);
  }

  it("the caller's hangup under a new event id while the end in sets holds its turn: decided after it, a duplicate; one call.completed, one usage row", async () => {
    const { call, callId, dial } = await joined();
    await whileHeld(
      endHeld(callId),
      async () => expect(await callerHangup(call)).toBe(200),
      () => racedElsewhere(call.session, () => callerHangup(call, randomUUID())),
    );
    await voice.settled();
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.answered:applied', 'call.bridged:applied', 'call.hangup:applied', 'call.hangup:duplicate']);
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(await voice.usageRows(callId)).toBe(1);
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === dial.controlId)).toHaveLength(1);
  });

  it("the answered leg's hangup while the caller's end in sets holds its turn: decided after it, the leg ended by its own hangup, a duplicate; the caller not hung up", async () => {
    const { call, callId, dial } = await joined();
    await whileHeld(
      endHeld(callId),
      async () => expect(await callerHangup(call)).toBe(200),
      () => racedElsewhere(call.session, () => legHangup(call, dial)),
    );
    await voice.settled();
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.answered:applied', 'call.bridged:applied', 'call.hangup:applied', 'call.hangup:duplicate']);
    expect(await leg(callId)).toMatchObject({ status: 'ended', hangup_cause: 'normal_clearing' });
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(await voice.usageRows(callId)).toBe(1);
    expect(voice.telnyx.of('hangup', (c) => c.controlId === call.caller)).toEqual([]);
  });

  /**
   * A competitor ends the call in a transaction that does not take the call's turn (as a refused
   * dial's write-off does), held once it has; meanwhile `hangup` is delivered and its set statement
   * waits for the call row. Returns once the competitor committed (its end stood) and all settled.
   */
  async function hangupWhileCompetitorEnds(callId: string, hangup: () => Promise<number>): Promise<void> {
    let ending: Promise<boolean> | undefined;
    const startEnding = async () => {
      ending = voice.app.app.get(UnitOfWork).run(async (tx) => {
        const locked = (await voice.app.app.get(CallTransitions).lockById(tx, callId))!;
        return voice.app.app.get(CallFlow).endCall(tx, locked, at(50), 'competitor', 'caller');
      });
      ending.catch(() => undefined);
    };
    await whileHeld(
      endHeld(callId),
      startEnding,
      async () => {
        const { texts } = await captured(async () => {
          expect(await hangup()).toBe(200);
          await waitFor(() => setStatementsWaiting('transactionid'), (n) => n === 1, { what: 'the set statement waiting for the call row' });
        });
        expect(endStatements(texts)).toHaveLength(1);
      },
    );
    expect(await ending).toBe(true);
    await voice.settled();
  }

  it("the caller's hangup in sets waits for the call row a competitor holds while it ends the call, and finds it ended: a duplicate, nothing ended or billed twice", async () => {
    const { call, callId } = await joined();
    await hangupWhileCompetitorEnds(callId, () => callerHangup(call));
    // Decided on the row as the competitor left it: its end stands, this hangup is a repeat.
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.answered:applied', 'call.bridged:applied', 'call.hangup:duplicate']);
    expect((await row(callId)).ended_at.toISOString()).toBe(at(50));
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(await voice.usageRows(callId)).toBe(1);
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE normalized->>'callSessionId' = $1 AND kind = 'call.hangup' AND note = 'duplicate'`, [call.session])).toBe(1);
  });

  it("the answered leg's hangup in sets waits for the call row a competitor holds while it ends the call, and finds it ended: a duplicate, nothing ended or billed twice", async () => {
    const { call, callId, dial } = await joined();
    await hangupWhileCompetitorEnds(callId, () => legHangup(call, dial));
    // Decided on the row as the competitor left it: its end stands, the leg's hangup is a repeat.
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.answered:applied', 'call.bridged:applied', 'call.hangup:duplicate']);
    expect((await row(callId)).ended_at.toISOString()).toBe(at(50));
    expect((await leg(callId)).status).toBe('ended');
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(await voice.usageRows(callId)).toBe(1);
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE normalized->>'callSessionId' = $1 AND kind = 'call.hangup' AND note = 'duplicate'`, [call.session])).toBe(1);
  });

  it("the caller's hangup in sets waits for the call row the join timeout holds as it writes the answer off, and decides on the ringing call it left: not its end to decide; the transaction ends it missed", async () => {
    const { call, callId } = await joined({ bridged: false });
    const legId = (await leg(callId)).id;
    // The join timeout's write-off (in_progress → ringing), held after its UPDATE of the call.
    let writingOff: Promise<unknown> | undefined;
    const startWriteOff = async () => {
      writingOff = voice.app.app.get(UnitOfWork).run((tx) => voice.app.app.get(CallTransitions).writeOffUnjoinedAnswer(tx, callId, legId));
      writingOff.catch(() => undefined);
    };
    await whileHeld({ table: 'calls', on: 'UPDATE', when: `NEW.id = '${callId}' AND NEW.status = 'ringing'` }, startWriteOff, async () => {
      expect(await callerHangup(call)).toBe(200);
      await waitFor(() => setStatementsWaiting('transactionid'), (n) => n === 1, { what: 'the set statement waiting for the call row' });
    });
    expect(await writingOff).toBeTruthy();
    await voice.settled();
    // The row re-read after the wait rings: the set statement left it, its transaction ended it missed.
    expect(await row(callId)).toMatchObject({ status: 'missed', billable_minutes: 0 });
    expect(await voice.events('call.missed', callId)).toBe(1);
    expect(await voice.events('call.completed', callId)).toBe(0);
    expect(await voice.usageRows(callId)).toBe(0);
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.answered:applied', 'call.hangup:applied']);
  });

  it("a repeat of the caller's hangup on an ended call is one probe in sets: a duplicate, nothing written but its timeline entry", async () => {
    const { call, callId } = await joined();
    expect(await callerHangup(call)).toBe(200);
    await voice.settled();
    const { texts } = await captured(async () => {
      expect(await callerHangup(call, randomUUID())).toBe(200);
      await voice.settled();
    });
    expect(endStatements(texts)).toHaveLength(1);
    expect(transactionEnds(texts)).toEqual([]);
    // No run of the event in a transaction (its first statement reads the event).
    expect(texts.filter((text) => text.startsWith('SELECT e.normalized'))).toEqual([]);
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.answered:applied', 'call.bridged:applied', 'call.hangup:applied', 'call.hangup:duplicate']);
    expect(await voice.events('call.completed', callId)).toBe(1);
    expect(await voice.usageRows(callId)).toBe(1);
  });

  it("the caller's hangup of a call answered but never reported joined ends it in sets, announcing call.answered before call.completed", async () => {
    const { call, callId } = await joined({ bridged: false });
    const { texts } = await captured(async () => {
      expect(await callerHangup(call)).toBe(200);
      await voice.settled();
    });
    expect(endStatements(texts)).toHaveLength(1);
    expect(transactionEnds(texts)).toEqual([]);
    expect(await row(callId)).toMatchObject({ status: 'completed', bridged_at: null });
    const { rows } = await voice.db.pool.query(`SELECT type FROM outbound_events WHERE payload->>'id' = $1 AND type IN ('call.answered', 'call.completed') ORDER BY id`, [callId]);
    expect(rows.map((r) => r.type)).toEqual(['call.answered', 'call.completed']);
    expect(await voice.usageRows(callId)).toBe(1);
  });

  it("the caller's hangup of a call still ringing is left to the transaction: missed, call.missed, nothing billed", async () => {
    const { call, callId } = await joined({ answered: false, bridged: false });
    const { texts } = await captured(async () => {
      expect(await callerHangup(call)).toBe(200);
      await voice.settled();
    });
    // Offered to the set statement, not ready there (not answered): its transaction ends the call.
    expect(endStatements(texts)).toHaveLength(1);
    expect(transactionEnds(texts).length).toBeGreaterThan(0);
    expect(await row(callId)).toMatchObject({ status: 'missed', billable_minutes: 0 });
    expect(await voice.events('call.missed', callId)).toBe(1);
    expect(await voice.events('call.completed', callId)).toBe(0);
    expect(await voice.usageRows(callId)).toBe(0);
  });
});
