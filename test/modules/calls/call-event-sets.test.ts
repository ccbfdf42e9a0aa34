import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { RelayWakeup } from '../../../src/platform/outbox/relay-wakeup.js';
import { CallFlow } from '../../../src/modules/calls/call-flow.js';
import { CallTransitions } from '../../../src/modules/calls/call-transitions.js';
import { CarrierEventProcessor } from '../../../src/modules/ingest/carrier-event-processor.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { captured } from '../../support/captured-statements.js';
import { pausePoint, type PausePointSpec } from '../../support/pause.js';
import type { ReceivedCommand } from '../../support/fake-call-control.js';
import { VoicePipeline, type TestCall } from '../../support/voice-pipeline.js';
import { waitFor } from '../../support/wait.js';

const CALLER = '+15557790701';
const A = '+15557790801';
const B = '+15557790802';
const RING = '+15550310001';
const noAnswer = { hangup_cause: 'timeout', sip_hangup_cause: '487' };

/**
 * Call events decided in sets (CallEventSets): one statement for many calls' events, under each
 * call's turn and its rows' locks. Each case interleaves that statement with a competitor on
 * purpose, held by a lock the test owns (pause points), and checks that the decision is the one
 * the guards see on the rows as the competitor left them.
 */
/** What a held test does once the statement it held is let go. */
type AfterRelease = () => Promise<void>;

describe('call events decided in sets, interleaved', () => {
  let voice: VoicePipeline;

  beforeAll(async () => {
    voice = await VoicePipeline.start();
    await voice.number(RING, { ring_plan: { targets: [{ to: A }, { to: B }], fallback: { action: 'hangup' } } });
  });
  afterAll(async () => {
    await voice.stop();
  });

  async function ringing(): Promise<{ call: TestCall; callId: string }> {
    const call = await voice.incoming(CALLER, RING);
    return { call, callId: await voice.callId(call) };
  }
  /** Statements deciding call events in sets (OneStatementBatches: they start with the input rows) waiting on a lock of this kind. */
  const setStatementsWaiting = (waitEvent: string) => () =>
    voice.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = $1 AND query LIKE 'WITH evt_input%'`, [waitEvent]);
  const timeline = async (callId: string) => ((await voice.customer.get(`/v2/calls/${callId}/timeline`)).body.data as { event_type: string; outcome: string }[]).map((e) => `${e.event_type}:${e.outcome}`);
  const leg = async (callId: string, target: number) =>
    (await voice.db.pool.query<{ id: string; status: string; control_id: string | null; ended_at: Date | null }>(`SELECT id, status, control_id, ended_at FROM call_legs WHERE call_id = $1 AND target_index = $2`, [callId, target])).rows[0];

  /** A ringing call whose first dial the carrier answered, naming the physical leg: that leg's events are ours, and offered to the set statements. */
  async function dialed(): Promise<{ call: TestCall; callId: string; first: ReceivedCommand }> {
    const { call, callId } = await ringing();
    const first = await voice.dial(callId);
    await waitFor(() => leg(callId, 0), (l) => l.control_id === first.controlId, { what: 'the leg named by the dial\'s answer' });
    return { call, callId, first };
  }

  /**
   * Holds the statements that make a change (`spec`, a pause point) while the test plays the
   * competitor: `start` sets off what pauses there; once it is paused, `whilePaused` runs, and
   * what it returns runs once the held statement is let go.
   */
  async function whileHeld(spec: PausePointSpec, start: () => Promise<void>, whilePaused: () => Promise<AfterRelease | void>): Promise<void> {
    const pause = await pausePoint(voice.db.url, spec);
    try {
      await pause.hold();
      await start();
      await pause.waitUntilPaused();
      const afterRelease = await whilePaused();
      await pause.release();
      await afterRelease?.();
    } finally {
      await pause.remove();
    }
  }

  /**
   * The competitor: the call ends in a transaction that does not take the call's turn (as a
   * refused dial's write-off does), held after its guarded UPDATE of the call row while `during`
   * runs; then it commits.
   */
  async function whileCallEndingHeld(callId: string, during: () => Promise<void>): Promise<void> {
    let ending: Promise<boolean> | undefined;
    const start = async () => {
      ending = voice.app.app.get(UnitOfWork).run(async (tx) => {
        const locked = (await voice.app.app.get(CallTransitions).lockById(tx, callId))!;
        return voice.app.app.get(CallFlow).endCall(tx, locked, new Date().toISOString(), 'normal_clearing', 'caller');
      });
      ending.catch(() => undefined);
    };
    await whileHeld({ table: 'calls', on: 'UPDATE', when: `NEW.id = '${callId}' AND NEW.ended_at IS NOT NULL` }, start, async () => {
      await during();
      return async () => expect(await ending).toBe(true);
    });
  }

  it("a leg's report waits for the call row a competitor holds, and decides on the call it left: ended, so the leg is stale, not ringing", async () => {
    const { call, callId, first: dial } = await dialed();
    await whileCallEndingHeld(callId, async () => {
      expect(await voice.legEvent(call, dial, 'call.initiated')).toBe(200);
      // The set statement (not a transaction of the event's own) waits for the call row.
      await waitFor(setStatementsWaiting('transactionid'), (n) => n === 1, { what: 'the set statement waiting for the call row' });
    });
    await voice.settled();
    // Decided on the ended call (the row re-read after the wait): the leg never rings, the event is stale.
    expect((await leg(callId, 0)).status).toBe('dialing');
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.initiated:stale']);
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === dial.controlId)).toHaveLength(1);
  });

  it("a leg's hangup waits for the call's turn the set statement holds, then hands off once from the ringing leg", async () => {
    const { call, callId } = await ringing();
    const dial = await voice.dial(callId);
    await waitFor(() => leg(callId, 0), (l) => l.control_id === dial.controlId, { what: 'the leg named by the dial\'s answer' });
    // The set statement is held after its UPDATE of the leg (ringing), its call's turn taken.
    const pause = await pausePoint(voice.db.url, { table: 'call_legs', on: 'UPDATE', when: `NEW.call_id = '${callId}' AND NEW.status = 'ringing'` });
    try {
      await pause.hold();
      expect(await voice.legEvent(call, dial, 'call.initiated')).toBe(200);
      await pause.waitUntilPaused();
      // The hangup, stored; its run here waits in this process for the report's run (its call's
      // turn). Another worker's run of it (from Redis) is this one: it waits in the database.
      expect(await voice.legEvent(call, dial, 'call.hangup', noAnswer)).toBe(200);
      const hangupId = await waitFor(
        async () => (await voice.db.pool.query<{ id: string }>(`SELECT id FROM carrier_events WHERE normalized->>'callSessionId' = $1 AND kind = 'call.hangup'`, [call.session])).rows[0]?.id,
        Boolean,
        { what: 'the hangup stored' },
      );
      const elsewhere = voice.app.app.get(UnitOfWork).run((tx) => voice.app.app.get(CarrierEventProcessor).process(tx, hangupId!));
      elsewhere.catch(() => undefined);
      // It waits for the call's turn (an advisory lock the held statement has), before reading the leg.
      await waitFor(
        async () => voice.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`),
        (n) => n >= 2,
        { what: 'the held statement and the hangup waiting on advisory locks' },
      );
      expect((await leg(callId, 0)).ended_at).toBeNull();
      // The one held is the set statement (the report decided in sets), not a transaction.
      expect(await setStatementsWaiting('advisory')()).toBe(1);
      await pause.release();
      expect(['processed', 'already_processed']).toContain((await elsewhere).outcome);
    } finally {
      await pause.remove();
    }
    const next = await voice.dial(callId, 2);
    expect(next.clientState).toEqual({ call_id: callId, target: 1, attempt: 1 });
    await voice.settled();
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.initiated:ignored', 'call.hangup:applied']);
    expect(voice.telnyx.dials(callId)).toHaveLength(2);
  });

  /** The id of the latest stored event of `kind` of a call session, once `count` are stored. */
  const lastStored = async (session: string, kind: string, count = 1) => {
    const { rows } = await voice.db.pool.query<{ id: string }>(`SELECT id FROM carrier_events WHERE normalized->>'callSessionId' = $1 AND kind = $2 ORDER BY created_at DESC, id DESC`, [session, kind]);
    return rows.length >= count ? rows[0].id : undefined;
  };
  /** Another worker's run of a stored event (as from Redis), in a transaction of its own. */
  const runElsewhere = (eventId: string | undefined) => {
    const run = voice.app.app.get(UnitOfWork).run((tx) => voice.app.app.get(CarrierEventProcessor).process(tx, eventId!));
    run.catch(() => undefined);
    return run;
  };
  /** CallTransitions.callsNow's read: what a set statement decides a hand-off from before it runs. */
  const isCallsRead = (text: string) => text.startsWith('SELECT id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id');
  /** CallCommandSends.claim's statement (a command's send recorded before it goes out). */
  const isClaimStatement = (text: string) => text.startsWith('SELECT w.n, s.first_sent_at');
  const sendsOf = async (commandId: string) => (await voice.db.pool.query<{ sends: number }>(`SELECT sends FROM call_command_sends WHERE command_id = $1`, [commandId])).rows[0]?.sends;
  /** Transactions (not set statements) waiting for a call's turn. */
  const transactionsWaitingForTurns = () =>
    voice.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory' AND query NOT LIKE 'WITH evt_input%'`);

  /** The transaction's own statements for a leg event: its lock of the call and leg (lockByLeg) and the cursor's CAS (claimRingTurn). */
  const transactionTexts = (texts: string[]) =>
    texts.filter((text) => !text.startsWith('WITH evt_input') && (text.includes('FOR UPDATE OF c FOR NO KEY UPDATE OF l') || text.startsWith('UPDATE calls SET ring_plan')));

  it("a leg's first hangup hands off in sets: one read of the call and one statement end the leg, move the cursor and dial the next target, no transaction", async () => {
    const { call, callId, first } = await dialed();
    const { texts } = await captured(async () => {
      expect(await voice.legEvent(call, first, 'call.hangup', noAnswer)).toBe(200);
      await voice.dial(callId, 2);
      await voice.settled();
    });
    expect(texts.filter((text) => text.startsWith('WITH evt_input') && text.includes('calls_ring_turned'))).toHaveLength(1);
    expect(texts.filter(isCallsRead)).toHaveLength(1);
    expect(transactionTexts(texts)).toEqual([]);
    // The dial is sent from the commands the statement wrote, not from a read of its job's row.
    expect(texts.filter((text) => text.startsWith('SELECT data FROM outbox_jobs'))).toEqual([]);
    expect(await leg(callId, 0)).toMatchObject({ status: 'ended', control_id: first.controlId });
    expect((await leg(callId, 1)).status).toBe('dialing');
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.hangup:applied']);
    expect(voice.telnyx.dials(callId).map((d) => d.clientState?.target)).toEqual([0, 1]);
    // The cursor names the try it dialed: B's answer wins the race.
    expect((await voice.db.pool.query(`SELECT ring_plan->>'next' AS next FROM calls WHERE id = $1`, [callId])).rows[0].next).toBe('2');
    // The dial's send was recorded by the statement that decided it: no claim statement of its own.
    expect(texts.filter(isClaimStatement)).toEqual([]);
    expect(await sendsOf(`${(await leg(callId, 1)).id}-dial`)).toBe(1);
  });

  it('a hand-off in sets waits for the call row a competitor holds and, the call ended meanwhile, loses its compare-and-set: the transaction ends the leg, nothing is dialed', async () => {
    const { call, callId, first } = await dialed();
    // The set statement's read finds the call ringing; the row it locks is the ended call.
    await whileCallEndingHeld(callId, async () => {
      expect(await voice.legEvent(call, first, 'call.hangup', noAnswer)).toBe(200);
      await waitFor(setStatementsWaiting('transactionid'), (n) => n === 1, { what: 'the hand-off statement waiting for the call row' });
    });
    await voice.settled();
    // Its CAS lost (the call is over): the transaction ended the leg and moved nothing on.
    expect((await leg(callId, 0)).ended_at).not.toBeNull();
    expect(await leg(callId, 1)).toBeUndefined();
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.hangup:superseded']);
    expect(voice.telnyx.dials(callId)).toHaveLength(1);
    expect((await voice.call(callId)).status).toBe('missed');
  });

  /** The hand-off statement held after it ended leg 0 (its call's turn and the leg's row held). */
  const handOffHeld = (callId: string): PausePointSpec => ({ table: 'call_legs', on: 'UPDATE', when: `NEW.call_id = '${callId}' AND NEW.target_index = 0 AND NEW.ended_at IS NOT NULL` });

  /**
   * While a set statement is held: another worker's run of the `count`th stored event of `kind`
   * of the session (`deliver` stores it) waits for the call's turn in the database (its run here
   * waits in this process, behind the held one's); returns the check of its outcome, once the held
   * statement has committed.
   */
  async function racedElsewhere(session: string, kind: string, count: number, deliver: () => Promise<number>): Promise<AfterRelease> {
    expect(await setStatementsWaiting('advisory')()).toBe(1);
    expect(await deliver()).toBe(200);
    const elsewhere = runElsewhere(await waitFor(() => lastStored(session, kind, count), Boolean, { what: `the ${kind} stored` }));
    await waitFor(transactionsWaitingForTurns, (n) => n === 1, { what: `the ${kind} waiting for the call's turn` });
    return async () => expect(['processed', 'already_processed']).toContain((await elsewhere).outcome);
  }

  it('an answer of the leg arriving while the hand-off in sets holds its turn waits, then finds the leg ended: stale, hung up, and the next target rings alone', async () => {
    const { call, callId, first } = await dialed();
    await whileHeld(
      handOffHeld(callId),
      async () => expect(await voice.legEvent(call, first, 'call.hangup', noAnswer)).toBe(200),
      // The leg's answer, racing the hand-off.
      () => racedElsewhere(call.session, 'call.answered', 1, () => voice.legEvent(call, first, 'call.answered')),
    );
    const next = await voice.dial(callId, 2);
    expect(next.clientState).toEqual({ call_id: callId, target: 1, attempt: 1 });
    await voice.settled();
    // Answers only from live legs: the ended leg's answer won nothing and was hung up.
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.hangup:applied', 'call.answered:stale']);
    expect((await voice.call(callId)).status).toBe('ringing');
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === first.controlId)).toHaveLength(1);
    expect(voice.telnyx.of('bridge', (c) => c.controlId === call.caller)).toEqual([]);
    // Distinct command ids: a dial resent under its command_id on a loaded machine is one dial (as Telnyx takes it).
    expect(voice.telnyx.distinct('dial', (c) => c.clientState?.call_id === callId)).toHaveLength(2);
  });

  it('the same hangup under a new event id while the hand-off in sets holds its turn: decided after it, a duplicate, and the next target dialed once', async () => {
    const { call, callId, first } = await dialed();
    await whileHeld(
      handOffHeld(callId),
      async () => expect(await voice.legEvent(call, first, 'call.hangup', noAnswer)).toBe(200),
      // The twin, re-signed under a new event id.
      () => racedElsewhere(call.session, 'call.hangup', 2, () => voice.legEvent(call, first, 'call.hangup', noAnswer)),
    );
    await voice.dial(callId, 2);
    await voice.settled();
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.hangup:applied', 'call.hangup:duplicate']);
    expect(voice.telnyx.distinct('dial', (c) => c.clientState?.call_id === callId).map((d) => d.clientState?.target)).toEqual([0, 1]);
    expect(await voice.db.count(`SELECT count(*) FROM call_legs WHERE call_id = $1`, [callId])).toBe(2);
  });

  it("a hangup and its twin stored by two ingest statements, the earlier one's commit last: the twin is answered at once but waits for it to run, so the earlier is the hand-off in sets and the later its duplicate, no transaction", async () => {
    const { call, callId, first } = await dialed();
    const [earlierId, laterId] = [`hangup-earlier-${callId}`, `hangup-later-${callId}`];
    const pause = await pausePoint(voice.db.url, { table: 'carrier_events', on: 'INSERT', when: `NEW.carrier_event_id = '${earlierId}'` });
    await pause.hold();
    let earlier: Promise<number> | undefined;
    let later: Promise<number> | undefined;
    try {
      const { texts } = await captured(async () => {
        // The earlier statement mints its ids first and is held before its commit.
        earlier = voice.legEvent(call, first, 'call.hangup', noAnswer, { id: earlierId });
        await pause.waitUntilPaused();
        // The later one, beside it, commits first, and the carrier has its answer: only its run waits.
        let laterAnswered = false;
        later = voice.legEvent(call, first, 'call.hangup', noAnswer, { id: laterId }).then((status) => ((laterAnswered = true), status));
        await waitFor(async () => laterAnswered, (answered) => answered, { what: 'the later delivery answered while the earlier statement is held' });
        expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NULL`, [laterId])).toBe(1);
        await pause.release();
        expect([await earlier, await later]).toEqual([200, 200]);
        await voice.dial(callId, 2);
        await voice.settled();
      });
      expect(transactionTexts(texts)).toEqual([]);
    } finally {
      await pause.release().catch(() => undefined);
      await Promise.allSettled([earlier, later]);
      await pause.remove();
    }
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.hangup:applied', 'call.hangup:duplicate']);
    expect(voice.telnyx.distinct('dial', (c) => c.clientState?.call_id === callId).map((d) => d.clientState?.target)).toEqual([0, 1]);
  });

  it("a leg's first answer wins in sets: one statement, no read before it, answers the leg and the call, queues the join and its timeout, no transaction", async () => {
    const { call, callId, first } = await dialed();
    const hint = jest.spyOn(voice.app.app.get(RelayWakeup), 'hint');
    let hints = -1;
    const { texts } = await captured(async () => {
      expect(await voice.legEvent(call, first, 'call.answered')).toBe(200);
      await voice.telnyx.next((c) => c.action === 'bridge' && c.controlId === call.caller);
      await voice.settled();
    }).finally(() => {
      hints = hint.mock.calls.length;
      hint.mockRestore();
    });
    expect(texts.filter((text) => text.startsWith('WITH evt_input') && text.includes('calls_answered'))).toHaveLength(1);
    // The join is built from the call and leg as the statement locked them (CallFlow.joinCommandsSql).
    expect(texts.filter(isCallsRead)).toEqual([]);
    expect(texts.filter((text) => !text.startsWith('WITH evt_input') && (text.includes('FOR UPDATE OF c FOR NO KEY UPDATE OF l') || text.includes('WITH live_leg')))).toEqual([]);
    expect(texts.filter((text) => text.startsWith('SELECT data FROM outbox_jobs'))).toEqual([]);
    expect(await voice.call(callId)).toMatchObject({ status: 'in_progress' });
    expect((await leg(callId, 0)).status).toBe('answered');
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.answered:applied']);
    expect(voice.telnyx.distinct('bridge', (c) => c.controlId === call.caller)).toHaveLength(1);
    expect(voice.telnyx.distinct('answer', (c) => c.controlId === call.caller)).toHaveLength(1);
    // The answer, the join's first command, went out as the statement recorded it; the bridge after
    // it was claimed under its guard (the leg still the live winner), in a statement of its own.
    expect(texts.filter(isClaimStatement)).toHaveLength(1);
    expect([await sendsOf(`${callId}-answer`), await sendsOf(`${callId}-bridge-${(await leg(callId, 0)).id}`)]).toEqual([1, 1]);
    // The join timeout waits, a lease of DIAL_JOIN_TIMEOUT_SECONDS ahead; no relay was woken for
    // it (a relay's poll reads it long before it falls due).
    expect(hints).toBe(0);
    expect(await voice.db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND run_at > now() AND completed_at IS NULL`, [`join-timeout-${(await leg(callId, 0)).id}`])).toBe(1);
  });

  it("a join's bridge is claimed while the caller's answer is still at the carrier: it goes out as soon as the answer comes back", async () => {
    const { call, callId, first } = await dialed();
    voice.telnyx.holdNext('answer');
    try {
      expect(await voice.legEvent(call, first, 'call.answered')).toBe(200);
      await voice.telnyx.next((c) => c.action === 'answer' && c.controlId === call.caller);
      const bridgeId = `${callId}-bridge-${(await leg(callId, 0)).id}`;
      // The answer is held at the carrier; the bridge's send is recorded already, under its guard.
      await waitFor(() => sendsOf(bridgeId), (sends) => sends === 1, { what: "the bridge's claim while the answer is held" });
      expect(voice.telnyx.of('bridge', (c) => c.controlId === call.caller)).toEqual([]);
    } finally {
      voice.telnyx.releaseHeld();
    }
    await voice.telnyx.next((c) => c.action === 'bridge' && c.controlId === call.caller);
    await voice.settled();
    expect(voice.telnyx.distinct('bridge', (c) => c.controlId === call.caller)).toHaveLength(1);
  });

  it('an answer in sets waits for the call row a competitor holds and, the caller gone meanwhile, wins nothing: the transaction finds the call over, hangs the leg up, no bridge', async () => {
    const { call, callId, first } = await dialed();
    await whileCallEndingHeld(callId, async () => {
      expect(await voice.legEvent(call, first, 'call.answered')).toBe(200);
      await waitFor(setStatementsWaiting('transactionid'), (n) => n === 1, { what: 'the answer\'s set statement waiting for the call row' });
    });
    await voice.settled();
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.answered:stale']);
    expect((await voice.call(callId)).status).toBe('missed');
    expect(voice.telnyx.of('bridge', (c) => c.controlId === call.caller)).toEqual([]);
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === first.controlId)).toHaveLength(1);
  });

  it('the same answer under a new event id while the winning answer in sets holds its turn: decided after it, a duplicate, one bridge', async () => {
    const { call, callId, first } = await dialed();
    await whileHeld(
      { table: 'calls', on: 'UPDATE', when: `NEW.id = '${callId}' AND NEW.status = 'in_progress'` },
      async () => expect(await voice.legEvent(call, first, 'call.answered')).toBe(200),
      () => racedElsewhere(call.session, 'call.answered', 2, () => voice.legEvent(call, first, 'call.answered')),
    );
    await voice.telnyx.next((c) => c.action === 'bridge' && c.controlId === call.caller);
    await voice.settled();
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.answered:applied', 'call.answered:duplicate']);
    expect(voice.telnyx.distinct('bridge', (c) => c.controlId === call.caller)).toHaveLength(1);
    expect(await voice.db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id LIKE 'join-timeout-%' AND data->>'callId' = $1`, [callId])).toBe(1);
  });

  it('a hangup repeated after its leg ended, and an answer repeated while its leg is the live winner: duplicates, decided in sets', async () => {
    const { call, callId } = await ringing();
    const first = await voice.dial(callId);
    await voice.legEvent(call, first, 'call.hangup', noAnswer);
    const second = await voice.dial(callId, 2);
    await voice.legEvent(call, first, 'call.hangup', noAnswer);
    await voice.legEvent(call, second, 'call.answered');
    await voice.callUntil(callId, (c) => c.status === 'in_progress', 'the call in progress');
    // The repeat alone in flight: its processing is one set statement, never its transaction's
    // reads (the event's and the call's locks).
    const { texts } = await captured(async () => {
      await voice.legEvent(call, second, 'call.answered');
      await voice.settled();
    });
    expect(texts.filter((text) => text.startsWith('WITH evt_input'))).toHaveLength(1);
    expect(texts.filter((text) => text.startsWith('SELECT e.normalized') || text.includes('FOR UPDATE OF c FOR NO KEY UPDATE OF l') && !text.startsWith('WITH evt_input'))).toEqual([]);
    expect(await timeline(callId)).toEqual(['call.initiated:applied', 'call.hangup:applied', 'call.hangup:duplicate', 'call.answered:applied', 'call.answered:duplicate']);
    // Each repeat's event keeps the note the transaction would have given it.
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE normalized->>'callSessionId' = $1 AND note = 'duplicate'`, [call.session])).toBe(2);
    expect(voice.telnyx.dials(callId)).toHaveLength(2);
    expect(voice.telnyx.distinct('bridge', (c) => c.controlId === call.caller)).toHaveLength(1);
  });
});
