import { Injectable } from '@nestjs/common';
import { exec } from '../database/tx.js';
import { defineJob } from './job-definition.js';
import { HandlesJob, type JobContext, type JobHandler } from './job-handler.js';

/** Diagnostics and benchmarks: records one probe_runs row per run (the outbox's own job). */
export const ProbeJob = defineJob<{ label?: string }>({ name: 'probe', queue: 'system', lane: 'bulk', mode: 'transactional', attempts: 5, backoffMs: 200 });

/** Leaves one probe_runs row per run: the relay benchmark and the exactly-once tests count them. */
@Injectable()
@HandlesJob(ProbeJob)
export class ProbeHandler implements JobHandler<typeof ProbeJob> {
  async handle(data: { label?: string }, { jobId, tx }: JobContext): Promise<void> {
    await exec(tx!, `INSERT INTO probe_runs (job_id, label) VALUES ($1, $2)`, [jobId, data.label ?? null]);
  }
}
