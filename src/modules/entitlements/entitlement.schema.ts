import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/**
 * The Entitlement resource as the contract names it (docs/contract.md, "Entitlements"): the
 * payload of entitlement.granted and an item of GET /v2/entitlements. Written ahead of the
 * entitlements module so its webhook is described the day the type is listed; that module owns
 * it from then on.
 */
@ApiSchema({ name: 'Entitlement' })
export class EntitlementView {
  @ApiProperty({ example: 'ent_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['sms_segments', 'call_minutes'], example: 'sms_segments' }) type!: 'sms_segments' | 'call_minutes';
  @ApiProperty({ type: 'integer', minimum: 0, example: 1000, description: 'Plan quantity × invoice line quantity' }) quantity!: number;
  @ApiProperty({ example: 'in_1QbX2c3D4e5F6g7H' }) invoice_id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-01T00:00:00.000Z' }) period_start!: string;
  @ApiProperty({ format: 'date-time', example: '2026-12-01T00:00:00.000Z' }) period_end!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-01T00:00:05.000Z' }) created_at!: string;
}
