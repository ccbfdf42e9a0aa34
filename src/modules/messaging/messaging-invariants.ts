import { Injectable, type OnModuleInit } from '@nestjs/common';
import { BillableResources, USAGE_ROWS_AUDIT_VIEW } from '../billing/billing-invariants.js';
import type { UsageKind } from '../billing/usage-ledger.js';
import { CARRIER_EVENTS_AUDIT_VIEW } from '../ingest/ingest-invariants.js';
import { CUSTOMER_EVENTS_AUDIT_VIEW } from '../webhooks/webhooks-invariants.js';
import { UNFINISHED_JOBS_AUDIT_VIEW } from '../../platform/outbox/outbox-invariants.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { keptSince } from '../../platform/retention/partitioned-tables.js';
import { Invariants, violations, type Snapshot } from '../../platform/verify/invariants.js';
import { TERMINAL_STATUSES, UNSENT_STATUSES, type MessageStatus } from './message-view.js';
import { DispatchMessageJob, DispatchReplyJob } from './messaging.jobs.js';

/** The dispatch jobs (a compliance reply's has a queue of its own): a waiting message waits for one of these. */
const DISPATCH_JOB_NAMES = [DispatchMessageJob.name, DispatchReplyJob.name];
import { SendResolution } from './message-history-details.js';

/** Transitions a customer is told about, each as `message.<status>`. */
const ANNOUNCED_STATUSES: MessageStatus[] = ['sent', 'delivered', 'failed', 'received', 'cancelled'];

/**
 * Messaging's promises, as checks over committed rows: a carrier's final word lands, and every
 * fact is billed once and announced once. Other modules' rows are read through their audit views.
 */
@Injectable()
export class MessagingInvariants implements OnModuleInit {
  constructor(
    private readonly invariants: Invariants,
    private readonly billable: BillableResources,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    // A message older than MESSAGES_RETENTION_HOURS may have been dropped with its day while its
    // usage row stays (the ledger is kept): billed at that age (its id's time), it is taken as having existed.
    const messagesKept = keptSince(this.config.MESSAGES_RETENTION_HOURS);
    const billedAndDropped = (kind: UsageKind) =>
      `SELECT u.resource_id FROM (${USAGE_ROWS_AUDIT_VIEW}) u WHERE u.kind = '${kind}' AND onceline_id_key(u.resource_id) < ${messagesKept}`;
    this.billable.register('sms_outbound_segments', `SELECT id FROM messages WHERE direction = 'outbound' UNION ALL ${billedAndDropped('sms_outbound_segments')}`);
    this.billable.register('sms_inbound_segments', `SELECT id FROM messages WHERE direction = 'inbound' UNION ALL ${billedAndDropped('sms_inbound_segments')}`);
    // A message's history is in its day's partition, its events in theirs (no older): both are
    // there for a message younger than both retentions.
    const historyAndEventsKept = `greatest(${messagesKept}, ${keptSince(this.config.CUSTOMER_EVENTS_RETENTION_HOURS)})`;

    this.invariants.register(
      'messaging.receipt_implies_terminal',
      'a processed delivered/failed receipt leaves its message delivered or failed (message ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          // A terminal receipt marked processed, yet the message it names is not terminal.
          `SELECT DISTINCT m.id
             FROM (${CARRIER_EVENTS_AUDIT_VIEW}) e
             JOIN messages m ON m.carrier = e.carrier AND m.carrier_message_id = e.normalized->>'carrierMessageId'
            WHERE e.kind = 'message.status' AND e.processed_at IS NOT NULL AND e.normalized->>'status' = ANY($1::text[])
              AND m.direction = 'outbound' AND m.status <> ALL($1::text[])`,
          [TERMINAL_STATUSES],
          limit,
        ),
    );
    this.invariants.register(
      'messaging.outbound_billed_once',
      'an outbound message the carrier accepted has exactly one usage row, one it never accepted has none (message ids)',
      // Accepted: stamped with the carrier's id, sent or delivered, or ever recorded as sent.
      (snapshot, limit) =>
        this.billedOnce(
          snapshot,
          'outbound',
          'sms_outbound_segments',
          `m.carrier_message_id IS NOT NULL OR m.status IN ('sent', 'delivered')
           OR EXISTS (SELECT 1 FROM message_status_history h WHERE h.message_id = m.id AND h.status = 'sent')`,
          limit,
        ),
    );
    this.invariants.register(
      'messaging.inbound_billed_once',
      'a received inbound message has exactly one usage row (message ids)',
      (snapshot, limit) => this.billedOnce(snapshot, 'inbound', 'sms_inbound_segments', 'true', limit),
    );
    this.invariants.register(
      'messaging.one_event_per_transition',
      'each sent/delivered/failed/received/cancelled transition in a message history has exactly one customer event of that type (message ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          // Per message and type: transitions recorded vs events emitted; any difference is broken.
          `WITH transitions AS (
             SELECT message_id AS id, 'message.' || status AS type, count(*) AS n
               FROM message_status_history WHERE status = ANY($1::text[]) GROUP BY 1, 2
           ), announced AS (
             SELECT coalesce(subject_id, id) AS id, type, count(*) AS n
               FROM (${CUSTOMER_EVENTS_AUDIT_VIEW}) e WHERE type = ANY($2::text[]) GROUP BY 1, 2
           )
           SELECT DISTINCT coalesce(t.id, a.id) AS id
             FROM transitions t FULL JOIN announced a ON a.id = t.id AND a.type = t.type
            WHERE coalesce(t.n, 0) <> coalesce(a.n, 0) AND onceline_id_key(coalesce(t.id, a.id)) >= ${historyAndEventsKept}`,
          [ANNOUNCED_STATUSES, ANNOUNCED_STATUSES.map((s) => `message.${s}`)],
          limit,
        ),
    );
    this.invariants.register(
      'messaging.no_send_after_opt_out',
      'no message was taken for sending to a handset after its opt-out committed (message ids; keyword replies excepted)',
      (snapshot, limit) =>
        violations(
          snapshot,
          // Taken for sending: a `sending` history row for each attempt put on the wire, written by
          // the statement whose guard refuses an opted-out recipient: the dispatch claim (a first
          // take, a retry of a send the carrier did not take: no detail) and the resend after an
          // ambiguous send (`resent_after_nothing_found`). The opt-out counted is the one of the
          // account's scope. Other details are an earlier send's outcome being resolved, not a new take.
          `SELECT DISTINCT m.id FROM messages m
             JOIN accounts a ON a.id = m.account_id
             JOIN message_opt_outs o ON o.account_id = m.account_id AND o.handset = m.to_number AND o.opted_out
                  AND o.our_number = CASE a.opt_out_scope WHEN 'account' THEN '*' ELSE m.from_number END
             JOIN message_status_history h ON h.message_id = m.id AND h.status = 'sending' AND (h.detail IS NULL OR h.detail = $1) AND h.at > o.changed_at
            WHERE m.direction = 'outbound' AND m.auto_reply IS NULL`,
          [SendResolution.resent],
          limit,
        ),
    );
    this.invariants.register(
      'messaging.unsent_has_dispatch_job',
      'an outbound message not yet sent (queued, scheduled or sending) has a dispatch job with no outcome yet: nothing waits with nothing left to run it (message ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          // Every way a message waits writes its next job in the statement that makes it wait (the
          // accept, a slot, a 429's pause, a lease's end); a run that holds it holds its own job.
          `SELECT m.id FROM messages m
            WHERE m.direction = 'outbound' AND m.status = ANY($1::text[])
              AND NOT EXISTS (SELECT 1 FROM (${UNFINISHED_JOBS_AUDIT_VIEW}) j WHERE j.name = ANY($2::text[]) AND j.data->>'messageId' = m.id)`,
          [UNSENT_STATUSES, DISPATCH_JOB_NAMES],
          limit,
        ),
    );
  }

  /** Messages of `direction` whose usage rows of `kind` number other than 1 where `billable` holds, else 0. */
  private billedOnce(snapshot: Snapshot, direction: 'outbound' | 'inbound', kind: UsageKind, billable: string, limit: number) {
    return violations(
      snapshot,
      `SELECT m.id FROM messages m
         LEFT JOIN (SELECT resource_id, count(*) AS n FROM (${USAGE_ROWS_AUDIT_VIEW}) u WHERE kind = $2 GROUP BY 1) u ON u.resource_id = m.id
        WHERE m.direction = $1 AND coalesce(u.n, 0) <> CASE WHEN ${billable} THEN 1 ELSE 0 END`,
      [direction, kind],
      limit,
    );
  }
}
