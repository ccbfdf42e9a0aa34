import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { Invariants, violations } from '../verify/invariants.js';

/**
 * Outbox jobs with no outcome yet, as other modules' invariants may read them (e.g. "is this
 * event still being retried?"): the columns stay these whatever outbox_jobs becomes.
 */
export const UNFINISHED_JOBS_AUDIT_VIEW = `SELECT job_id, name, data, run_at, relayed_at FROM outbox_jobs WHERE completed_at IS NULL AND failed_at IS NULL`;

/**
 * How late is "broken" rather than "slow": recovery checks every relayed job each
 * OUTBOX_REDRIVE_AFTER_SECONDS and the relay polls every OUTBOX_POLL_MS, so a job that missed
 * two whole redrive periods is not being looked after at all.
 */
const MISSED_PERIODS = 2;

/** The outbox's promise: every committed job reaches Redis and gets an outcome, Redis or not. */
@Injectable()
export class OutboxInvariants implements OnModuleInit {
  constructor(
    private readonly invariants: Invariants,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const overdue = MISSED_PERIODS * this.config.OUTBOX_REDRIVE_AFTER_SECONDS;
    this.invariants.register(
      'outbox.relayed_jobs_redriven_in_time',
      `no relayed job without an outcome has its redrive check overdue by more than ${overdue} s (job ids)`,
      (snapshot, limit) =>
        violations(
          snapshot,
          // Relayed, no outcome, and recovery should have re-published it long ago.
          `SELECT job_id AS id FROM outbox_jobs
            WHERE relayed_at IS NOT NULL AND completed_at IS NULL AND failed_at IS NULL
              AND redrive_at < now() - make_interval(secs => $1)`,
          [overdue],
          limit,
        ),
    );
    this.invariants.register(
      'outbox.due_jobs_relayed_in_time',
      `no committed job is due for more than ${overdue} s without being relayed to Redis (job ids)`,
      (snapshot, limit) =>
        violations(
          snapshot,
          // Never relayed, though due for longer than any working relay takes.
          `SELECT job_id AS id FROM outbox_jobs WHERE relayed_at IS NULL AND run_at < now() - make_interval(secs => $1)`,
          [overdue],
          limit,
        ),
    );
  }
}
