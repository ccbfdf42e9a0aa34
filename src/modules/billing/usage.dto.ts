import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { UsageCause } from './usage-cause.dto.js';

export const USAGE_KINDS = ['sms_outbound_segments', 'sms_inbound_segments', 'call_minutes', 'number_months'] as const;
export type UsageKind = (typeof USAGE_KINDS)[number];

/** One ledger row: a billable fact, written once by the transition that earned it. Integers only. */
@ApiSchema({ name: 'UsageRecord' })
export class UsageRecordView {
  @ApiProperty({ example: 'use_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['usage_record'] }) record_type!: 'usage_record';
  @ApiProperty({ enum: USAGE_KINDS, example: 'sms_outbound_segments' }) kind!: UsageKind;
  @ApiProperty({ example: 'msg_01jd5x2m3n4p5q6r7s8t9v0w1x', description: 'The message or call billed; for number_months `<number id>:<YYYY-MM>`' }) resource_id!: string;
  @ApiProperty({ type: 'integer', example: 2, description: 'Segments, minutes or number-months' }) quantity!: number;
  @ApiProperty({ type: 'integer', example: 4000, description: 'Micro-units of currency' }) unit_price_micros!: number;
  @ApiProperty({ type: 'integer', example: 8000, description: 'quantity × unit_price_micros' }) amount_micros!: number;
  @ApiProperty({ example: 'USD' }) currency!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
  @ApiPropertyOptional({ type: () => UsageCause, description: 'With include=causes: what caused the charge' }) cause?: UsageCause;
}

/** One ledger row with what caused it (GET /v2/usage/records/{id}). */
@ApiSchema({ name: 'UsageRecordWithCause' })
export class UsageRecordWithCauseView extends UsageRecordView {
  @ApiProperty({ type: () => UsageCause, description: 'What caused the charge' }) declare cause: UsageCause;
}

/** Totals of the ledger over a period. */
@ApiSchema({ name: 'UsageSummary' })
export class UsageSummary {
  @ApiProperty({ type: 'integer', example: 20 }) sms_outbound_segments!: number;
  @ApiProperty({ type: 'integer', example: 10 }) sms_inbound_segments!: number;
  @ApiProperty({ type: 'integer', example: 3 }) call_minutes!: number;
  @ApiProperty({ type: 'integer', example: 2, description: 'Monthly number rentals (one per number per calendar month)' }) number_months!: number;
  @ApiProperty({ type: 'integer', example: 141000, description: 'Micro-units of currency' }) amount_micros!: number;
  @ApiProperty({ example: 'USD' }) currency!: string;
}
