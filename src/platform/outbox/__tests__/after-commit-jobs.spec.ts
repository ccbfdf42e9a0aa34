import { describe, expect, it } from '@jest/globals';
import { CteStatement } from '../../database/cte-statement.js';
import { AfterCommitJobs } from '../after-commit-jobs.js';
import { defineJob, type JobDefinition } from '../job-definition.js';
import type { JobRegistry } from '../job-registry.js';
import type { JobRunner, RunOptions } from '../job-runner.js';
import { StatementJobs } from '../statement-jobs.js';
import type { AppConfig } from '../../config/app-config.js';
import type { OutboxMetrics } from '../outbox-metrics.js';
import type { DataSource } from 'typeorm';

/** Jobs of this spec's own (the outbox knows no feature's): two realtime queues, one bulk. */
const spec = { mode: 'transactional', attempts: 1, backoffMs: 1 } as const;
const Realtime = defineJob({ ...spec, name: 'realtime-job', queue: 'realtime-queue', lane: 'realtime', runsAfterCommit: true });
const OtherRealtime = defineJob({ ...spec, name: 'other-realtime-job', queue: 'other-realtime-queue', lane: 'realtime', runsAfterCommit: true });
const Bulk = defineJob({ ...spec, name: 'bulk-job', queue: 'bulk-queue', lane: 'bulk', runsAfterCommit: true });
const BulkViaRelay = defineJob({ ...spec, name: 'bulk-via-relay-job', queue: 'bulk-queue', lane: 'bulk' });
const registry = { spec: (name: string) => [Realtime, OtherRealtime, Bulk, BulkViaRelay].find((job) => job.name === name) as JobDefinition } as JobRegistry;

/** A runner whose runs end when the test says so. */
function heldRunner() {
  const pending: { jobId: string; finish: () => void }[] = [];
  const runner = {
    run: (_name: string, jobId: string) => new Promise<'completed'>((resolve) => pending.push({ jobId, finish: () => resolve('completed') })),
  } as unknown as JobRunner;
  return {
    runner,
    finishAll: () => pending.splice(0).forEach((run) => run.finish()),
    running: () => pending.length,
    runningIds: () => pending.map((run) => run.jobId),
  };
}

/** `places` for both lanes unless `bulkPlaces` is given. */
function afterCommitJobs(places: number, runner: JobRunner, bulkPlaces = places) {
  const metrics = { jobOutcomes: { inc: () => undefined } } as unknown as OutboxMetrics;
  return new AfterCommitJobs(runner, { WORKER_REALTIME_AFTER_COMMIT_JOBS: places, WORKER_AFTER_COMMIT_JOBS: bulkPlaces } as AppConfig, metrics, { query: async () => [] } as unknown as DataSource, registry);
}

const jobs = (n: number) => Array.from({ length: n }, (_, i) => ({ name: Realtime.name, jobId: `cev_${i}` }));
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('AfterCommitJobs places', () => {
  it('only for the queues this process works, and only for jobs that may run after commit', () => {
    const jobsHere = afterCommitJobs(8, heldRunner().runner);
    expect(jobsHere.reserve(Realtime)).toBeUndefined(); // not started: no worker here
    jobsHere.start([Bulk.queue]);
    expect(jobsHere.reserve(Realtime)).toBeUndefined(); // its queue is worked elsewhere
    expect(jobsHere.reserve(Bulk)).toBeDefined();
    expect(jobsHere.reserve(BulkViaRelay)).toBeUndefined(); // its spec does not allow it
  });

  it('a batch takes as many places as it may create jobs; too few free sends it all to the relay; unused places come back at run()', async () => {
    const held = heldRunner();
    const jobsHere = afterCommitJobs(10, held.runner);
    jobsHere.start([Realtime.queue]);
    const batch = jobsHere.reserve(Realtime, 8)!;
    expect(jobsHere.reserve(Realtime, 3)).toBeUndefined(); // 2 free, 3 asked
    // 8 deliveries, 5 of them new: 3 places come back at once, 5 are held until the runs end.
    batch.run(jobs(5));
    expect(held.running()).toBe(5);
    const next = jobsHere.reserve(Realtime, 5)!;
    expect(next).toBeDefined();
    expect(jobsHere.reserve(Realtime)).toBeUndefined();
    next.release();
    held.finishAll();
    await settled();
    expect(jobsHere.reserve(Realtime, 10)).toBeDefined();
  });

  it('a slot is settled once', () => {
    const jobsHere = afterCommitJobs(2, heldRunner().runner);
    jobsHere.start([Realtime.queue]);
    const slot = jobsHere.reserve(Realtime)!;
    slot.release();
    expect(() => slot.release()).toThrow(/settled once/);
    expect(() => slot.run(jobs(1))).toThrow(/settled once/);
  });
});

describe('AfterCommitJobs around one statement', () => {
  it('the statement is told to write its jobs for this process, the jobs it hands over run here, the rest of the places come back', async () => {
    const held = heldRunner();
    const jobsHere = afterCommitJobs(4, held.runner);
    jobsHere.start([Realtime.queue]);
    const stmt = new CteStatement();
    const result = await jobsHere.aroundStatement([Realtime], 3, stmt, async () => ({ written: [...StatementJobs.of(stmt).runAfterCommit] }), () => jobs(2));
    expect(result).toEqual({ written: [Realtime.name] });
    expect(held.runningIds()).toEqual(['cev_0', 'cev_1']);
    expect(jobsHere.held).toBe(2);
    held.finishAll();
    await settled();
    expect(jobsHere.held).toBe(0);
  });

  it('a statement that throws or hands nothing over gives every place back; with no place free it writes its jobs for the relay', async () => {
    const held = heldRunner();
    const jobsHere = afterCommitJobs(2, held.runner);
    jobsHere.start([Realtime.queue]);
    await expect(jobsHere.aroundStatement([Realtime], 2, new CteStatement(), async () => Promise.reject(new Error('refused')), () => jobs(2))).rejects.toThrow('refused');
    expect(jobsHere.held).toBe(0);
    await jobsHere.aroundStatement([Realtime], 2, new CteStatement(), async () => undefined, () => []);
    expect(jobsHere.held).toBe(0);
    const stmt = new CteStatement();
    await jobsHere.aroundStatement([Realtime], 3, stmt, async () => undefined, () => jobs(3));
    expect([...StatementJobs.of(stmt).runAfterCommit]).toEqual([]);
    expect(held.running()).toBe(0);
  });

  it('several kinds: each has its own places in its own lane, runs the jobs of its kind handed over, and a kind with no place free is written for the relay', async () => {
    const held = heldRunner();
    const jobsHere = afterCommitJobs(4, held.runner, 1);
    jobsHere.start([Realtime.queue, Bulk.queue]);
    const stmt = new CteStatement();
    const handed = [...jobs(2), { name: Bulk.name, jobId: 'dlv_0' }];
    await jobsHere.aroundStatement([Realtime, Bulk], 2, stmt, async () => undefined, () => handed);
    // The bulk lane has one place: two asked, none reserved, so its jobs were due now for the relay.
    expect([...StatementJobs.of(stmt).runAfterCommit]).toEqual([Realtime.name]);
    expect(held.runningIds()).toEqual(['cev_0', 'cev_1']);
    held.finishAll();
    await settled();
    const both = new CteStatement();
    await jobsHere.aroundStatement([Realtime, Bulk], 1, both, async () => undefined, () => [{ name: Bulk.name, jobId: 'dlv_1' }]);
    expect([...StatementJobs.of(both).runAfterCommit]).toEqual([Realtime.name, Bulk.name]);
    expect(held.runningIds()).toEqual(['dlv_1']);
    // The realtime kind handed nothing over: its place came back at once.
    expect(jobsHere.held).toBe(1);
    held.finishAll();
    await settled();
    expect(jobsHere.held).toBe(0);
  });
});

describe('AfterCommitJobs lanes and turns', () => {
  it("each lane has its own places: customer webhooks holding every bulk place leave a call's places free", () => {
    const jobsHere = afterCommitJobs(2, heldRunner().runner, 3);
    jobsHere.start([Realtime.queue, Bulk.queue, OtherRealtime.queue]);
    expect(jobsHere.reserve(Bulk, 3)).toBeDefined();
    expect(jobsHere.reserve(Bulk)).toBeUndefined();
    expect(jobsHere.reserve(Realtime)).toBeDefined();
    expect(jobsHere.reserve(OtherRealtime)).toBeDefined();
    expect(jobsHere.reserve(OtherRealtime)).toBeUndefined();
  });

  it("ordinary work (an SMS burst) holding every realtime place leaves urgent work (a call's events and commands) three times as many more", () => {
    const jobsHere = afterCommitJobs(8, heldRunner().runner);
    jobsHere.start([Realtime.queue, OtherRealtime.queue]);
    expect(jobsHere.reserve(Realtime, 8)).toBeDefined(); // an SMS burst
    expect(jobsHere.reserve(Realtime)).toBeUndefined();
    expect(jobsHere.reserve(Realtime, 20, { urgency: 'soon' })).toBeDefined(); // calls' events
    expect(jobsHere.reserve(OtherRealtime, 3, { urgency: 'now' })).toBeDefined(); // calls' commands
    expect(jobsHere.reserve(Realtime, 1, { urgency: 'new' })).toBeDefined(); // a new call
    expect(jobsHere.reserve(Realtime, 1, { urgency: 'soon' })).toBeUndefined(); // 4 × 8 places: all taken
  });

  it('jobs of one turn run one after another in the order handed over; other turns run beside them', async () => {
    const held = heldRunner();
    const jobsHere = afterCommitJobs(8, held.runner);
    jobsHere.start([Realtime.queue]);
    jobsHere.reserve(Realtime, 3)!.run([
      { name: Realtime.name, jobId: 'a1', turn: 'call-a' },
      { name: Realtime.name, jobId: 'a2', turn: 'call-a' },
      { name: Realtime.name, jobId: 'b1', turn: 'call-b' },
    ]);
    await settled();
    expect(held.runningIds()).toEqual(['a1', 'b1']);
    held.finishAll();
    await settled();
    expect(held.runningIds()).toEqual(['a2']);
    held.finishAll();
    await settled();
    expect(jobsHere.held).toBe(0);
  });

  it("the runs ahead in a turn inherit a newcomer's urgency where it is more urgent (their paces), in their order; other turns keep theirs", async () => {
    const pending: { jobId: string; options: RunOptions; finish: () => void }[] = [];
    const runner = {
      run: (_name: string, jobId: string, _attempt: number, options: RunOptions) => new Promise<'completed'>((resolve) => pending.push({ jobId, options, finish: () => resolve('completed') })),
    } as unknown as JobRunner;
    const jobsHere = afterCommitJobs(8, runner);
    jobsHere.start([Realtime.queue]);
    jobsHere.reserve(Realtime, 3, { urgency: 'soon' })!.run([
      { name: Realtime.name, jobId: 'a-hangup', turn: 'call-a', urgency: 'soon' },
      { name: Realtime.name, jobId: 'a-receipt', turn: 'call-a', urgency: 'later' },
      { name: Realtime.name, jobId: 'b-hangup', turn: 'call-b', urgency: 'soon' },
    ]);
    await settled();
    expect(pending.map((run) => run.jobId)).toEqual(['a-hangup', 'b-hangup']);
    const paceOf = (jobId: string) => pending.find((run) => run.jobId === jobId)!.options.pace!;
    expect(paceOf('a-hangup').raised).toBe('later'); // a less urgent newcomer: the run keeps its own `soon`
    jobsHere.reserve(Realtime, 1, { urgency: 'now' })!.run([{ name: Realtime.name, jobId: 'a-answer', turn: 'call-a', urgency: 'now' }]);
    await settled();
    expect(paceOf('a-hangup').raised).toBe('now');
    expect(paceOf('b-hangup').raised).toBeUndefined();
    // Still in order: the answer waits for the call's runs ahead of it, which now run at its urgency.
    pending.splice(0).forEach((run) => run.finish());
    await settled();
    expect(pending.map((run) => [run.jobId, run.options.pace!.raised])).toEqual([['a-receipt', 'now']]);
    pending.splice(0).forEach((run) => run.finish());
    await settled();
    expect(pending.map((run) => [run.jobId, run.options.pace!.raised])).toEqual([['a-answer', undefined]]);
    pending.splice(0).forEach((run) => run.finish());
    await settled();
    expect(jobsHere.held).toBe(0);
  });
});

describe('AfterCommitJobs drain', () => {
  it('stops taking places, and waits for a statement still holding places and for the jobs it then runs', async () => {
    const held = heldRunner();
    const jobsHere = afterCommitJobs(8, held.runner);
    jobsHere.start([Realtime.queue]);
    const slot = jobsHere.reserve(Realtime, 2)!;
    let drained = false;
    const draining = jobsHere.drain().then(() => (drained = true));
    expect(jobsHere.reserve(Realtime)).toBeUndefined();
    await settled();
    expect(drained).toBe(false); // the statement has not returned yet
    slot.run(jobs(2));
    await settled();
    expect(drained).toBe(false); // its jobs are running
    held.finishAll();
    await draining;
    expect(drained).toBe(true);
  });

  it('with nothing held, at once', async () => {
    const jobsHere = afterCommitJobs(8, heldRunner().runner);
    jobsHere.start([Realtime.queue]);
    await expect(jobsHere.drain()).resolves.toBeUndefined();
  });
});
