import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { ENTITLEMENT_TYPES, type EntitlementType } from './entitlement-types.js';

/** An entitlement as the API, the webhook answer and `entitlement.granted` show it. */
@ApiSchema({ name: 'Entitlement', description: 'A prepaid bundle granted by a paid invoice' })
export class EntitlementView {
  @ApiProperty({ example: 'ent_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['entitlement'] }) record_type!: 'entitlement';
  @ApiProperty({ enum: ENTITLEMENT_TYPES, example: 'sms_segments' }) type!: EntitlementType;
  @ApiProperty({ type: 'integer', example: 1000, description: 'Units granted: the plan quantity times the invoice line quantity' }) quantity!: number;
  @ApiProperty({ example: 'in_1QxV4mN2bY7cD8eF', description: "The billing provider's invoice that granted it" }) invoice_id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-01T00:00:00.000Z' }) period_start!: string;
  @ApiProperty({ format: 'date-time', example: '2026-12-01T00:00:00.000Z' }) period_end!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-01T00:00:03.000Z' }) created_at!: string;
}

/** The view's columns of `entitlements` (alias e); quantity arrives as text (bigint). */
export const ENTITLEMENT_COLUMNS = `e.id, 'entitlement' AS record_type, e.type, e.quantity::text AS quantity, e.invoice_id, e.period_start, e.period_end, e.created_at`;

type Row = Omit<EntitlementView, 'quantity'> & { quantity: string };

export function toEntitlementView(row: Row): EntitlementView {
  const { id, record_type, type, quantity, invoice_id, period_start, period_end, created_at } = row;
  // bigint as text; a grant is at most a plan's quantity times a line's, well inside 2^53
  return { id, record_type, type, quantity: Number(quantity), invoice_id, period_start, period_end, created_at };
}
