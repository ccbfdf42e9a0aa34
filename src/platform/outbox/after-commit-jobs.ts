import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { Pace, type Lane, type Urgency } from '../database/connection-budget.js';
import type { CteStatement } from '../database/cte-statement.js';
import type { Tx } from '../database/tx.js';
import { afterCommit, afterRollback } from '../database/unit-of-work.js';
import { runUrgency, type JobDefinition } from './job-definition.js';
import { JobRegistry } from './job-registry.js';
import { JobRunner } from './job-runner.js';
import { StatementJobs } from './statement-jobs.js';
import { OutboxMetrics } from './outbox-metrics.js';

/** How many times the lane's places work more urgent than `later` may hold (AfterCommitJobs.reserve). */
const URGENT_PLACES = 4;

/** A job the statement created for this process to run (afterCommitJobs(stmt) of statement-jobs.ts). */
export interface AfterCommitJob {
  /** The job's stored name (JobDefinition.name). */
  name: string;
  jobId: string;
  /** What the creator already holds about the job's subject (JobContext.prefetched). */
  prefetched?: unknown;
  /**
   * The job's payload as its statement wrote it (OutboxService.enqueueMany): an external job run
   * right after that commit starts from it instead of reading its row back (JobRunner.run).
   */
  payload?: unknown;
  /**
   * Jobs with the same turn (the events of one call) run here one after another, in the order
   * they were handed over, so they do not each hold a connection waiting on one another's lock.
   */
  turn?: string;
  /** How soon its run gets its lane's connections (JobRunner.run); default: its job's spec. */
  urgency?: Urgency;
}

/**
 * The order in which statements run concurrently hand their jobs over (aroundStatement): this one's
 * once `after` has settled (the hand-over of the statement begun before it), then `done()`.
 */
export interface HandOverOrder {
  after: Promise<void>;
  done: () => void;
}

/** A reserved place for the jobs of one statement; exactly one of run() or release() is called. */
export interface AfterCommitSlot {
  /** The statement committed and returned these new jobs: runs them now, in the background. */
  run(jobs: AfterCommitJob[]): void;
  /** The statement failed or wrote no job: gives the place back. */
  release(): void;
}

/**
 * Jobs run by the worker whose autocommit statement created them, right after it returned: a
 * new event's first webhook attempt costs no relay batch, no Redis add and no BullMQ fetch and
 * completion. The outbox row stays the source of truth: it is written with run_at a lease
 * ahead (WORKER_AFTER_COMMIT_GRACE_SECONDS), the run gives it its outcome through JobRunner (the
 * same guards as a run from Redis) and stamps it relayed. The row's run_at is a lease this process
 * renews while it holds the job (waiting for its turn or a connection, or running), so a run
 * that lasts is never taken twice, and the row of a process that died (SIGKILL) is taken by the
 * relay within one lease (WORKER_AFTER_COMMIT_GRACE_SECONDS). A run that threw is recorded and
 * handed to the relay at once, to be retried from Redis.
 *
 * Places are reserved before the statement is built, per lane (JobSpec.lane): a process that
 * already runs WORKER_REALTIME_AFTER_COMMIT_JOBS realtime or WORKER_AFTER_COMMIT_JOBS bulk such
 * jobs writes the next ones of that lane due now, for the relay, so customer webhook deliveries
 * stuck on a slow endpoint never take a call's places. When this
 * process falls behind, its runs pile up, its places fill, and new jobs go through Redis to any
 * worker. Runs are not awaited by the statement's caller: a slow customer endpoint holds a place
 * here, never a processing slot, and a carrier's answer never waits on processing.
 */
@Injectable()
export class AfterCommitJobs {
  private readonly logger = new Logger(AfterCommitJobs.name);
  /** The queues this process works (JobWorkers.start); empty: every job goes through the relay. */
  private queues = new Set<string>();
  /** Places held per lane: by statements not yet returned, and by their jobs until these have run. */
  private readonly reserved: Record<Lane, number> = { realtime: 0, bulk: 0 };
  private idleWaiters: (() => void)[] = [];
  /**
   * Per turn handed over here with runs not yet ended: the last run (the next one of that turn
   * starts after it) and the paces of the runs not yet ended, which a more urgent newcomer raises.
   */
  private readonly turns = new Map<string, { last: Promise<void>; paces: Set<Pace> }>();
  /** Jobs handed over here and not yet ended (how many times each): their rows' leases are renewed. */
  private readonly leased = new Map<string, number>();
  private renewal?: NodeJS.Timeout;
  private renewing = false;

  constructor(
    private readonly runner: JobRunner,
    private readonly config: AppConfig,
    private readonly metrics: OutboxMetrics,
    private readonly dataSource: DataSource,
    private readonly registry: JobRegistry,
  ) {}

  /** The worker role turns this on for the queues it works; elsewhere every job goes through the relay. */
  start(queues: readonly string[]): void {
    this.queues = new Set(queues);
    if (!this.renewal && queues.length > 0) {
      this.renewal = setInterval(() => void this.renewLeases(), (this.config.WORKER_AFTER_COMMIT_GRACE_SECONDS * 1000) / 3);
      this.renewal.unref();
    }
  }

  /**
   * Places for the jobs `job` that one statement will create, `places` being as many as it
   * can create (an ingest batch: one per delivery in it; a processing run: one). Undefined when
   * fewer are free, or this process does not work that job's queue, or the job may not run after
   * commit. The places are held until the jobs have run; run() gives back at once those the
   * statement did not use. A statement that fans out (an event for several endpoints) runs all its
   * jobs on its places, so the bound is on statements' expected jobs, not exact.
   * Work more urgent than `later` (a call's events and commands) may hold URGENT_PLACES times
   * the lane's places: an inbound SMS burst that fills the realtime places does not send a call's
   * next event round the relay and Redis, where it would wait behind the burst; nor do many calls
   * at once, whose events hold places while they wait for their calls' turns (200 calls starting
   * in one second held up to ~980). A call's event sent round the relay loses its place in its
   * call's turn here and waited 1.4-4 s for it (issue #43, phase 3); calls' work is bounded
   * first by ingest's refusal on the lane's backlog (INGEST_LANE_BACKLOG_MAX).
   */
  reserve(job: JobDefinition, places = 1, { urgency = 'later' as Urgency } = {}): AfterCommitSlot | undefined {
    if (!job.runsAfterCommit || !this.queues.has(job.queue)) return undefined;
    const lane = job.lane;
    const limit = this.placesOf(lane) * (urgency !== 'later' ? URGENT_PLACES : 1);
    if (places < 1 || this.reserved[lane] + places > limit) return undefined;
    this.reserved[lane] += places;
    let held = places;
    let settled = false;
    const settle = () => {
      if (settled) throw new Error('an after-commit slot is settled once');
      settled = true;
    };
    return {
      run: (jobs) => {
        settle();
        // Places the statement did not use come back now, the rest once its jobs have run.
        const used = Math.min(held, jobs.length);
        this.giveBack(lane, held - used);
        held = used;
        // runOne records its own failures; the places come back however the runs ended.
        void Promise.allSettled(jobs.map((job) => this.leasedWhile(job.jobId, this.inTurn(job)))).then(() => this.giveBack(lane, held));
      },
      release: () => {
        settle();
        this.giveBack(lane, held);
      },
    };
  }

  /**
   * The after-commit protocol around one autocommit statement that may create jobs of the kinds
   * `kinds` (at most `places` of each expected): reserve the places of each kind, so `stmt` writes
   * those jobs a lease ahead for this process instead of due now for the relay
   * (OutboxService.jobsFromCte reads StatementJobs.runAfterCommit: build the statement inside
   * `execute`); run the statement; hand the jobs `handOver` picks from its result to this
   * process's runs, each kind on its own places, or give the places back if it threw or handed
   * none of that kind over. The statement's caller never waits for those runs. `urgency`: of the
   * most urgent job of the first kind (the statement's own) it may create, see reserve; the other
   * kinds reserve at their specs'. Several kinds: a call's set statement runs both its commands
   * (realtime) and its customer events' first webhook attempts (bulk) here, neither round the
   * relay and Redis. `order`: the jobs are handed over only after those of the statement begun
   * before this one (HandOverOrder), while the statement's caller goes on at once.
   */
  async aroundStatement<R>(
    kinds: readonly JobDefinition[],
    places: number,
    stmt: CteStatement,
    execute: () => Promise<R>,
    handOver: (result: R) => AfterCommitJob[],
    { urgency, order }: { urgency?: Urgency; order?: HandOverOrder } = {},
  ): Promise<R> {
    const slots = kinds.map((job, i) => ({ job, slot: this.reserve(job, places, { urgency: i === 0 ? urgency : job.urgency }) }));
    for (const { job, slot } of slots) if (slot) StatementJobs.of(stmt).runAfterCommit.add(job.name);
    let result: R;
    try {
      result = await execute();
    } catch (err) {
      for (const { slot } of slots) slot?.release();
      order?.done();
      throw err;
    }
    // The statement has committed: its after-commit jobs run now (in `order`'s turn), each on its kind's places.
    const handOverNow = () => {
      let handed: AfterCommitJob[];
      try {
        handed = slots.some(({ slot }) => slot) ? handOver(result) : [];
      } catch (err) {
        // Nothing handed over: the places come back, the rows (leased ahead) go to the relay.
        for (const { slot } of slots) slot?.release();
        throw err;
      }
      for (const { job, slot } of slots) {
        if (!slot) continue;
        const own = handed.filter((run) => run.name === job.name);
        if (own.length > 0) slot.run(own);
        else slot.release();
      }
    };
    if (!order) {
      handOverNow();
      return result;
    }
    void order.after.then(() => {
      try {
        handOverNow();
      } catch (err) {
        // The rows are written a lease ahead: the relay takes them once it runs out.
        this.logger.warn(`jobs not handed over after commit (${(err as Error).message}); the relay takes them once their leases run out`);
      } finally {
        order.done();
      }
    });
    return result;
  }

  /**
   * The same protocol around a write inside transaction `tx` that may create `jobs` (undefined:
   * not one to run here), one place each (its urgency the job's spec's): `write` learns which have a
   * place (`here`, to write those a lease ahead) and returns the job ids it inserted. The new
   * ones with a place run once `tx` commits (a job id twice in the list runs once); every place
   * comes back if `write` throws or `tx` rolls back.
   */
  async aroundTransactionalWrite(
    tx: Tx,
    jobs: ({ definition: JobDefinition; run: AfterCommitJob } | undefined)[],
    write: (here: boolean[]) => Promise<Set<string>>,
  ): Promise<Set<string>> {
    const slots = jobs.map((job) => (job ? this.reserve(job.definition, 1, { urgency: job.definition.urgency }) : undefined));
    let inserted: Set<string>;
    try {
      inserted = await write(slots.map((slot) => slot !== undefined));
    } catch (err) {
      slots.forEach((slot) => slot?.release());
      throw err;
    }
    const unclaimed = new Set(inserted);
    const held = jobs.flatMap((job, i) => {
      const slot = slots[i];
      if (!job || !slot) return [];
      return [{ slot, run: unclaimed.delete(job.run.jobId) ? [job.run] : [] }];
    });
    if (held.length > 0) {
      afterCommit(tx, () => held.forEach(({ slot, run }) => slot.run(run)));
      afterRollback(tx, () => held.forEach(({ slot }) => slot.release()));
    }
    return inserted;
  }

  /** Places held now: statements not yet returned, and after-commit jobs not yet run (0: idle). */
  get held(): number {
    return this.reserved.realtime + this.reserved.bulk;
  }

  /**
   * Stops taking places, then waits until every place is given back: statements that hold one
   * have returned and their jobs have run (called once the workers stopped).
   */
  async drain(): Promise<void> {
    this.queues = new Set();
    if (this.held > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    clearInterval(this.renewal);
    this.renewal = undefined;
  }

  /** Holds the lease of job `jobId`'s row until `run` has ended. */
  private leasedWhile(jobId: string, run: Promise<void>): Promise<void> {
    this.leased.set(jobId, (this.leased.get(jobId) ?? 0) + 1);
    return run.finally(() => {
      const left = this.leased.get(jobId)! - 1;
      if (left > 0) this.leased.set(jobId, left);
      else this.leased.delete(jobId);
    });
  }

  /**
   * Pushes the lease of every row this process still holds one lease ahead. Only rows no relay
   * took, with no outcome and whose run here has not failed (attempts = 0: a failure recorded by
   * recordFailure made the row due for the relay, and a renewal between that commit and the end of
   * the run would take it back for a whole lease); SKIP LOCKED: a row locked now is being completed
   * (or claimed by a relay whose lease ran out) and needs none, and the renewal never waits on a
   * job's own locks.
   */
  private async renewLeases(): Promise<void> {
    if (this.renewing || this.leased.size === 0) return;
    this.renewing = true;
    try {
      await this.dataSource.query(
        `UPDATE outbox_jobs SET run_at = now() + make_interval(secs => $2)
          WHERE id IN (SELECT id FROM outbox_jobs WHERE job_id = ANY ($1) AND relayed_at IS NULL AND completed_at IS NULL AND failed_at IS NULL AND attempts = 0 FOR UPDATE SKIP LOCKED)`,
        [[...this.leased.keys()], this.config.WORKER_AFTER_COMMIT_GRACE_SECONDS],
      );
    } catch (err) {
      this.logger.warn(`after-commit leases not renewed (the relay may hand their jobs to Redis, where their guards make a second run a no-op): ${(err as Error).message}`);
    } finally {
      this.renewing = false;
    }
  }

  private placesOf(lane: Lane): number {
    return lane === 'realtime' ? this.config.WORKER_REALTIME_AFTER_COMMIT_JOBS : this.config.WORKER_AFTER_COMMIT_JOBS;
  }

  private giveBack(lane: Lane, places: number): void {
    this.reserved[lane] -= places;
    if (this.held === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /**
   * Runs the job once the previous run of its turn has ended (at once without a turn). The runs
   * ahead of it in its turn inherit its urgency where it is more urgent (Pace): they keep their
   * order, and the job waits for them no longer than it would wait for a connection itself.
   */
  private inTurn(job: AfterCommitJob): Promise<void> {
    if (job.turn === undefined) return this.runOne(job);
    const key = job.turn;
    const turn = this.turns.get(key) ?? { last: Promise.resolve(), paces: new Set<Pace>() };
    const urgency = runUrgency(this.registry.spec(job.name), job.payload, job.urgency);
    if (urgency) for (const ahead of turn.paces) ahead.raise(urgency);
    const pace = new Pace();
    turn.paces.add(pace);
    const run = turn.last.then(() => this.runOne(job, pace)).finally(() => turn.paces.delete(pace));
    turn.last = run;
    this.turns.set(key, turn);
    // The last of a turn forgets it, so the map holds only turns with runs pending.
    void run.then(() => {
      if (this.turns.get(key)?.last === run) this.turns.delete(key);
    });
    return run;
  }

  private async runOne({ name, jobId, prefetched, payload, urgency }: AfterCommitJob, pace?: Pace): Promise<void> {
    const queue = this.registry.spec(name).queue;
    try {
      const outcome = await this.runner.run(name, jobId, 1, { prefetched, payload, urgency, pace });
      this.metrics.jobOutcomes.inc({ queue, name, outcome });
    } catch (err) {
      try {
        // Recorded on the row, which the same statement makes due now: the relay takes it at once.
        const outcome = await this.runner.recordFailure(name, jobId, err, this.runner.isPermanent(err));
        this.metrics.jobOutcomes.inc({ queue, name, outcome });
      } catch (e) {
        this.logger.warn(`job ${jobId} failed after commit (${(err as Error).message}) and could not be recorded: ${(e as Error).message}; the relay takes it once its lease runs out`);
      }
    }
  }
}
