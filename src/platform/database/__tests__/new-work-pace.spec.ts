import { describe, expect, it } from '@jest/globals';
import { ConnectionBudget, Gate, Pace } from '../connection-budget.js';
import { NEW_WORK_PACE, NewWorkPace, type PaceClock } from '../new-work-pace.js';

/** A clock moved by hand: timers fire, in order, as `advance` passes their time. */
class HandClock implements PaceClock {
  private t = 0;
  /** The machine's CPU busy share each window reads. */
  busy: number | undefined = 0.5;
  private timers: { at: number; fn: () => void }[] = [];

  now(): number {
    return this.t;
  }

  after(ms: number, fn: () => void): void {
    this.timers.push({ at: this.t + ms, fn });
  }

  cpuBusy(): number | undefined {
    return this.busy;
  }

  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers.splice(this.timers.indexOf(due), 1);
      this.t = due.at;
      due.fn();
      await settle();
    }
    this.t = end;
    await settle();
  }
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

/** Starts `n` admissions; returns how many have been let in so far, live. */
function admitMany(pace: NewWorkPace, n: number, raisedBy: Pace[] = []): { admitted: () => number } {
  let admitted = 0;
  for (let i = 0; i < n; i++) void pace.admit(raisedBy[i]).then(() => void admitted++);
  return { admitted: () => admitted };
}

describe('NewWorkPace (the rate at which a lane lets new calls in)', () => {
  const settings = { ...NEW_WORK_PACE, initialRate: 10, burst: 2, cohort: 1 };

  it('lets a lone new call in at once, and a crowd at the rate: two at once (the burst), then one every 1/rate s', async () => {
    const clock = new HandClock();
    const pace = new NewWorkPace(settings, clock);
    const crowd = admitMany(pace, 5);
    await settle();
    expect(crowd.admitted()).toBe(2);
    expect(pace.waiting).toBe(3);
    await clock.advance(99);
    expect(crowd.admitted()).toBe(2);
    await clock.advance(1);
    expect(crowd.admitted()).toBe(3);
    await clock.advance(200);
    expect(crowd.admitted()).toBe(5);
    expect(pace.waiting).toBe(0);
  });

  it('lets a crowd in by cohorts: a cohort once the tokens cover it, then all that wait when fewer than a cohort are left', async () => {
    const clock = new HandClock();
    const pace = new NewWorkPace({ ...settings, burst: 4, cohort: 4, step: 0 }, clock);
    const crowd = admitMany(pace, 10);
    await settle();
    expect(crowd.admitted()).toBe(4);
    await clock.advance(300);
    expect(crowd.admitted()).toBe(4);
    await clock.advance(100);
    expect(crowd.admitted()).toBe(8);
    await clock.advance(100);
    expect(crowd.admitted()).toBe(8);
    await clock.advance(100);
    expect(crowd.admitted()).toBe(10);
  });

  it('refuses a cohort larger than its burst (it would wait for ever)', () => {
    expect(() => new NewWorkPace({ ...settings, burst: 2, cohort: 3 }, new HandClock())).toThrow('cohort');
  });

  it('slows down when the calls in progress wait for connections past the target, and never below the least rate', async () => {
    const clock = new HandClock();
    const pace = new NewWorkPace(settings, clock);
    for (let window = 0; window < 30; window++) {
      for (let run = 0; run < 10; run++) pace.waited('soon', settings.targetWaitMs + 1);
      await clock.advance(settings.windowMs);
    }
    pace.waited('soon', 0);
    expect(pace.rate).toBe(settings.minRate);
  });

  it("slows down when the machine's CPUs are busier than the most it allows, though no run waited for a connection; a CPU it cannot read says nothing", async () => {
    const clock = new HandClock();
    const pace = new NewWorkPace(settings, clock);
    clock.busy = settings.cpuBusyMax + 0.01;
    pace.waited('soon', 0);
    await clock.advance(settings.windowMs);
    pace.waited('soon', 0);
    expect(pace.rate).toBe(settings.initialRate * settings.decrease);
    clock.busy = undefined;
    await clock.advance(settings.windowMs);
    pace.waited('soon', 0);
    expect(pace.rate).toBe(settings.initialRate * settings.decrease);
  });

  it('does not slow down for late new work or SMS (they say nothing of the calls in progress), nor for a few late runs', async () => {
    const clock = new HandClock();
    const pace = new NewWorkPace(settings, clock);
    for (let window = 0; window < 5; window++) {
      pace.waited('new', 500);
      pace.waited('later', 500);
      for (let run = 0; run < 20; run++) pace.waited(run === 0 ? 'now' : 'next', run === 0 ? 50 : 0);
      await clock.advance(settings.windowMs);
    }
    pace.waited('soon', 0);
    expect(pace.rate).toBe(settings.initialRate);
  });

  it('speeds up by a step a window while new calls wait and the calls in progress do not', async () => {
    const clock = new HandClock();
    const pace = new NewWorkPace(settings, clock);
    admitMany(pace, 50);
    await settle();
    for (let window = 0; window < 3; window++) {
      pace.waited('soon', 0);
      await clock.advance(settings.windowMs);
    }
    pace.waited('soon', 0);
    expect(pace.rate).toBe(settings.initialRate + 3 * settings.step);
  });

  it('lets a waiting new call in at once when a later event of its call raises it (priority inheritance), and one raised before it came', async () => {
    const clock = new HandClock();
    const pace = new NewWorkPace(settings, clock);
    const [raisedLater, raisedBefore] = [new Pace(), new Pace()];
    raisedBefore.raise('soon');
    const first = admitMany(pace, 3);
    const second = admitMany(pace, 1, [raisedLater]);
    const third = admitMany(pace, 1, [raisedBefore]);
    await settle();
    expect([first.admitted(), second.admitted(), third.admitted()]).toEqual([2, 0, 1]);
    raisedLater.raise('now');
    await settle();
    expect(second.admitted()).toBe(1);
    expect(pace.waiting).toBe(1);
  });

  it('is told by a gate how long each holder waited for its place, at the urgency it got it', async () => {
    const told: [string, number][] = [];
    const gate = new Gate(1, (urgency, ms) => told.push([urgency, ms]));
    await gate.acquire('soon');
    let raise: (to: 'now') => void = () => undefined;
    const waiting = gate.acquire('next', { queued: (r) => (raise = r) });
    raise('now');
    gate.release();
    await waiting;
    expect(told.map(([urgency]) => urgency)).toEqual(['soon', 'now']);
    expect(told[0][1]).toBe(0);
    expect(told[1][1]).toBeGreaterThanOrEqual(0);
  });

  it("in a budget: only new work waits for the pace, and new calls waiting for it count as a backlog for new calls and SMS, never for a call's events", async () => {
    const clock = new HandClock();
    const budget = new ConnectionBudget({ realtime: 2, bulk: 1 }, clock);
    const crowd = Array.from({ length: NEW_WORK_PACE.burst + 3 }, () => budget.admit('realtime', 'new'));
    let urgentIn = false;
    void budget.admit('realtime', 'soon').then(() => void (urgentIn = true));
    await settle();
    expect(urgentIn).toBe(true);
    expect(budget.newWork.waiting).toBe(3);
    expect(['now', 'soon', 'next', 'new', 'later'].map((urgency) => budget.waitingAhead('realtime', urgency as 'now'))).toEqual([0, 0, 0, 3, 3]);
    await budget.gates.realtime.acquire('later');
    await budget.gates.realtime.acquire('later');
    void budget.gates.realtime.acquire('soon');
    expect([budget.waitingAhead('realtime', 'soon'), budget.waitingAhead('realtime', 'new')]).toEqual([1, 4]);
    await clock.advance(1000);
    await Promise.all(crowd);
    expect(budget.waitingAhead('realtime', 'new')).toBe(1);
  });
});
