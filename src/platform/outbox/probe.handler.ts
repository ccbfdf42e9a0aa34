import { Injectable } from '@nestjs/common';
import { exec } from '../database/tx.js';
import { JobName, type JobPayloads } from './job-catalogue.js';
import { HandlesJob, type JobContext, type JobHandler } from './job-handler.js';

/** Leaves one probe_runs row per run: the relay benchmark and the exactly-once tests count them. */
@Injectable()
@HandlesJob(JobName.Probe)
export class ProbeHandler implements JobHandler<JobName.Probe> {
  async handle(data: JobPayloads[JobName.Probe], { jobId, tx }: JobContext): Promise<void> {
    await exec(tx!, `INSERT INTO probe_runs (job_id, label) VALUES ($1, $2)`, [jobId, data.label ?? null]);
  }
}
