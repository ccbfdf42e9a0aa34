import { Injectable, type OnModuleInit } from '@nestjs/common';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { exec } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { BillableResources } from '../billing/billing-invariants.js';
import { UsageLedger } from '../billing/usage-ledger.js';
import { causeSql } from '../billing/usage-causes.js';
import { monthBounds } from '../billing/periods.js';

/** How a rental is counted, as its cause says. */
const RENTAL_RULE = 'one per number per calendar month (UTC) it was held in, not prorated';

export { PERIOD_PATTERN } from '../billing/periods.js';

export interface RentalRun {
  period: string;
  /** Numbers held during the period. */
  numbers: number;
  /** Usage rows this run wrote (0 when another run billed them all already). */
  billed: number;
}

/** A held number's rental rows: `<number id>:<YYYY-MM>` for each calendar month it was held in. */
const RENTED_MONTHS = `SELECT p.id || ':' || to_char(m, 'YYYY-MM') AS id
  FROM phone_numbers p, generate_series(date_trunc('month', p.activated_at AT TIME ZONE 'UTC'), coalesce(p.released_at, now()) AT TIME ZONE 'UTC', interval '1 month') m
 WHERE p.activated_at IS NOT NULL`;

/**
 * Monthly rental: one usage row per number per calendar month (UTC) in which the account held
 * it, for the whole month (not prorated). The row is keyed (number, period) under the ledger's
 * (kind, resource_id) guard (usage_record_twin, across its time partitions): a run repeated, crashed midway (one statement: all or nothing) or
 * run in two processes at once bills each number once.
 */
@Injectable()
export class NumberRentals implements OnModuleInit {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly ledger: UsageLedger,
    private readonly billable: BillableResources,
  ) {}

  onModuleInit(): void {
    this.billable.register('number_months', RENTED_MONTHS);
  }

  async run(period: string): Promise<RentalRun> {
    const bounds = monthBounds(period);
    if (!bounds) throw new Error('--period must be a calendar month YYYY-MM');
    const { from: start, to: end } = bounds;
    if (start.getTime() > Date.now()) throw new Error(`--period ${period} has not started yet`);
    const stmt = new CteStatement();
    // Held at some time in [start, end): active before the month ended, not released before it began.
    stmt.with(
      'rented',
      `SELECT account_id, id AS number_id, id || ':' || ${stmt.param(period, 'text')} AS resource_id, 1 AS quantity FROM phone_numbers
        WHERE activated_at < ${stmt.param(end, 'timestamptz')} AND (released_at IS NULL OR released_at >= ${stmt.param(start, 'timestamptz')})
          AND status IN ('active', 'releasing', 'released')`,
    );
    // The cause: the number, the month, and the rule (no carrier event: the run of this period bills it).
    const cause = causeSql(stmt, {
      resource: { type: 'number', id: 'number_id' },
      transition: `'rental'`,
      rule: `jsonb_build_object('unit', 'number_month', 'month', ${stmt.param(period, 'text')}, 'counted', ${stmt.param(RENTAL_RULE, 'text')})`,
    });
    const recorded = this.ledger.recordFromCte(stmt, 'rented', 'number_months', { accountId: 'account_id', resourceId: 'resource_id', quantity: 'quantity', cause });
    const { rows } = await this.uow.run((tx) => exec<{ numbers: string; billed: string }>(tx, stmt.text(`SELECT (SELECT count(*) FROM rented) AS numbers, (SELECT count(*) FROM ${recorded}) AS billed`), stmt.params));
    return { period, numbers: Number(rows[0].numbers), billed: Number(rows[0].billed) };
  }
}
