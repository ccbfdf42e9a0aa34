import { describe, expect, it } from '@jest/globals';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { CallCommandCompletions } from '../../../src/modules/calls/call-command-completions.js';
import { CallFlow } from '../../../src/modules/calls/call-flow.js';
import { CallTransitions } from '../../../src/modules/calls/call-transitions.js';
import type { CallRow } from '../../../src/modules/calls/call-view.js';
import { startPlan } from '../../../src/modules/sequential-ring/ring-plan.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { pausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

/**
 * The call guards at the statement level, each interleaved with its competitor on purpose: the
 * first transaction is held right after its guarded UPDATE (row written and locked, not
 * committed), the competitor runs its own statement against exactly that state, then the first
 * commits. The handlers also lock the call row before deciding; these hold without that lock.
 */
describe('call guards under interleaving', () => {
  const t = withTestApp({ http: false });
  const transitions = () => t.app.app.get(CallTransitions);
  const uow = () => t.app.app.get(UnitOfWork);
  const flow = () => t.app.app.get(CallFlow);
  /** A dial's answer kept outside any transaction (CallCommandCompletions: the keep without a job). */
  const keep = (call: CallRow & { leg0: string }, controlId: string) => t.app.app.get(CallCommandCompletions).end({ keep: { legId: call.leg0, callId: call.id, controlId } });

  /** A ringing call whose plan rings target 0 (try 1), with that leg dialed: `leg0`; `leg1` is target 1's leg, not the current try. */
  async function ringingCall(): Promise<CallRow & { leg0: string; leg1: string }> {
    const { account } = await t.app.app.get(AccountsService).createAccount('guards');
    const { plan } = startPlan({ ring_plan: { targets: [{ to: '+15550000001', timeout_secs: 20 }, { to: '+15550000002', timeout_secs: 20 }], fallback: { action: 'hangup' } }, transcribe: false });
    return uow().run(async (tx) => {
      const call = (await transitions().create(tx, { accountId: account.id, direction: 'inbound', from: '+15550000009', to: '+15550000008', carrier: 'telnyx', carrierCallId: `s-${Math.random()}`, callerControlId: 'v3:caller', ringPlan: plan, transcribe: false, status: 'ringing' }))!;
      const leg0 = (await transitions().addLeg(tx, call.id, { target: 0, attempt: 1, to: '+15550000001' }))!;
      const leg1 = (await transitions().addLeg(tx, call.id, { target: 1, attempt: 1, to: '+15550000002' }))!;
      return { ...call, leg0: leg0.id, leg1: leg1.id };
    });
  }

  /** Runs `first` held after its UPDATE of a `table` row matching `when`, then `second`, then lets `first` commit. */
  async function interleave<A, B>(table: 'calls' | 'call_legs', when: string, first: () => Promise<A>, second: () => Promise<B>): Promise<[A, B]> {
    const pause = await pausePoint(t.db.url, { table, on: 'UPDATE', when });
    await pause.hold();
    try {
      const held = first();
      await pause.waitUntilPaused();
      const competing = second();
      await pause.release();
      return [await held, await competing];
    } finally {
      await pause.remove();
    }
  }
  /** A leg as the leg UPDATEs name it: its id and its call's (the partition key). */
  const legOf = (call: { id: string; leg0: string }) => ({ id: call.leg0, call_id: call.id });
  const onCall = (callId: string, when: string) => `NEW.id = '${callId}' AND ${when}`;
  const answer = (callId: string, legId: string) => async () => (await uow().run((tx) => transitions().answerByLeg(tx, callId, legId, new Date().toISOString())))?.answered_leg ?? null;

  it('the ring cursor: two claims of one turn from the same plan, one wins', async () => {
    const call = await ringingCall();
    const expected = call.ring_plan!;
    const moved = { ...expected, next: 2 };
    const claim = () => uow().run((tx) => transitions().claimRingTurn(tx, call.id, expected, moved));
    const results = await interleave('calls', onCall(call.id, `(NEW.ring_plan->>'next')::int = 2`), claim, claim);
    expect(results.sort()).toEqual([false, true]);
  });

  it('the ring cursor: a claim loses to an answer committed in between (status = ringing)', async () => {
    const call = await ringingCall();
    const results = await interleave(
      'calls',
      onCall(call.id, `NEW.status = 'in_progress'`),
      answer(call.id, call.leg0),
      () => uow().run((tx) => transitions().claimRingTurn(tx, call.id, call.ring_plan!, { ...call.ring_plan!, next: 2 })),
    );
    expect(results).toEqual([call.leg0, false]);
  });

  it('the answer race: the same leg answering twice at once (a re-signed copy), one winner', async () => {
    const call = await ringingCall();
    const [first, second] = await interleave('calls', onCall(call.id, `NEW.status = 'in_progress'`), answer(call.id, call.leg0), answer(call.id, call.leg0));
    expect([first, second]).toEqual([call.leg0, null]);
  });

  it('a dead leg never wins: its answer loses to its own hangup committed in between', async () => {
    const call = await ringingCall();
    const hangup = () => uow().run((tx) => transitions().endLeg(tx, legOf(call), new Date().toISOString(), 'normal_clearing'));
    // The hangup holds the leg row; the answer waits on it, then finds the leg ended.
    const [ended, won] = await interleave('call_legs', `NEW.id = '${call.leg0}' AND NEW.ended_at IS NOT NULL`, hangup, answer(call.id, call.leg0));
    expect([ended, won]).toEqual([true, null]);
    expect((await t.db.pool.query(`SELECT status, answered_leg FROM calls WHERE id = $1`, [call.id])).rows[0]).toEqual({ status: 'ringing', answered_leg: null });
  });

  it('a hangup of the leg held behind its answer finds the leg answered: the answer stands', async () => {
    const call = await ringingCall();
    const hangup = () => uow().run((tx) => transitions().endLeg(tx, legOf(call), new Date().toISOString(), 'normal_clearing'));
    const [won, ended] = await interleave('calls', onCall(call.id, `NEW.status = 'in_progress'`), answer(call.id, call.leg0), hangup);
    expect([won, ended]).toEqual([call.leg0, true]);
  });

  it('a leg that is not the plan\'s current try never wins, nor one written off', async () => {
    const call = await ringingCall();
    expect(await answer(call.id, call.leg1)()).toBeNull();
    await uow().run((tx) => transitions().writeOffUnreportedLeg(tx, legOf(call), new Date().toISOString(), 'dial refused'));
    expect(await answer(call.id, call.leg0)()).toBeNull();
    expect((await t.db.pool.query(`SELECT status FROM calls WHERE id = $1`, [call.id])).rows[0].status).toBe('ringing');
  });

  it('a dial is written off only while the carrier never named its leg: the leg\'s first event committed in between wins', async () => {
    const call = await ringingCall();
    const named = () => uow().run((tx) => transitions().claimLegControl(tx, legOf(call), 'v3:leg-0'));
    const writeOff = async () => Boolean(await uow().run((tx) => transitions().writeOffUnreportedLeg(tx, legOf(call), new Date().toISOString(), 'dial not answered')));
    const [control, writtenOff] = await interleave('call_legs', `NEW.id = '${call.leg0}' AND NEW.control_id IS NOT NULL`, named, writeOff);
    expect([control, writtenOff]).toEqual([{ ours: true, over: false }, false]);
  });

  it('a call that ends while a dial is in flight: the dial\'s answer finds its leg over', async () => {
    const call = await ringingCall();
    const close = () => uow().run((tx) => transitions().closeLegsOfEndedCall(tx, call.id, new Date().toISOString()));
    const named = () => uow().run((tx) => transitions().claimLegControl(tx, legOf(call), 'v3:leg-0'));
    const [legsUp, control] = await interleave('call_legs', `NEW.id = '${call.leg0}' AND NEW.ended_at IS NOT NULL`, close, named);
    expect([legsUp, control]).toEqual([[], { ours: true, over: true }]);
  });

  /**
   * `first` held after its UPDATE of a call_legs row matching `when`; lockByLeg of leg0 started and
   * seen waiting on a row lock (pg_stat_activity) before `first` commits: what it returns is read
   * after that wait, not from a snapshot taken before it.
   */
  async function lockByLegBehind<A>(call: CallRow & { leg0: string }, when: string, first: () => Promise<A>) {
    const pause = await pausePoint(t.db.url, { table: 'call_legs', on: 'UPDATE', when });
    await pause.hold();
    try {
      const held = first();
      await pause.waitUntilPaused();
      const locked = uow().run((tx) => transitions().lockByLeg(tx, 'telnyx', { callId: call.id, target: 0, attempt: 1 }));
      await waitFor(
        () => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM calls c JOIN call_legs l%'`),
        (n) => n === 1,
        { what: 'lockByLeg waiting on a row lock' },
      );
      await pause.release();
      await held;
      return await locked;
    } finally {
      await pause.remove();
    }
  }

  /** Until one keep statement (CallCommandCompletions) is seen waiting on a row lock (pg_stat_activity). */
  const keepWaitingOnLock = (what: string) =>
    waitFor(
      () => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH ends AS MATERIALIZED%'`),
      (n) => n === 1,
      { what },
    );

  /**
   * the keep of leg0 started behind `first` (held after its UPDATE of leg0's row) and
   * seen waiting on that row's lock before `first` commits: its WHERE is evaluated on the row as
   * `first` committed it, not as it was when the statement began.
   */
  async function keepBehind<A>(call: CallRow & { leg0: string }, when: string, first: () => Promise<A>, controlId: string): Promise<[A, boolean]> {
    const pause = await pausePoint(t.db.url, { table: 'call_legs', on: 'UPDATE', when });
    await pause.hold();
    try {
      const held = first();
      await pause.waitUntilPaused();
      const kept = keep(call, controlId);
      await keepWaitingOnLock('the keep waiting on the leg\'s row lock');
      await pause.release();
      return [await held, await kept];
    } finally {
      await pause.remove();
    }
  }
  const legControl = async (legId: string) => (await t.db.pool.query(`SELECT control_id FROM call_legs WHERE id = $1`, [legId])).rows[0].control_id;

  it('a leg event decides its claim off the leg it holds locked: a repeat of the dial\'s answer waits for its commit, and another physical leg is not ours', async () => {
    const call = await ringingCall();
    await keep(call, 'v3:leg-0');
    let kept: Promise<boolean> | undefined;
    const decided = await uow().run(async (tx) => {
      const found = await transitions().lockByLeg(tx, 'telnyx', { callId: call.id, target: 0, attempt: 1 });
      // The same physical leg named again (a repeated answer to the dial) matches its WHERE, so it waits on the leg's lock.
      kept = keep(call, 'v3:leg-0');
      await keepWaitingOnLock('the dial\'s answer waiting on the leg the event holds');
      return [await transitions().claimLockedLegControl(tx, found!.leg!, 'v3:leg-0'), await transitions().claimLockedLegControl(tx, found!.leg!, 'v3:leg-0-second')];
    });
    expect(decided).toEqual([{ ours: true, over: false }, { ours: false, over: false }]);
    expect(await kept).toBe(true);
    expect(await keep(call, 'v3:leg-0-second')).toBe(false);
    expect(await legControl(call.leg0)).toBe('v3:leg-0');
  });

  it('a leg event on a leg not named yet names it in its statement; an ended leg is over', async () => {
    const call = await ringingCall();
    const claim = (controlId: string) => uow().run(async (tx) => {
      const found = await transitions().lockByLeg(tx, 'telnyx', { callId: call.id, target: 0, attempt: 1 });
      return transitions().claimLockedLegControl(tx, found!.leg!, controlId);
    });
    expect(await claim('v3:leg-0')).toEqual({ ours: true, over: false });
    expect(await legControl(call.leg0)).toBe('v3:leg-0');
    await uow().run((tx) => transitions().endLeg(tx, legOf(call), new Date().toISOString(), 'normal_clearing'));
    expect(await claim('v3:leg-0')).toEqual({ ours: true, over: true });
    expect(await claim('v3:leg-0-other')).toEqual({ ours: false, over: true });
  });

  it("a dial's answer kept in one statement: the live leg takes its physical leg, and a repeat of that answer keeps it too", async () => {
    const call = await ringingCall();
    expect(await keep(call, 'v3:leg-0')).toBe(true);
    expect(await keep(call, 'v3:leg-0')).toBe(true);
    expect(await legControl(call.leg0)).toBe('v3:leg-0');
  });

  it("a dial's answer kept in one statement, behind the call closing its legs: it waits, finds the leg over and changes nothing", async () => {
    const call = await ringingCall();
    const close = () => uow().run((tx) => transitions().closeLegsOfEndedCall(tx, call.id, new Date().toISOString()));
    const [, kept] = await keepBehind(call, `NEW.id = '${call.leg0}' AND NEW.ended_at IS NOT NULL`, close, 'v3:leg-0');
    expect(kept).toBe(false);
    expect(await legControl(call.leg0)).toBeNull();
    // What afterDial does then: the claim in a transaction, which finds the leg over (and hangs up the physical leg).
    expect(await uow().run((tx) => transitions().claimLegControl(tx, legOf(call), 'v3:leg-0'))).toEqual({ ours: true, over: true });
  });

  it("a dial's answer kept in one statement, behind the leg's first event naming another physical leg: it waits and changes nothing", async () => {
    const call = await ringingCall();
    const named = () => uow().run((tx) => transitions().claimLegControl(tx, legOf(call), 'v3:leg-0-first'));
    const [control, kept] = await keepBehind(call, `NEW.id = '${call.leg0}' AND NEW.control_id IS NOT NULL`, named, 'v3:leg-0-second');
    expect([control, kept]).toEqual([{ ours: true, over: false }, false]);
    expect(await legControl(call.leg0)).toBe('v3:leg-0-first');
  });

  it("lockByLeg behind a transaction holding the call that ends the leg: it waits, then returns the leg as that one committed it", async () => {
    const call = await ringingCall();
    const endLegUnderCallLock = () => uow().run(async (tx) => {
      await transitions().lockById(tx, call.id);
      return transitions().endLeg(tx, legOf(call), new Date().toISOString(), 'normal_clearing');
    });
    const found = await lockByLegBehind(call, `NEW.id = '${call.leg0}' AND NEW.ended_at IS NOT NULL`, endLegUnderCallLock);
    expect(found?.call.id).toBe(call.id);
    expect(found?.leg).toMatchObject({ id: call.leg0, status: 'ended', hangup_cause: 'normal_clearing' });
    expect(found?.leg?.ended_at).not.toBeNull();
  });

  it('lockByLeg behind a transaction holding only the leg (a dial\'s answer naming it): it waits, then returns the leg as named', async () => {
    const call = await ringingCall();
    const named = () => uow().run((tx) => transitions().claimLegControl(tx, legOf(call), 'v3:leg-0'));
    const found = await lockByLegBehind(call, `NEW.id = '${call.leg0}' AND NEW.control_id IS NOT NULL`, named);
    expect(found?.leg).toMatchObject({ id: call.leg0, control_id: 'v3:leg-0' });
    expect(found?.call).not.toHaveProperty('leg_id');
  });

  it('the hangup guard: two hangups at once end the call once and bill it once', async () => {
    const call = await ringingCall();
    await uow().run((tx) => transitions().answerByLeg(tx, call.id, call.leg0, new Date(Date.now() - 90_000).toISOString()));
    // CallFlow.endCall: the guard (CallTransitions.end) and the minutes it bills, in one transaction.
    const end = () => uow().run((tx) => flow().endCall(tx, call, new Date().toISOString(), 'normal_clearing', 'caller'));
    const [first, second] = await interleave('calls', onCall(call.id, `NEW.ended_at IS NOT NULL`), end, end);
    expect([first, second]).toEqual([true, false]);
    expect(await t.db.count(`SELECT count(*) FROM calls WHERE id = $1 AND status = 'completed'`, [call.id])).toBe(1);
    expect(await t.db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [call.id])).toBe(1);
    expect(await t.db.count(`SELECT quantity FROM usage_records WHERE resource_id = $1`, [call.id])).toBe(2);
  });

  it("the transcript: a final fragment whose transaction held the call while the transcript's assembly waited for the call's row is in the transcript (announced once, whole)", async () => {
    const call = await ringingCall();
    await uow().run(async (tx) => {
      await transitions().answerByLeg(tx, call.id, call.leg0, new Date(Date.now() - 60_000).toISOString());
      await transitions().end(tx, call.id, new Date().toISOString(), 'normal_clearing');
      await transitions().addTranscriptFragment(tx, call.id, new Date(Date.now() - 30_000).toISOString(), 'hello');
    });
    const holder = await t.db.pool.connect();
    let assembled: CallRow | undefined;
    try {
      // A transcription event's transaction (CallCarrierEvents.transcription): the call locked,
      // its fragment added, not committed. The assembly's snapshot is taken before it commits.
      await holder.query('BEGIN');
      await holder.query(`SELECT FROM calls WHERE id = $1 FOR UPDATE`, [call.id]);
      await holder.query(`INSERT INTO call_transcript_fragments (call_id, occurred_at, text) VALUES ($1, now() - interval '10 seconds', 'world')`, [call.id]);
      const assembling = uow().run((tx) => transitions().completeTranscript(tx, call.id));
      await waitFor(
        () => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple') AND strpos(query, 'calls') > 0`),
        (n) => n >= 1,
        { what: "the transcript's assembly waiting on the call's row" },
      );
      await holder.query('COMMIT');
      assembled = await assembling;
    } catch (err) {
      await holder.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      holder.release();
    }
    expect(assembled?.transcript).toBe('hello world');
    expect((await t.db.pool.query(`SELECT transcript FROM calls WHERE id = $1`, [call.id])).rows[0].transcript).toBe('hello world');
  });
});
