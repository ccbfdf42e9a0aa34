import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Invariants, violations } from '../../platform/verify/invariants.js';
import type { UsageKind } from './usage-ledger.js';
import { summarySql } from './usage-ledger.js';
import { PrepaidBundles } from './prepaid-bundles.js';
import { statementLinesSql } from './statements.js';

/**
 * What a usage row's cause must say, per kind (rows recorded since causes are kept; `legacy` rows
 * only need a resource): the resource it bills, the unit it priced, and the carrier event of the
 * transition that wrote it when that transition has one (an inbound SMS's delivery, a call's
 * hangup, the receipt that settled a send).
 */
const CAUSE_EXPLAINS_ROW = `u.cause -> 'resource' ->> 'id' IS NOT NULL AND (u.cause ->> 'legacy' = 'true' OR (
  CASE u.kind
    WHEN 'sms_outbound_segments' THEN u.cause -> 'resource' ->> 'id' = u.resource_id AND u.cause -> 'price_rule' ->> 'unit' = 'segment'
      AND jsonb_array_length(u.cause -> 'carrier_events') = CASE WHEN u.cause ->> 'settled_by' IN ('found_by_receipt', 'receipt_before_answer') THEN 1 ELSE 0 END
    WHEN 'sms_inbound_segments' THEN u.cause -> 'resource' ->> 'id' = u.resource_id AND u.cause -> 'price_rule' ->> 'unit' = 'segment' AND jsonb_array_length(u.cause -> 'carrier_events') = 1
    WHEN 'call_minutes' THEN u.cause -> 'resource' ->> 'id' = u.resource_id AND u.cause -> 'price_rule' ->> 'unit' = 'minute' AND jsonb_array_length(u.cause -> 'carrier_events') = 1
    WHEN 'number_months' THEN u.resource_id = (u.cause -> 'resource' ->> 'id') || ':' || (u.cause -> 'price_rule' ->> 'month') AND u.cause -> 'price_rule' ->> 'unit' = 'number_month'
    ELSE false END))`;

/** Usage rows as other modules' invariants may read them. */
export const USAGE_ROWS_AUDIT_VIEW = `SELECT id, account_id, kind, resource_id, quantity FROM usage_records`;

/**
 * What each usage kind bills: the module recording a kind registers the rows it bills for (a
 * query whose column `id` is the resource_id it records), as it calls UsageLedger.record.
 */
@Injectable()
export class BillableResources {
  private readonly byKind = new Map<UsageKind, string>();

  register(kind: UsageKind, resourcesSql: string): void {
    if (this.byKind.has(kind)) throw new Error(`billable resources of ${kind} registered twice`);
    this.byKind.set(kind, resourcesSql);
  }

  /** (kind, id) of every billable resource; a kind nobody registered has none. */
  unionSql(): string {
    const parts = [...this.byKind].map(([kind, sql]) => `SELECT '${kind}'::text AS kind, r.id::text AS id FROM (${sql}) r`);
    return parts.length > 0 ? parts.join(' UNION ALL ') : `SELECT NULL::text AS kind, NULL::text AS id WHERE false`;
  }
}

/** Billing's promise: nothing is billed that did not happen. */
@Injectable()
export class BillingInvariants implements OnModuleInit {
  constructor(
    private readonly invariants: Invariants,
    private readonly resources: BillableResources,
    private readonly bundles: PrepaidBundles,
  ) {}

  onModuleInit(): void {
    this.invariants.register(
      'billing.usage_has_resource',
      'every usage row bills a resource that exists of its kind (usage record ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          // No resource of the row's kind carries its resource_id.
          `SELECT u.id FROM usage_records u
            WHERE NOT EXISTS (SELECT 1 FROM (${this.resources.unionSql()}) r WHERE r.kind = u.kind AND r.id = u.resource_id)`,
          [],
          limit,
        ),
    );
    this.invariants.register(
      'billing.usage_has_cause',
      'every usage row says what caused it: the resource it bills, its price rule, and the carrier event of the transition that wrote it where there is one (usage record ids)',
      // The NOT NULL and CHECK of usage_records.cause hold the shape; this, what the cause says of its row.
      (snapshot, limit) => violations(snapshot, `SELECT u.id FROM usage_records u WHERE NOT coalesce(${CAUSE_EXPLAINS_ROW}, false)`, [], limit),
    );
    this.invariants.register(
      'billing.statement_sums_to_ledger',
      "every account's monthly statement has each of the month's usage rows once and sums to its GET /v2/usage totals (account:YYYY-MM)",
      (snapshot, limit) =>
        violations(
          snapshot,
          // Per (account, month) with usage: the statement's lines (with their joins) against the ledger's totals.
          `SELECT m.account_id || ':' || to_char(m.month, 'YYYY-MM') AS id
             FROM (SELECT DISTINCT account_id, date_trunc('month', created_at AT TIME ZONE 'UTC') AS month FROM usage_records) m
             CROSS JOIN LATERAL (SELECT (m.month AT TIME ZONE 'UTC') AS from_at, ((m.month + interval '1 month') AT TIME ZONE 'UTC') AS to_at) b
             CROSS JOIN LATERAL (SELECT count(*) AS n, count(DISTINCT l.id) AS distinct_n, coalesce(sum(l.amount_micros), 0) AS amount
                                   FROM (${statementLinesSql(this.bundles, 'm.account_id', 'b.from_at', 'b.to_at')}) l) st
             CROSS JOIN LATERAL (${summarySql('m.account_id', 'b.from_at', 'b.to_at')}) su
             CROSS JOIN LATERAL (SELECT count(*) AS n FROM usage_records u WHERE u.account_id = m.account_id AND u.created_at >= b.from_at AND u.created_at < b.to_at) rows
            WHERE st.n <> rows.n OR st.distinct_n <> rows.n OR st.amount <> su.amount_micros::bigint`,
          [],
          limit,
        ),
    );
  }
}
