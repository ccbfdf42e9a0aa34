import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { UsageCause } from './usage-cause.dto.js';
import { UsageRecordView, UsageSummary } from './usage.dto.js';

/** A bundle's balance right after a usage row or grant, as it was then. */
@ApiSchema({ name: 'StatementBalance' })
export class StatementBalance {
  @ApiProperty({ enum: ['sms_segments', 'call_minutes'], example: 'sms_segments' }) entitlement_type!: string;
  @ApiProperty({ type: 'integer', example: 1000, description: 'Units of this type granted by then' }) granted!: number;
  @ApiProperty({ type: 'integer', example: 42, description: 'Units used from the first grant of this type up to and including this line' }) used!: number;
  @ApiProperty({ type: 'integer', example: 958, description: 'granted - used, at least 0' }) remaining!: number;
  @ApiProperty({ type: 'integer', example: 0, description: 'used - granted, at least 0 (a later grant covers it, as /v2/balances counts)' }) overage!: number;
}

/** One usage row of the period, with its cause and the balance of the bundle it drew, as it happened. */
@ApiSchema({ name: 'StatementLine' })
export class StatementLine extends UsageRecordView {
  @ApiProperty({ type: () => UsageCause }) declare cause: UsageCause;
  @ApiProperty({ type: () => StatementBalance, nullable: true, description: 'The balance of the bundle type this row draws down, right after it; null when no bundle of its type had been granted' })
  balance_after!: StatementBalance | null;
}

/** A bundle granted in the period. */
@ApiSchema({ name: 'StatementGrant' })
export class StatementGrant {
  @ApiProperty({ example: 'ent_01jd5x2m3n4p5q6r7s8t9v0w1x' }) entitlement_id!: string;
  @ApiProperty({ enum: ['sms_segments', 'call_minutes'], example: 'sms_segments' }) entitlement_type!: string;
  @ApiProperty({ type: 'integer', example: 1000 }) quantity!: number;
  @ApiProperty({ example: 'in_1QxV4mN2bY7cD8eF' }) invoice_id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-01T00:00:03.000Z' }) granted_at!: string;
}

/**
 * An account's monthly statement: every usage row created in the month (UTC), oldest first, each
 * with its cause; `totals` is GET /v2/usage for the same [from, to), read in the same snapshot,
 * and the lines sum to it exactly. Integers only: micro-units of `currency`.
 */
@ApiSchema({ name: 'Statement' })
export class StatementView {
  @ApiProperty({ enum: ['statement'] }) record_type!: 'statement';
  @ApiProperty({ example: '2026-11' }) period!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-01T00:00:00.000Z' }) from!: string;
  @ApiProperty({ format: 'date-time', example: '2026-12-01T00:00:00.000Z', description: 'Exclusive' }) to!: string;
  @ApiProperty({ example: 'USD' }) currency!: string;
  @ApiProperty({ type: () => UsageSummary, description: 'GET /v2/usage?from=…&to=… for the period: the lines sum to it' }) totals!: UsageSummary;
  @ApiProperty({ type: () => [StatementLine], description: 'Oldest first' }) lines!: StatementLine[];
  @ApiProperty({ type: () => [StatementGrant], description: 'Bundles granted in the period, oldest first' }) grants!: StatementGrant[];
}
