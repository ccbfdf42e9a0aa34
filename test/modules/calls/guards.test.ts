import { describe, expect, it } from '@jest/globals';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { CallTransitions } from '../../../src/modules/calls/call-transitions.js';
import type { CallRow } from '../../../src/modules/calls/call-view.js';
import { startPlan } from '../../../src/modules/sequential-ring/ring-plan.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { pausePoint } from '../../support/pause.js';
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

  async function ringingCall(): Promise<CallRow> {
    const { account } = await t.app.app.get(AccountsService).createAccount('guards');
    const { plan } = startPlan({ ring_plan: { targets: [{ to: '+15550000001', timeout_secs: 20 }, { to: '+15550000002', timeout_secs: 20 }], fallback: { action: 'hangup' } }, transcribe: false });
    return (await uow().run((tx) =>
      transitions().create(tx, { accountId: account.id, direction: 'inbound', from: '+15550000009', to: '+15550000008', carrier: 'telnyx', carrierCallId: `s-${Math.random()}`, callerControlId: 'v3:caller', ringPlan: plan, transcribe: false, status: 'ringing' }),
    ))!;
  }

  /** Runs `first` held after its UPDATE of the call, then `second`, then lets `first` commit. */
  async function interleave<T>(callId: string, when: string, first: () => Promise<T>, second: () => Promise<T>): Promise<[T, T]> {
    const pause = await pausePoint(t.db.url, { table: 'calls', on: 'UPDATE', when: `NEW.id = '${callId}' AND ${when}` });
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

  it('the ring cursor: two claims of one turn from the same plan, one wins', async () => {
    const call = await ringingCall();
    const expected = call.ring_plan!;
    const moved = { ...expected, next: 2 };
    const claim = () => uow().run((tx) => transitions().claimRingTurn(tx, call.id, expected, moved));
    const results = await interleave(call.id, `(NEW.ring_plan->>'next')::int = 2`, claim, claim);
    expect(results.sort()).toEqual([false, true]);
  });

  it('the ring cursor: a claim loses to an answer committed in between (status = ringing)', async () => {
    const call = await ringingCall();
    const results = await interleave(
      call.id,
      `NEW.status = 'in_progress'`,
      async () => Boolean(await uow().run((tx) => transitions().answerByLeg(tx, call.id, 'leg_x', new Date().toISOString()))),
      () => uow().run((tx) => transitions().claimRingTurn(tx, call.id, call.ring_plan!, { ...call.ring_plan!, next: 2 })),
    );
    expect(results).toEqual([true, false]);
  });

  it('the answer race: two legs answering at once, one winner', async () => {
    const call = await ringingCall();
    const answer = (leg: string) => async () => (await uow().run((tx) => transitions().answerByLeg(tx, call.id, leg, new Date().toISOString())))?.answered_leg ?? null;
    const [first, second] = await interleave(call.id, `NEW.status = 'in_progress'`, answer('leg_a'), answer('leg_b'));
    expect([first, second]).toEqual(['leg_a', null]);
  });

  it('the hangup guard: two hangups at once end the call once and bill it once', async () => {
    const call = await ringingCall();
    await uow().run((tx) => transitions().answerByLeg(tx, call.id, 'leg_a', new Date(Date.now() - 90_000).toISOString()));
    const end = async () => (await uow().run((tx) => transitions().end(tx, call.id, new Date().toISOString(), 'normal_clearing')))?.status ?? null;
    const [first, second] = await interleave(call.id, `NEW.ended_at IS NOT NULL`, end, end);
    expect([first, second]).toEqual(['completed', null]);
    expect(await t.db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [call.id])).toBe(1);
    expect(await t.db.count(`SELECT quantity FROM usage_records WHERE resource_id = $1`, [call.id])).toBe(2);
  });
});
