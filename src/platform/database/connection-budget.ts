import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool, PoolClient } from 'pg';
import { NEW_WORK_PACE, NewWorkPace, type PaceClock } from './new-work-pace.js';
import { mostUrgent, URGENCIES, type Urgency } from './urgency.js';

/**
 * A lane of background work: `realtime` is what a caller hears (call events, call commands, join
 * timeouts, an inbound event's processing), `bulk` what can wait (customer webhook deliveries,
 * outbound dispatch, transcripts, housekeeping). Work outside any lane (the customer API, ingest,
 * the relay) draws on the connections neither lane may take.
 */
export type Lane = 'realtime' | 'bulk';

export { mostUrgent, type Urgency } from './urgency.js';

interface LaneRun {
  lane: Lane;
  urgency: Urgency;
  /** It sends what is decided (an external job: a call's commands): ahead of runs of its urgency that decide. */
  sends: boolean;
  /** Connections this run holds through its lane's budget (a nested one goes straight to the pool). */
  holding: number;
  /** While it waits for its lane's connection: moves that wait to a more urgent place (Gate.acquire's `queued`). */
  raiseWaiting?: (urgency: Urgency) => void;
}

const currentRun = new AsyncLocalStorage<LaneRun>();

/**
 * Runs `work` as one piece of `lane`'s work: the connections it takes count against that lane's
 * budget, and it waits for them by its `urgency`: a call's commands and events never wait behind
 * an inbound SMS burst's processing, and a call's next command behind no other call's events.
 */
export function inLane<T>(lane: Lane, work: () => Promise<T>, { urgency = 'later' as Urgency, sends = false, pace }: { urgency?: Urgency; sends?: boolean; pace?: Pace } = {}): Promise<T> {
  const run: LaneRun = { lane, holding: 0, urgency: pace?.raised ? mostUrgent([urgency, pace.raised]) : urgency, sends };
  if (!pace) return currentRun.run(run, work);
  pace.runs.add(run);
  return currentRun.run(run, work).finally(() => pace.runs.delete(run));
}

/** The run waits for its connections as `urgency` from now on if that is more urgent, the one it waits for now included. */
function raiseRun(run: LaneRun, urgency: Urgency): void {
  if (mostUrgent([run.urgency, urgency]) === run.urgency) return;
  run.urgency = urgency;
  run.raiseWaiting?.(urgency);
}

/**
 * An urgency raised from outside the runs given it (inLane's `pace`), by what waits for them to
 * end: priority inheritance. A call's answer (`now`) waiting in its call's turn behind the call's
 * earlier event (`soon`) raises that run's pace to `now`: the earlier run then gets its
 * connection ahead of other calls' `soon` work, the connection it is waiting for now included,
 * instead of the answer waiting behind those too. Runs given the pace later start at it.
 */
export class Pace {
  /** The most urgent urgency raised so far (none: the runs keep their own). */
  raised: Urgency | undefined;
  /** The runs given this pace that have not ended. */
  readonly runs = new Set<LaneRun>();
  /** Told of every raise: a run still waiting to be let in as new work (NewWorkPace.admit). */
  private readonly listeners: (() => void)[] = [];

  raise(urgency: Urgency): void {
    this.raised = this.raised ? mostUrgent([this.raised, urgency]) : urgency;
    for (const run of this.runs) raiseRun(run, urgency);
    for (const listener of this.listeners) listener();
  }

  onRaise(listener: () => void): void {
    this.listeners.push(listener);
  }
}

/**
 * From here on, the current run (inLane) waits for its connections as `urgency` if that is more
 * urgent than its own: a dial job once the carrier has the dial, whose result the leg's own events
 * (which the carrier sends next, and which go `now` or `soon`) would otherwise find unrecorded.
 */
export function hurry(urgency: Urgency): void {
  const run = currentRun.getStore();
  if (run) raiseRun(run, urgency);
}

/**
 * A counting semaphore: `limit` holders at once, the rest wait by urgency, and within an urgency
 * what sends a decision (`sends`: a join's or a hand-off's commands) before what decides (other
 * calls' answers, leg hangups), each in arrival order: what is decided goes out before more is decided.
 */
export class Gate {
  private holders = 0;
  private readonly waiters: Record<Urgency, { sends: (() => void)[]; decides: (() => void)[] }> = {
    now: { sends: [], decides: [] }, soon: { sends: [], decides: [] }, next: { sends: [], decides: [] }, new: { sends: [], decides: [] }, later: { sends: [], decides: [] },
  };

  /**
   * `waited`: told how long each holder waited for its place (0: none), by its urgency at the
   * time it got it (the lane's NewWorkPace reads the calls in progress' waits from it).
   */
  constructor(
    readonly limit: number,
    private readonly waited: (urgency: Urgency, ms: number) => void = () => undefined,
  ) {}

  get waiting(): number {
    return this.waitingAhead('later');
  }

  /** The waiters a newcomer of `urgency` would wait behind (itself not counted). */
  waitingAhead(urgency: Urgency): number {
    let ahead = 0;
    for (const level of URGENCIES) {
      ahead += this.waiters[level].sends.length + this.waiters[level].decides.length;
      if (level === urgency) break;
    }
    return ahead;
  }

  get held(): number {
    return this.holders;
  }

  /**
   * `queued`: told, if this has to wait, how to move the wait to a more urgent urgency (to the end
   * of that urgency's waiters, as if it arrived now; a no-op once the place is given or for one
   * no more urgent than where it waits).
   */
  acquire(urgency: Urgency = 'later', { sends = false, queued }: { sends?: boolean; queued?: (raise: (to: Urgency) => void) => void } = {}): Promise<void> {
    if (this.holders < this.limit) {
      this.holders++;
      this.waited(urgency, 0);
      return Promise.resolve();
    }
    const kind = sends ? 'sends' : 'decides';
    const since = performance.now();
    let at = urgency;
    return new Promise<void>((resolve) => {
      this.waiters[urgency][kind].push(resolve);
      queued?.((to) => {
        const place = this.waiters[at][kind].indexOf(resolve);
        if (place < 0 || mostUrgent([at, to]) === at) return;
        this.waiters[at][kind].splice(place, 1);
        this.waiters[to][kind].push(resolve);
        at = to;
      });
    }).then(() => this.waited(at, performance.now() - since));
  }

  release(): void {
    let next: (() => void) | undefined;
    for (const level of URGENCIES) if ((next = this.waiters[level].sends.shift() ?? this.waiters[level].decides.shift())) break;
    // The place passes straight to the next waiter: the count stays.
    if (next) next();
    else this.holders--;
  }
}

type ConnectCallback = (err: Error | undefined, client: PoolClient | undefined, release: (err?: unknown) => void) => void;

/**
 * Per-lane database connection budgets over the one pool: a lane's work waits for one of its own
 * connections in memory (in order, with no timeout) instead of in the pool's queue, where it would
 * crowd out the customer API and ingest and fail after the pool's connect timeout. The connections
 * no lane may take (pool size minus both budgets) stay for work outside the lanes. A run that
 * already holds a connection of its lane takes a second one straight from the pool, so a run never
 * waits on its own lane while holding it.
 */
export class ConnectionBudget {
  readonly gates: Record<Lane, Gate>;
  /**
   * The pace at which the realtime lane lets new work in (NewWorkPace), read from its gate's
   * waits: new work (`new`) is a new call's first event, realtime work; the bulk lane has none.
   */
  readonly newWork: NewWorkPace;

  /** `paceClock`: the pace's clock (a test's; default the process's). */
  constructor(budgets: Record<Lane, number>, paceClock?: PaceClock) {
    this.newWork = new NewWorkPace(NEW_WORK_PACE, paceClock);
    this.gates = { realtime: new Gate(budgets.realtime, (urgency, ms) => this.newWork.waited(urgency, ms)), bulk: new Gate(budgets.bulk) };
  }

  /**
   * Resolves when a run of `lane` at `urgency` may start: at once, but for new work (`new`), which
   * waits for the pace (NewWorkPace; `pace`: see NewWorkPace.admit).
   */
  admit(lane: Lane, urgency: Urgency, pace?: Pace): Promise<void> {
    return urgency === 'new' && lane === 'realtime' ? this.newWork.admit(pace) : Promise.resolve();
  }

  /**
   * The runs of `lane` a newcomer of `urgency` would wait behind: for a connection, and on the
   * realtime lane for new work (`new` and less urgent) also the new work waiting for the pace.
   */
  waitingAhead(lane: Lane, urgency: Urgency): number {
    const paced = lane === 'realtime' && mostUrgent([urgency, 'new']) === 'new' ? this.newWork.waiting : 0;
    return this.gates[lane].waitingAhead(urgency) + paced;
  }

  /** A lane whose connections are all in use and that has work waiting for one: a sign to take on less. */
  saturated(lane: Lane): boolean {
    return this.gates[lane].waiting > 0;
  }

  /** Puts the budget in front of `pool.connect`, in both its promise and callback forms (pg's own query() uses the latter). */
  install(pool: Pool): void {
    const connect = pool.connect.bind(pool) as (cb?: ConnectCallback) => Promise<PoolClient> | void;
    (pool as unknown as { connect: (cb?: ConnectCallback) => Promise<PoolClient> | void }).connect = (cb?: ConnectCallback) => {
      const run = currentRun.getStore();
      if (!run || run.holding > 0) return connect(cb);
      const gate = this.gates[run.lane];
      run.holding++;
      let given = false;
      const giveBack = () => {
        if (given) return;
        given = true;
        run.holding--;
        gate.release();
      };
      const acquired = gate.acquire(run.urgency, { sends: run.sends, queued: (raise) => (run.raiseWaiting = raise) }).then(() => {
        run.raiseWaiting = undefined;
      });
      if (cb) {
        void acquired.then(() => {
          connect((err, client, release) => {
            if (err || !client) {
              giveBack();
              return cb(err, client, release);
            }
            cb(undefined, client, releasing(client, giveBack));
          });
        });
        return undefined;
      }
      return acquired
        .then(() => connect() as Promise<PoolClient>)
        .then(
          (client) => {
            releasing(client, giveBack);
            return client;
          },
          (err: unknown) => {
            giveBack();
            throw err;
          },
        );
    };
  }
}

/** Wraps this checkout's release (pg-pool sets a new one per checkout) so the budget comes back with the connection. */
function releasing(client: PoolClient, giveBack: () => void): (err?: unknown) => void {
  const release = client.release.bind(client) as (err?: unknown) => void;
  const wrapped = (err?: unknown) => {
    giveBack();
    return release(err);
  };
  client.release = wrapped as PoolClient['release'];
  return wrapped;
}
