import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryRows } from '../../platform/database/tx.js';
import { monthBounds } from './periods.js';
import { PrepaidBundles } from './prepaid-bundles.js';
import type { StatementBalance, StatementGrant, StatementLine, StatementView } from './statement.dto.js';
import type { UsageCause } from './usage-cause.dto.js';
import { CURRENCY, summarySql, toUsageSummary } from './usage-ledger.js';
import { causeWithDrawDownsSql, toUsageRecordView, USAGE_RECORD_COLUMNS } from './usage-records.js';

/**
 * The lines of an account's statement (each argument SQL text: a parameter or an outer column):
 * its usage rows created in [from, to), each with its cause (draw-downs included) and the
 * balance of the bundle type it draws, right after it, as it was then.
 */
export function statementLinesSql(bundles: PrepaidBundles, account: string, from: string, to: string): string {
  const balance = `CASE WHEN dr.usage_record_id IS NOT NULL THEN jsonb_build_object('entitlement_type', dr.entitlement_type, 'granted', coalesce(dr.granted, 0), 'used', dr.u_end,
                     'remaining', greatest(0, coalesce(dr.granted, 0) - dr.u_end), 'overage', greatest(0, dr.u_end - coalesce(dr.granted, 0))) END`;
  return `WITH dd AS (${bundles.drawDownsSql(account)}), dr AS (${bundles.drawingRowsSql(account)})
          SELECT ${USAGE_RECORD_COLUMNS}, ${causeWithDrawDownsSql('dd')} AS cause, ${balance} AS balance_after
            FROM usage_records u LEFT JOIN dr ON dr.usage_record_id = u.id
           WHERE u.account_id = ${account} AND u.created_at >= ${from} AND u.created_at < ${to}`;
}

type LineRow = Record<string, unknown> & { cause: UsageCause; balance_after: StatementBalance | null; created_at: string };
type GrantRow = Omit<StatementGrant, 'quantity'> & { quantity: number | string };

/** Monthly statements, read from the ledger in one statement (one snapshot): lines, totals and grants agree. */
@Injectable()
export class Statements {
  constructor(
    private readonly dataSource: DataSource,
    private readonly bundles: PrepaidBundles,
  ) {}

  /** The account's statement of `period` (YYYY-MM, UTC); undefined when the period is not one. */
  async of(accountId: string, period: string): Promise<StatementView | undefined> {
    const bounds = monthBounds(period);
    if (!bounds) return undefined;
    const [row] = await queryRows(this.dataSource.manager,
      `WITH lines AS (${statementLinesSql(this.bundles, '$1', '$2::timestamptz', '$3::timestamptz')})
       SELECT (SELECT to_jsonb(s) FROM (${summarySql('$1', '$2', '$3')}) s) AS totals,
              coalesce((SELECT jsonb_agg(to_jsonb(l) ORDER BY l.created_at, l.id) FROM lines l), '[]'::jsonb) AS lines,
              coalesce((SELECT jsonb_agg(jsonb_build_object('entitlement_id', g.entitlement_id, 'entitlement_type', g.entitlement_type, 'quantity', g.quantity,
                                                            'invoice_id', g.invoice_id, 'granted_at', g.granted_at) ORDER BY g.granted_at, g.entitlement_id)
                          FROM (${this.bundles.grantsSql('$1')}) g WHERE g.granted_at >= $2 AND g.granted_at < $3), '[]'::jsonb) AS grants`,
      [accountId, bounds.from, bounds.to],
    );
    const iso = (value: string) => new Date(value).toISOString();
    return {
      record_type: 'statement',
      period,
      from: bounds.from.toISOString(),
      to: bounds.to.toISOString(),
      currency: CURRENCY,
      totals: toUsageSummary(row.totals),
      lines: (row.lines as LineRow[]).map((line) => ({ ...toUsageRecordView(line), created_at: iso(line.created_at) }) as StatementLine),
      grants: (row.grants as GrantRow[]).map((g) => ({ ...g, quantity: Number(g.quantity), granted_at: iso(g.granted_at) })),
    };
  }
}
