import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { IdPrefix } from '../../platform/ids.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { assertInTransaction, exec, queryRows, type Tx } from '../../platform/database/tx.js';
import type { PageRequest } from '../../platform/http/pagination.js';
import type { UsageKind, UsageRecordView, UsageSummary } from './usage.dto.js';

export type { UsageKind, UsageRecordView, UsageSummary };

export const CURRENCY = 'USD';

/**
 * The usage ledger. A row is written only in the transaction of the transition that made the
 * usage billable, so it inherits exactly-once from that transition's guard; UNIQUE(kind,
 * resource_id) is a second guard. Integers only: prices are micro-units of CURRENCY.
 */
@Injectable()
export class UsageLedger {
  constructor(
    private readonly config: AppConfig,
    private readonly dataSource: DataSource,
  ) {}

  unitPriceMicros(kind: UsageKind): number {
    switch (kind) {
      case 'sms_outbound_segments':
        return this.config.PRICE_SMS_OUTBOUND_SEGMENT_MICROS;
      case 'sms_inbound_segments':
        return this.config.PRICE_SMS_INBOUND_SEGMENT_MICROS;
      case 'call_minutes':
        return this.config.PRICE_CALL_MINUTE_MICROS;
      case 'number_months':
        return this.config.PRICE_NUMBER_MONTH_MICROS;
    }
  }

  /** Records one billable fact in the caller's transaction; returns false if already recorded. */
  async record(tx: Tx, usage: { accountId: string; kind: UsageKind; resourceId: string; quantity: number }): Promise<boolean> {
    assertInTransaction(tx);
    if (!Number.isSafeInteger(usage.quantity) || usage.quantity < 0) throw new Error(`usage quantity must be a whole number, got ${usage.quantity}`);
    const stmt = new CteStatement();
    stmt.with('use_fact', `SELECT ${stmt.param(usage.accountId)}::text AS account_id, ${stmt.param(usage.resourceId)}::text AS resource_id, ${stmt.param(usage.quantity)}::bigint AS quantity`);
    const recorded = this.recordFromCte(stmt, 'use_fact', usage.kind, { accountId: 'account_id', resourceId: 'resource_id', quantity: 'quantity' });
    const { rows } = await exec<{ recorded: boolean }>(tx, stmt.text(`SELECT EXISTS (SELECT FROM ${recorded}) AS recorded`), stmt.params);
    return rows[0].recorded;
  }

  /**
   * record as a fragment of a statement: one usage row of `kind` per row of CTE `source`, with
   * account, resource and quantity (a whole number ≥ 0, checked by the table) as SQL over its
   * columns. Returns the CTE of the rows recorded.
   */
  recordFromCte(stmt: CteStatement, source: string, kind: UsageKind, columns: { accountId: string; resourceId: string; quantity: string }): string {
    const unit = stmt.param(this.unitPriceMicros(kind), 'bigint');
    // ON CONFLICT (kind, resource_id): the second guard; a resource is billed once per kind.
    return stmt.with(
      'use_recorded',
      `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros)
       SELECT onceline_id('${IdPrefix.UsageRecord}'), ${columns.accountId}, ${stmt.param(kind, 'text')}, ${columns.resourceId}, ${columns.quantity}, ${unit}, ${columns.quantity}::bigint * ${unit}
         FROM ${source}
       ON CONFLICT (kind, resource_id) DO NOTHING RETURNING id`,
    );
  }

  async summary(accountId: string, from?: Date, to?: Date): Promise<UsageSummary> {
    const [row] = await queryRows(this.dataSource.manager,
      `SELECT coalesce(sum(quantity) FILTER (WHERE kind = 'sms_outbound_segments'), 0)::text AS sms_outbound_segments,
              coalesce(sum(quantity) FILTER (WHERE kind = 'sms_inbound_segments'), 0)::text AS sms_inbound_segments,
              coalesce(sum(quantity) FILTER (WHERE kind = 'call_minutes'), 0)::text AS call_minutes,
              coalesce(sum(quantity) FILTER (WHERE kind = 'number_months'), 0)::text AS number_months,
              coalesce(sum(amount_micros), 0)::text AS amount_micros
         FROM usage_records
        WHERE account_id = $1 AND ($2::timestamptz IS NULL OR created_at >= $2) AND ($3::timestamptz IS NULL OR created_at < $3)`,
      [accountId, from ?? null, to ?? null],
    );
    return {
      sms_outbound_segments: Number(row.sms_outbound_segments),
      sms_inbound_segments: Number(row.sms_inbound_segments),
      call_minutes: Number(row.call_minutes),
      number_months: Number(row.number_months),
      amount_micros: Number(row.amount_micros),
      currency: CURRENCY,
    };
  }

  /** Quantity recorded per kind for the account from `since` on (what a prepaid bundle draws down). */
  async totalsSince(accountId: string, since: Date): Promise<Record<UsageKind, number>> {
    const rows: { kind: UsageKind; quantity: string }[] = await queryRows(this.dataSource.manager,
      `SELECT kind, sum(quantity)::text AS quantity FROM usage_records WHERE account_id = $1 AND created_at >= $2 GROUP BY kind`,
      [accountId, since],
    );
    const totals: Record<UsageKind, number> = { sms_outbound_segments: 0, sms_inbound_segments: 0, call_minutes: 0, number_months: 0 };
    for (const row of rows) totals[row.kind] = Number(row.quantity);
    return totals;
  }

  async list(accountId: string, page: PageRequest): Promise<UsageRecordView[]> {
    const rows = await queryRows(this.dataSource.manager,
      `SELECT id, 'usage_record' AS record_type, kind, resource_id, quantity, unit_price_micros, amount_micros,
              $3::text AS currency, created_at
         FROM usage_records
        WHERE account_id = $1 AND ($2::text IS NULL OR id < $2)
        ORDER BY id DESC LIMIT $4`,
      [accountId, page.after ?? null, CURRENCY, page.size + 1],
    );
    // bigint columns arrive as strings; every value here is a whole number well inside 2^53
    return rows.map((r: Record<string, unknown>) => ({
      ...r,
      quantity: Number(r.quantity),
      unit_price_micros: Number(r.unit_price_micros),
      amount_micros: Number(r.amount_micros),
    })) as UsageRecordView[];
  }
}
