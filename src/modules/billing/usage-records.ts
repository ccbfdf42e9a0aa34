import { Injectable, NotFoundException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryRows } from '../../platform/database/tx.js';
import type { PageRequest } from '../../platform/http/pagination.js';
import { drawDownsJson, PrepaidBundles } from './prepaid-bundles.js';
import type { UsageCause } from './usage-cause.dto.js';
import type { UsageRecordView } from './usage.dto.js';
import { CURRENCY } from './usage-ledger.js';

/** A usage row's columns (alias u) as the API shows them; `cause` is added by the caller when asked for. */
export const USAGE_RECORD_COLUMNS = `u.id, 'usage_record' AS record_type, u.kind, u.resource_id, u.quantity, u.unit_price_micros, u.amount_micros, u.created_at`;

/** The cause of usage row `u` with its draw-downs (from CTE `drawDowns`), as the API shows it. */
export function causeWithDrawDownsSql(drawDowns: string): string {
  return `u.cause || jsonb_build_object('draw_downs', ${drawDownsJson(drawDowns, 'u')})`;
}

export type UsageRecordWithCause = UsageRecordView & { cause: UsageCause };

/** bigint columns arrive as strings; every value here is a whole number well inside 2^53. */
export function toUsageRecordView<T extends Record<string, unknown>>(row: T): T & UsageRecordView {
  return {
    ...row,
    quantity: Number(row.quantity),
    unit_price_micros: Number(row.unit_price_micros),
    amount_micros: Number(row.amount_micros),
    currency: CURRENCY,
  } as T & UsageRecordView;
}

/**
 * The ledger as the customer reads it: rows newest first, each with its cause when asked
 * (include=causes, and always for one row), read in one query with the bundles it drew down.
 */
@Injectable()
export class UsageRecords {
  constructor(
    private readonly dataSource: DataSource,
    private readonly bundles: PrepaidBundles,
  ) {}

  async list(accountId: string, page: PageRequest, withCauses: boolean): Promise<UsageRecordView[]> {
    const cause = withCauses ? `, ${causeWithDrawDownsSql('dd')} AS cause` : '';
    const rows = await queryRows(this.dataSource.manager,
      `${withCauses ? `WITH dd AS (${this.bundles.drawDownsSql('$1')}) ` : ''}
       SELECT ${USAGE_RECORD_COLUMNS}${cause}
         FROM usage_records u
        WHERE u.account_id = $1 AND ($2::text IS NULL OR u.id < $2)
        ORDER BY u.id DESC LIMIT $3`,
      [accountId, page.after ?? null, page.size + 1],
    );
    return rows.map((r: Record<string, unknown>) => toUsageRecordView(r));
  }

  async get(accountId: string, id: string): Promise<UsageRecordWithCause> {
    const [row] = await queryRows(this.dataSource.manager,
      `WITH dd AS (${this.bundles.drawDownsSql('$1')})
       SELECT ${USAGE_RECORD_COLUMNS}, ${causeWithDrawDownsSql('dd')} AS cause FROM usage_records u WHERE u.account_id = $1 AND u.id = $2`,
      [accountId, id],
    );
    if (!row) throw new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: 'no usage record of this account has this id' });
    return toUsageRecordView(row) as UsageRecordWithCause;
  }
}
