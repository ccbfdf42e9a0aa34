import { SetMetadata } from '@nestjs/common';
import type { Tx } from '../database/tx.js';
import type { JobName, JobPayloads } from './job-catalogue.js';

export const JOB_HANDLER_METADATA = 'onceline:job-handler';

export interface JobContext {
  jobId: string;
  /** 1 on the first run. */
  attempt: number;
  /** Present for transactional jobs: the transaction that also marks the job completed. */
  tx?: Tx;
}

export interface JobHandler<N extends JobName> {
  handle(data: JobPayloads[N], context: JobContext): Promise<void>;
}

/** Marks a provider as the one handler of a job in the catalogue. */
export const HandlesJob = (name: JobName) => SetMetadata(JOB_HANDLER_METADATA, name);

/** Thrown by a handler for an error that no retry will fix: the job is failed at once. */
export class PermanentJobError extends Error {}
