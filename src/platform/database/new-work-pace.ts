import { readFileSync } from 'node:fs';
import type { Urgency } from './urgency.js';

/** What the pace needs of a run's Pace (connection-budget.ts): whether, and when, it is raised. */
interface Raisable {
  readonly raised: Urgency | undefined;
  onRaise(listener: () => void): void;
}

/**
 * How the pace adapts (issue #43), once a window (`windowMs`): a wait of the calls in progress
 * for a connection longer than `targetWaitMs` in more than `lateShare` of the window's runs, or
 * the machine's CPUs busier than `cpuBusyMax`, is congestion, and the rate falls to `decrease` of
 * itself; a window without congestion in which new work waited raises it by `step` (additive
 * increase, multiplicative decrease: it settles just under the knee and backs off fast when the
 * work in progress outgrows the machine). `minRate`: a new call is never starved.
 */
export const NEW_WORK_PACE = {
  targetWaitMs: 10,
  lateShare: 0.1,
  windowMs: 100,
  initialRate: 50,
  minRate: 5,
  maxRate: 5000,
  step: 2,
  decrease: 0.8,
  /** Admissions taken at once by a lane that has been quiet: a lone new call never waits. */
  burst: 8,
  /**
   * New calls let in together when more wait (at most `burst`): calls that start together ring,
   * hand off and answer together, so the set statements decide their events together. Let in one
   * by one, 200 calls' events came spread out and were decided in sets of ~1.2, at 5.3-7 ms of
   * CPU a call event; in groups of 8, 3.0-3.6 ms (issue #43, docs/benchmarks.md).
   */
  cohort: 8,
  /**
   * A window in which this machine's CPUs were busier than this is congestion too: with
   * PostgreSQL on the same cores (one `all` process beside its database, as `npm start` runs),
   * the calls in progress wait for CPU, not for connections, and no connection wait shows it
   * (200 calls: gate waits near 0 while each hand-off stage took 30-40 ms, issue #43).
   */
  cpuBusyMax: 0.85,
};

export type NewWorkPaceSettings = typeof NEW_WORK_PACE;

/** A clock, a timer and the machine's CPU, so a unit test can drive the pace by hand. */
export interface PaceClock {
  now(): number;
  after(ms: number, fn: () => void): void;
  /** The share of the machine's CPU time busy since the last call (undefined: unknown here). */
  cpuBusy(): number | undefined;
}

/** CPU times since boot from /proc/stat's first line (Linux): busy and all, in ticks. */
function cpuTicks(): { busy: number; all: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'latin1').slice(0, 200).split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
    const all = fields.reduce((sum, n) => sum + n, 0);
    // idle and iowait are the idle ones.
    return { busy: all - fields[3] - fields[4], all };
  } catch {
    return undefined;
  }
}

function realClock(): PaceClock {
  let last = cpuTicks();
  return {
    now: () => performance.now(),
    after: (ms, fn) => void setTimeout(fn, ms).unref(),
    cpuBusy: () => {
      const now = cpuTicks();
      const [before, after] = [last, now];
      last = now;
      if (!before || !after || after.all <= before.all) return undefined;
      return (after.busy - before.busy) / (after.all - before.all);
    },
  };
}

/** The urgencies whose waits say whether the lane has room: the work of calls in progress. */
const IN_PROGRESS: readonly Urgency[] = ['now', 'soon', 'next'];

/**
 * The pace at which a lane takes on new work (urgency `new`: a new call's first event, which
 * brings every later event of that call with it). The lane serves more urgent work first
 * (Gate), but that order only decides who gets the next free connection: whenever the lane is
 * free for a moment (all calls in progress are ringing), every new call waiting took it, and 200
 * calls starting in one second all became calls in progress at once, each hand-off then waiting
 * behind the other calls' (p99 0.4-0.5 s at 2 cores, issue #43). New work is let in at a rate
 * instead (a token bucket, in cohorts), adapted to what the calls in progress wait for a
 * connection and to the machine's CPU (AIMD, NEW_WORK_PACE): as fast as the lane keeps its
 * promise to them, no faster. New calls wait for
 * their first dial instead (by the order of Urgency: hand-offs before new calls' first dials).
 * Admission is the only thing paced: an admitted call's later events are never held here.
 */
export class NewWorkPace {
  /** Admissions a second, now. */
  rate: number;
  private tokens: number;
  private refilledAt: number;
  private readonly waiters: { admit: () => void }[] = [];
  /** A wake-up for the next group is set. */
  private woken = false;
  private window: { startedAt: number; runs: number; late: number; held: boolean };

  constructor(
    private readonly settings: NewWorkPaceSettings = NEW_WORK_PACE,
    private readonly clock: PaceClock = realClock(),
  ) {
    if (settings.cohort > settings.burst) throw new Error('a cohort larger than the burst would never be let in');
    this.rate = settings.initialRate;
    this.tokens = settings.burst;
    this.refilledAt = clock.now();
    this.window = { startedAt: this.refilledAt, runs: 0, late: 0, held: false };
  }

  /** New work waiting to be let in. */
  get waiting(): number {
    return this.waiters.length;
  }

  /**
   * A run of the lane got its connection after `waitedMs` (Gate): a run of a call in progress
   * counts toward the window's verdict; other urgencies say nothing about the calls' room.
   */
  waited(urgency: Urgency, waitedMs: number): void {
    if (!IN_PROGRESS.includes(urgency)) return;
    this.adapt();
    this.window.runs++;
    if (waitedMs > this.settings.targetWaitMs) this.window.late++;
  }

  /**
   * Resolves when one more piece of new work may start. `pace`: a run raised above `new` while it
   * waits here (a later event of the same call needs it done: priority inheritance, Pace) goes at
   * once, as does one raised before it came.
   */
  admit(pace?: Raisable): Promise<void> {
    if (pace?.raised && IN_PROGRESS.includes(pace.raised)) return Promise.resolve();
    this.adapt();
    this.refill();
    if (this.waiters.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return Promise.resolve();
    }
    this.window.held = true;
    return new Promise<void>((resolve) => {
      const waiter = { admit: resolve };
      this.waiters.push(waiter);
      pace?.onRaise(() => {
        const at = this.waiters.indexOf(waiter);
        if (at < 0) return;
        this.waiters.splice(at, 1);
        resolve();
      });
      this.schedule();
    });
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.settings.burst, this.tokens + ((now - this.refilledAt) * this.rate) / 1000);
    this.refilledAt = now;
  }

  /** The waiters let in at once next: a cohort, or all of them when fewer wait. */
  private get nextGroup(): number {
    return Math.min(this.waiters.length, this.settings.cohort);
  }

  /** Lets in the next group once the tokens cover it (and any more they cover); wakes again for the next. */
  private release(): void {
    this.woken = false;
    this.adapt();
    this.refill();
    if (this.tokens >= this.nextGroup) {
      while (this.waiters.length > 0 && this.tokens >= 1) {
        this.tokens -= 1;
        this.waiters.shift()!.admit();
      }
    }
    if (this.waiters.length > 0) this.window.held = true;
    this.schedule();
  }

  private schedule(): void {
    if (this.woken || this.waiters.length === 0) return;
    const ms = Math.max(1, ((this.nextGroup - this.tokens) * 1000) / this.rate);
    this.woken = true;
    this.clock.after(ms, () => this.release());
  }

  /** Closes the window once it is over: the rate falls if the calls in progress waited, rises if new work did. */
  private adapt(): void {
    const now = this.clock.now();
    const { windowMs, lateShare, decrease, step, minRate, maxRate, cpuBusyMax } = this.settings;
    if (now - this.window.startedAt < windowMs) return;
    this.refill();
    const { runs, late, held } = this.window;
    const cpuBusy = this.clock.cpuBusy() ?? 0;
    if ((runs > 0 && late > runs * lateShare) || cpuBusy > cpuBusyMax) this.rate = Math.max(minRate, this.rate * decrease);
    else if (held) this.rate = Math.min(maxRate, this.rate + step);
    this.window = { startedAt: now, runs: 0, late: 0, held: this.waiters.length > 0 };
  }
}
