import { Injectable, type OnModuleInit } from '@nestjs/common';
import { BillableResources, USAGE_ROWS_AUDIT_VIEW } from '../billing/billing-invariants.js';
import { CUSTOMER_EVENTS_AUDIT_VIEW } from '../webhooks/webhooks-invariants.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { keptSince } from '../../platform/retention/partitioned-tables.js';
import { Invariants, violations } from '../../platform/verify/invariants.js';

/**
 * Calls' promises, as checks over committed rows: a call minute is billed once, an ended call is
 * announced once, an answer once, only a live leg wins the call, and no target is dialed beyond its tries. Other modules' rows are read
 * through their audit views.
 */
@Injectable()
export class CallsInvariants implements OnModuleInit {
  constructor(
    private readonly invariants: Invariants,
    private readonly billable: BillableResources,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    // A call older than CALLS_RETENTION_HOURS may have been dropped with its partition
    // (CallsRetention) while its usage row stays, the ledger being kept longer: a call of that age
    // billed is taken as having existed (its cause keeps the call's figures). Only an id of ours
    // tells its call's time.
    this.billable.register('call_minutes', `SELECT id FROM calls UNION ALL SELECT u.resource_id FROM (${USAGE_ROWS_AUDIT_VIEW}) u
      WHERE u.kind = 'call_minutes' AND u.resource_id ~ '^call_[0-9a-hjkmnp-tv-z]{26}$' AND onceline_id_time(u.resource_id) < ${keptSince(this.config.CALLS_RETENTION_HOURS)}`);

    this.invariants.register(
      'calls.minutes_billed_once',
      'every answered, ended call has exactly one call_minutes usage row with its billable minutes; an unanswered one has none (call ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          `SELECT c.id FROM calls c
             LEFT JOIN (SELECT resource_id, count(*) AS n, sum(quantity) AS minutes FROM (${USAGE_ROWS_AUDIT_VIEW}) u WHERE kind = 'call_minutes' GROUP BY 1) u ON u.resource_id = c.id
            WHERE CASE WHEN c.ended_at IS NOT NULL AND c.answered_at IS NOT NULL
                       THEN coalesce(u.n, 0) <> 1 OR u.minutes <> c.billable_minutes OR c.billable_minutes < 1
                       ELSE coalesce(u.n, 0) <> 0 END`,
          [],
          limit,
        ),
    );
    this.invariants.register(
      'calls.end_announced_once',
      'every ended call has exactly one call.completed, call.missed or call.failed event matching its status, and a call still up has none (call ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          // Calls younger than the events' retention: an older one's events may have been dropped.
          `SELECT c.id FROM calls c
             LEFT JOIN (SELECT subject_id, count(*) AS n, min(type) AS type FROM (${CUSTOMER_EVENTS_AUDIT_VIEW}) e
                         WHERE type IN ('call.completed', 'call.missed', 'call.failed') GROUP BY 1) e ON e.subject_id = c.id
            WHERE c.created_at >= ${keptSince(this.config.CUSTOMER_EVENTS_RETENTION_HOURS)}
              AND CASE WHEN c.ended_at IS NOT NULL THEN coalesce(e.n, 0) <> 1 OR e.type <> 'call.' || c.status ELSE coalesce(e.n, 0) <> 0 END`,
          [],
          limit,
        ),
    );
    this.invariants.register(
      'calls.answered_leg_was_live',
      "a call's answered leg is one of its legs that answered and had not ended before it answered, never a failed one (call ids)",
      (snapshot, limit) =>
        violations(
          snapshot,
          // A leg whose hangup was recorded first keeps answered_at NULL (its answer came too late): it cannot have won.
          `SELECT c.id FROM calls c LEFT JOIN call_legs l ON l.id = c.answered_leg AND l.call_id = c.id
            WHERE c.answered_leg IS NOT NULL
              AND (l.id IS NULL OR l.answered_at IS NULL OR l.status NOT IN ('answered', 'ended') OR l.ended_at < l.answered_at)`,
          [],
          limit,
        ),
    );
    this.invariants.register(
      'calls.answered_announced_once',
      'no call has more than one call.answered event (call ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          `SELECT subject_id AS id FROM (${CUSTOMER_EVENTS_AUDIT_VIEW}) e WHERE type = 'call.answered' GROUP BY subject_id HAVING count(*) > 1`,
          [],
          limit,
        ),
    );
    this.invariants.register(
      'calls.answered_event_only_if_answered',
      'no call that ended unanswered (missed, failed: answered_at null) was announced as answered; a written-off winner must not have been (call ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          `SELECT c.id FROM calls c
            WHERE c.ended_at IS NOT NULL AND c.answered_at IS NULL
              AND EXISTS (SELECT FROM (${CUSTOMER_EVENTS_AUDIT_VIEW}) e WHERE e.type = 'call.answered' AND e.subject_id = c.id)`,
          [],
          limit,
        ),
    );
    this.invariants.register(
      'calls.one_dial_per_try',
      'no ring-plan target is dialed beyond its one redial, and no call has more legs than its plan allows (call ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          // At most two tries of a target; at most two tries of each of (targets + the forward target).
          `SELECT c.id FROM calls c JOIN call_legs l ON l.call_id = c.id
            GROUP BY c.id, c.ring_plan
           HAVING max(l.attempt) > 2
               OR count(*) > 2 * (coalesce(jsonb_array_length(c.ring_plan->'targets'), 0) + 1)`,
          [],
          limit,
        ),
    );
  }
}
