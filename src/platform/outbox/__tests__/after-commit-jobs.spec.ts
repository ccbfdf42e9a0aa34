import { describe, expect, it } from '@jest/globals';
import { AfterCommitJobs } from '../after-commit-jobs.js';
import { JobName, QueueName } from '../job-catalogue.js';
import type { JobRunner } from '../job-runner.js';
import type { AppConfig } from '../../config/app-config.js';
import type { OutboxMetrics } from '../outbox-metrics.js';

/** A runner whose runs end when the test says so. */
function heldRunner() {
  const pending: (() => void)[] = [];
  const runner = {
    run: () => new Promise<'completed'>((resolve) => pending.push(() => resolve('completed'))),
  } as unknown as JobRunner;
  return { runner, finishAll: () => pending.splice(0).forEach((finish) => finish()), running: () => pending.length };
}

function afterCommitJobs(places: number, runner: JobRunner) {
  const metrics = { jobOutcomes: { inc: () => undefined } } as unknown as OutboxMetrics;
  return new AfterCommitJobs(runner, { WORKER_AFTER_COMMIT_JOBS: places } as AppConfig, metrics);
}

const jobs = (n: number) => Array.from({ length: n }, (_, i) => ({ name: JobName.ProcessCarrierEvent, jobId: `cev_${i}` }));
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('AfterCommitJobs places', () => {
  it('only for the queues this process works, and only for jobs that may run after commit', () => {
    const jobsHere = afterCommitJobs(8, heldRunner().runner);
    expect(jobsHere.reserve(JobName.ProcessCarrierEvent)).toBeUndefined(); // not started: no worker here
    jobsHere.start([QueueName.Webhooks]);
    expect(jobsHere.reserve(JobName.ProcessCarrierEvent)).toBeUndefined(); // carrier-events is worked elsewhere
    expect(jobsHere.reserve(JobName.WebhookDeliveryAttempt)).toBeDefined();
    expect(jobsHere.reserve(JobName.WebhookParkedExpiry)).toBeUndefined(); // its spec does not allow it
  });

  it('a batch takes as many places as it may create jobs; too few free sends it all to the relay; unused places come back at run()', async () => {
    const held = heldRunner();
    const jobsHere = afterCommitJobs(10, held.runner);
    jobsHere.start([QueueName.CarrierEvents]);
    const batch = jobsHere.reserve(JobName.ProcessCarrierEvent, 8)!;
    expect(jobsHere.reserve(JobName.ProcessCarrierEvent, 3)).toBeUndefined(); // 2 free, 3 asked
    // 8 deliveries, 5 of them new: 3 places come back at once, 5 are held until the runs end.
    batch.run(jobs(5));
    expect(held.running()).toBe(5);
    const next = jobsHere.reserve(JobName.ProcessCarrierEvent, 5)!;
    expect(next).toBeDefined();
    expect(jobsHere.reserve(JobName.ProcessCarrierEvent)).toBeUndefined();
    next.release();
    held.finishAll();
    await settled();
    expect(jobsHere.reserve(JobName.ProcessCarrierEvent, 10)).toBeDefined();
  });

  it('a slot is settled once', () => {
    const jobsHere = afterCommitJobs(2, heldRunner().runner);
    jobsHere.start([QueueName.CarrierEvents]);
    const slot = jobsHere.reserve(JobName.ProcessCarrierEvent)!;
    slot.release();
    expect(() => slot.release()).toThrow(/settled once/);
    expect(() => slot.run(jobs(1))).toThrow(/settled once/);
  });
});

describe('AfterCommitJobs drain', () => {
  it('stops taking places, and waits for a statement still holding places and for the jobs it then runs', async () => {
    const held = heldRunner();
    const jobsHere = afterCommitJobs(8, held.runner);
    jobsHere.start([QueueName.CarrierEvents]);
    const slot = jobsHere.reserve(JobName.ProcessCarrierEvent, 2)!;
    let drained = false;
    const draining = jobsHere.drain().then(() => (drained = true));
    expect(jobsHere.reserve(JobName.ProcessCarrierEvent)).toBeUndefined();
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
    jobsHere.start([QueueName.CarrierEvents]);
    await expect(jobsHere.drain()).resolves.toBeUndefined();
  });
});
