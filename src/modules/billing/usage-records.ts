import { Injectable, NotFoundException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryRows } from '../../platform/database/tx.js';
import type { PageRequest } from '../../platform/http/pagination.js';
import { drawDownsJson, PrepaidBundles } from './prepaid-bundles.js';
import type { UsageCause } from './usage-cause.dto.js';
import type { UsageRecordView } from './usage.dto.js';
import { CURRENCY } from './usage-ledger.js';
import { createdAtUpToId } from '../../platform/retention/id-partition-key.js';

/**
 * How much older than its id a usage row's created_at may be: the age of the transaction that
 * recorded it when it minted the id. A day is far beyond what a recording transaction lasts (each
 * records with the transition that caused the usage, or is one statement: a month's number
 * rentals; one held a day would hold its resources' row locks and twin locks as long), and still
 * one 30-day partition (two within a day of a boundary).
 * A row outside it is found by the second look (UsageRecords.get), so this bounds the cost, not
 * the answer.
 */
const ID_WINDOW_BEFORE = '1 day';

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

  /**
   * One row by id. usage_records is partitioned by created_at, its transaction's now(), and the
   * id is minted later in that transaction: the row is looked for first in the partitions within
   * ID_WINDOW_BEFORE of the id's time (one of 30 days' partitions; two near a boundary), and only
   * when not there (an unknown id, a row of a transaction older than that, an id not of ours) in
   * every partition. A read: the second look changes nothing the first decided.
   */
  async get(accountId: string, id: string): Promise<UsageRecordWithCause> {
    const row = (await this.read(accountId, id, createdAtUpToId('$2', ID_WINDOW_BEFORE, 'u.created_at'))) ?? (await this.read(accountId, id, 'true'));
    if (!row) throw new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: 'no usage record of this account has this id' });
    return toUsageRecordView(row) as UsageRecordWithCause;
  }

  private async read(accountId: string, id: string, partitions: string): Promise<Record<string, unknown> | undefined> {
    const [row] = await queryRows(this.dataSource.manager,
      `WITH dd AS (${this.bundles.drawDownsSql('$1')})
       SELECT ${USAGE_RECORD_COLUMNS}, ${causeWithDrawDownsSql('dd')} AS cause FROM usage_records u WHERE u.account_id = $1 AND u.id = $2 AND ${partitions}`,
      [accountId, id],
    );
    return row;
  }
}
