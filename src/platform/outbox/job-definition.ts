import type { Provider } from '@nestjs/common';
import type { Lane, Urgency } from '../database/connection-budget.js';

/**
 * How the outbox runs one kind of job. The module that owns a job declares it (its
 * `<module>.jobs.ts`, registered with declareJobs in its @Module) beside the one @HandlesJob
 * provider that runs it; JobRegistry fails boot unless every declared job has exactly one handler.
 */
export interface JobSpec {
  /** The BullMQ queue (one Worker per queue): jobs that must not wait behind each other get their own. */
  queue: string;
  /**
   * realtime: what a caller hears or waits for (call events and commands, join timeouts, an
   * inbound event's processing); bulk: what can wait (customer webhooks, outbound dispatch,
   * transcripts, housekeeping). Each lane has its own after-commit places and its own database
   * connection budget (DATABASE_REALTIME_CONNECTIONS, DATABASE_BULK_CONNECTIONS), so bulk work
   * never holds up a ring plan.
   */
  lane: Lane;
  /**
   * How soon a run gets its lane's next free connection (Urgency; default `later`): `now` for a
   * call's commands, `soon` for what decides them (a call's events, join timeouts). A run after
   * commit may say otherwise (AfterCommitJob.urgency): the job that processes a call's event also
   * processes an inbound SMS (`later`), but a run from Redis cannot tell them apart before it
   * reads the event.
   */
  urgency?: Urgency;
  /**
   * The urgency of one job of this kind from its payload, where the payload tells (a call's
   * commands: the join of an answered leg `now`, a new call's first dial `next`); used for a run
   * that starts from its payload (after commit), before `urgency`.
   */
  urgencyOf?: (payload: never) => Urgency | undefined;
  /**
   * transactional: the handler's writes and the job's completion commit together, so a job
   * redelivered by Redis runs its transaction once. external: the handler talks to the outside
   * world, is at least once, and must guard its own writes.
   */
  mode: 'transactional' | 'external';
  /** BullMQ attempts before the job is recorded failed in Postgres. */
  attempts: number;
  /** Base of the exponential backoff between attempts. */
  backoffMs: number;
  /**
   * May be run by the worker process whose autocommit statement created it, right after that
   * statement returned, instead of going through the relay and Redis (AfterCommitJobs); its row
   * is leased for WORKER_AFTER_COMMIT_GRACE_SECONDS (renewed while the run lasts) before the relay may hand it to Redis.
   */
  runsAfterCommit?: boolean;
}

/**
 * How soon one run of `spec` gets its lane's connections: the urgency it was given (a run after
 * commit: AfterCommitJob.urgency), else its payload's (`urgencyOf`), else the spec's; undefined
 * where none says (the lane's default, `later`).
 */
export function runUrgency(spec: JobSpec, payload: unknown, given?: Urgency): Urgency | undefined {
  return given ?? (payload !== undefined ? spec.urgencyOf?.(payload as never) : undefined) ?? spec.urgency;
}

/** One kind of job: its stored name (outbox_jobs.name, the BullMQ job name), how it runs, and (as a type) its payload. */
export interface JobDefinition<P = unknown> extends JobSpec {
  readonly name: string;
  /** Type only, never set: the payload the job carries (outbox_jobs.data). */
  readonly payload?: P;
}

/** The payload type of a job definition. */
export type PayloadOf<J> = J extends JobDefinition<infer P> ? P : never;

/** Job and queue names are stored and used as SQL literals (OutboxService.jobsFromCte): lowercase words and dashes. */
const NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** Declares one job; `P` is its payload. Stored names never change (rows in Postgres and Redis carry them). */
export function defineJob<P>(definition: JobSpec & { name: string }): JobDefinition<P> {
  for (const word of [definition.name, definition.queue]) {
    if (!NAME.test(word)) throw new Error(`job and queue names are lowercase words joined by dashes, not ${JSON.stringify(word)}`);
  }
  return Object.freeze({ ...definition });
}

/** The jobs one module declares (found by JobRegistry at boot). */
export class DeclaredJobs {
  constructor(readonly jobs: readonly JobDefinition[]) {}
}

/** The provider a module lists to declare its jobs: `providers: [declareJobs(AJob, BJob), AHandler, BHandler]`. */
export function declareJobs(...jobs: JobDefinition[]): Provider {
  return { provide: Symbol(`jobs ${jobs.map((job) => job.name).join(', ')}`), useValue: new DeclaredJobs(jobs) };
}

/** BullMQ rejects jobIds containing ':' or made only of digits. */
export const JOB_ID_PATTERN = /^(?!\d+$)[A-Za-z0-9_.-]{1,200}$/;
