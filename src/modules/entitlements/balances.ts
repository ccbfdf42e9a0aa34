import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { UsageLedger } from '../billing/usage-ledger.js';
import { PrepaidBundles } from '../billing/prepaid-bundles.js';
import { DRAWN_DOWN_BY, ENTITLEMENT_TYPES, type EntitlementType } from './entitlement-types.js';
import { queryRows } from '../../platform/database/tx.js';

@ApiSchema({ name: 'Balance', description: 'What is left of the prepaid bundles of one type' })
export class BalanceView {
  @ApiProperty({ enum: ENTITLEMENT_TYPES, example: 'sms_segments' }) type!: EntitlementType;
  @ApiProperty({ type: 'integer', example: 1000, description: 'Units of every bundle of this type granted so far' }) granted!: number;
  @ApiProperty({ type: 'integer', example: 42, description: 'Usage of this type recorded since its first bundle was granted' }) used!: number;
  @ApiProperty({ type: 'integer', example: 958, description: 'granted - used, at least 0' }) remaining!: number;
  @ApiProperty({ type: 'integer', example: 0, description: 'used - granted, at least 0: usage beyond the bundles (billed at the usage prices)' }) overage!: number;
}

/** `{"data": [Balance...]}`: one entry per type with at least one grant (no paging: at most one per type). */
@ApiSchema({ name: 'BalanceList' })
export class BalanceListResponse {
  @ApiProperty({ type: () => [BalanceView] }) data!: BalanceView[];
}

/**
 * What is left of the account's prepaid bundles, computed on every read from the grants and the
 * usage ledger (through Billing's UsageLedger): no counter is ever updated in place, so a replayed
 * grant or usage row cannot drift it. Usage from the first grant of a type on draws that type down.
 */
@Injectable()
export class Balances implements OnModuleInit {
  constructor(
    private readonly dataSource: DataSource,
    private readonly usage: UsageLedger,
    private readonly bundles: PrepaidBundles,
  ) {}

  /** Billing shows which bundle each usage row drew (a charge's cause, a statement) by this same rule, from these grants. */
  onModuleInit(): void {
    this.bundles.register({
      grantsSql: `SELECT id AS entitlement_id, account_id, type AS entitlement_type, quantity, invoice_id, created_at AS granted_at FROM entitlements`,
      drawnBy: DRAWN_DOWN_BY,
    });
  }

  async forAccount(accountId: string): Promise<BalanceView[]> {
    const grants: { type: EntitlementType; granted: string; since: Date }[] = await queryRows(this.dataSource.manager,
      `SELECT type, sum(quantity)::text AS granted, min(created_at) AS since FROM entitlements WHERE account_id = $1 GROUP BY type ORDER BY type`,
      [accountId],
    );
    return Promise.all(
      grants.map(async ({ type, granted: grantedText, since }) => {
        const totals = await this.usage.totalsSince(accountId, since);
        const used = DRAWN_DOWN_BY[type].reduce((sum, kind) => sum + totals[kind], 0);
        const granted = Number(grantedText);
        return { type, granted, used, remaining: Math.max(0, granted - used), overage: Math.max(0, used - granted) };
      }),
    );
  }
}
