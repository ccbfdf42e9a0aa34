import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { IdPrefix } from '../../platform/ids.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { assertInTransaction, exec, queryRows, type Tx } from '../../platform/database/tx.js';
import type { CauseInput } from './usage-cause.dto.js';
import type { UsageKind, UsageRecordView, UsageSummary } from './usage.dto.js';

export type { CauseInput, UsageKind, UsageRecordView, UsageSummary };

export const CURRENCY = 'USD';

/**
 * GET /v2/usage: the account's ledger totals over rows created in [from, to) (each SQL text: a
 * parameter; from/to NULL for unbounded), as text columns (bigint). A statement reads its totals
 * with this same query, in the statement's own snapshot.
 */
export function summarySql(account: string, from: string, to: string): string {
  return `SELECT coalesce(sum(quantity) FILTER (WHERE kind = 'sms_outbound_segments'), 0)::text AS sms_outbound_segments,
                 coalesce(sum(quantity) FILTER (WHERE kind = 'sms_inbound_segments'), 0)::text AS sms_inbound_segments,
                 coalesce(sum(quantity) FILTER (WHERE kind = 'call_minutes'), 0)::text AS call_minutes,
                 coalesce(sum(quantity) FILTER (WHERE kind = 'number_months'), 0)::text AS number_months,
                 coalesce(sum(amount_micros), 0)::text AS amount_micros
            FROM usage_records
           WHERE account_id = ${account} AND (${from}::timestamptz IS NULL OR created_at >= ${from}) AND (${to}::timestamptz IS NULL OR created_at < ${to})`;
}

export function toUsageSummary(row: Record<string, string>): UsageSummary {
  return {
    sms_outbound_segments: Number(row.sms_outbound_segments),
    sms_inbound_segments: Number(row.sms_inbound_segments),
    call_minutes: Number(row.call_minutes),
    number_months: Number(row.number_months),
    amount_micros: Number(row.amount_micros),
    currency: CURRENCY,
  };
}

/**
 * The usage ledger. A row is written only in the transaction of the transition that made the
 * usage billable, so it inherits exactly-once from that transition's guard; (kind, resource_id)
 * is a second guard (usage_record_twin, one fact across the ledger's time partitions). Integers only: prices are micro-units of CURRENCY.
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

  /** Records one billable fact in the caller's transaction, with its cause; returns false if already recorded. */
  async record(tx: Tx, usage: { accountId: string; kind: UsageKind; resourceId: string; quantity: number; cause: CauseInput }): Promise<boolean> {
    assertInTransaction(tx);
    if (!Number.isSafeInteger(usage.quantity) || usage.quantity < 0) throw new Error(`usage quantity must be a whole number, got ${usage.quantity}`);
    const stmt = new CteStatement();
    stmt.with(
      'use_fact',
      `SELECT ${stmt.param(usage.accountId)}::text AS account_id, ${stmt.param(usage.resourceId)}::text AS resource_id, ${stmt.param(usage.quantity)}::bigint AS quantity,
              ${stmt.param(JSON.stringify(usage.cause))}::jsonb AS cause`,
    );
    const recorded = this.recordFromCte(stmt, 'use_fact', usage.kind, { accountId: 'account_id', resourceId: 'resource_id', quantity: 'quantity', cause: 'cause' });
    const { rows } = await exec<{ recorded: boolean }>(tx, stmt.text(`SELECT EXISTS (SELECT FROM ${recorded}) AS recorded`), stmt.params);
    return rows[0].recorded;
  }

  /**
   * record as a fragment of a statement: one usage row of `kind` per row of CTE `source`, with
   * account, resource, quantity (a whole number ≥ 0, checked by the table) and cause (jsonb:
   * causeSql) as SQL over its columns. The cause is written by this same INSERT, with the unit
   * price and quantity it was billed at in its price rule. Returns the CTE of the rows recorded.
   */
  recordFromCte(stmt: CteStatement, source: string, kind: UsageKind, columns: { accountId: string; resourceId: string; quantity: string; cause: string }): string {
    const unit = stmt.param(this.unitPriceMicros(kind), 'bigint');
    const cause = `jsonb_set(${columns.cause}, '{price_rule}', (${columns.cause} -> 'price_rule') || jsonb_build_object('unit_price_micros', ${unit}, 'quantity', ${columns.quantity}::bigint))
                   || jsonb_build_object('legacy', false)`;
    const kindParam = stmt.param(kind, 'text');
    // WHERE usage_record_twin(kind, resource) IS NULL: the second guard, a resource is billed once
    // per kind across the ledger's time partitions (migration 0052; each partition's UNIQUE (kind,
    // resource_id), ON CONFLICT's, holds only within it). Rows in resource order: two statements
    // sharing resources take the keys' advisory locks in one order.
    return stmt.with(
      'use_recorded',
      `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
       SELECT onceline_id('${IdPrefix.UsageRecord}'), ${columns.accountId}, ${kindParam}, ${columns.resourceId}, ${columns.quantity}, ${unit}, ${columns.quantity}::bigint * ${unit}, ${cause}
         FROM (SELECT * FROM ${source} ORDER BY ${columns.resourceId}) AS ${source}
        WHERE usage_record_twin(${kindParam}, ${columns.resourceId}) IS NULL
       ON CONFLICT DO NOTHING RETURNING id`,
    );
  }

  async summary(accountId: string, from?: Date, to?: Date): Promise<UsageSummary> {
    const [row] = await queryRows(this.dataSource.manager, summarySql('$1', '$2', '$3'), [accountId, from ?? null, to ?? null]);
    return toUsageSummary(row);
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
}
