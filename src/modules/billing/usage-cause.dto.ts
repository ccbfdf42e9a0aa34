import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';

export const CAUSE_RESOURCE_TYPES = ['message', 'call', 'number', 'unknown'] as const;
export type CauseResourceType = (typeof CAUSE_RESOURCE_TYPES)[number];

/** How an outbound SMS came to be `sent`: the words of message_status_history.detail, and `send_answer`. */
export const SETTLED_BY = ['send_answer', 'found_by_lookup', 'answered_late', 'found_by_receipt', 'receipt_before_answer'] as const;
export type SettledBy = (typeof SETTLED_BY)[number];

export const PRICE_UNITS = ['segment', 'minute', 'number_month'] as const;

@ApiSchema({ name: 'UsageCauseResource', description: 'What was billed' })
export class CauseResource {
  @ApiProperty({ enum: CAUSE_RESOURCE_TYPES, example: 'message' }) type!: CauseResourceType;
  @ApiProperty({ example: 'msg_01jd5x2m3n4p5q6r7s8t9v0w1x', description: 'Our id of the message, call or number' }) id!: string;
}

@ApiSchema({ name: 'UsageCauseCarrierEvent', description: "A carrier event whose guarded transition wrote the usage row: ours (cev_) and the carrier's id of it" })
export class CauseCarrierEvent {
  @ApiProperty({ example: 'cev_01jd5x2m3n4p5q6r7s8t9v0w1x', description: 'Our id of the stored carrier event' }) id!: string;
  @ApiProperty({ example: '4ee8c3a6-4995-4309-a3c6-38e3db9ea4be', description: "The carrier's id of the event (Telnyx data.id, Twilio's idempotency token)" }) carrier_event_id!: string;
  @ApiProperty({ enum: ['receipt', 'inbound', 'hangup'], example: 'hangup', description: 'What the event was to the transition' }) role!: 'receipt' | 'inbound' | 'hangup';
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: '2026-11-03T10:15:00.000Z', description: "When the carrier says it happened (its envelope's occurred_at)" }) occurred_at!: string | null;
}

@ApiSchema({ name: 'UsagePriceRule', description: 'How the quantity was counted and priced; the fields beyond unit, unit_price_micros and quantity depend on the unit' })
export class PriceRule {
  @ApiProperty({ enum: PRICE_UNITS, example: 'segment' }) unit!: string;
  @ApiProperty({ type: 'integer', example: 4000, description: 'Micro-units of currency per unit' }) unit_price_micros!: number;
  @ApiProperty({ type: 'integer', example: 2 }) quantity!: number;
  @ApiPropertyOptional({ type: 'integer', example: 2, description: 'segment: the parts the text was sent or received in' }) segments?: number;
  @ApiPropertyOptional({ enum: ['GSM-7', 'UCS-2'], nullable: true, description: 'segment: the encoding that decided the part size (160/153 GSM-7, 70/67 UCS-2)' }) encoding?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true, description: "minute: the answer, from the carrier event's occurred_at" }) answered_at?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true, description: "minute: the hangup, from the carrier event's occurred_at" }) ended_at?: string | null;
  @ApiPropertyOptional({ type: 'integer', nullable: true, example: 125 }) duration_seconds?: number | null;
  @ApiPropertyOptional({ enum: ['answered_at_to_ended_at', 'carrier_reported'], nullable: true, description: 'minute: the seconds from answered_at to ended_at, or the duration the carrier reported with its final status' }) duration_source?: string | null;
  @ApiPropertyOptional({ example: 'ceil(duration_seconds / 60), at least 1', description: 'minute and number_month: the counting rule' }) counted?: string;
  @ApiPropertyOptional({ example: '2026-11', description: 'number_month: the calendar month (UTC) billed' }) month?: string;
}

@ApiSchema({ name: 'UsageDrawDown', description: 'Units of this usage row a prepaid bundle covered' })
export class DrawDown {
  @ApiProperty({ example: 'ent_01jd5x2m3n4p5q6r7s8t9v0w1x', description: 'The entitlement (bundle) the units came from' }) entitlement_id!: string;
  @ApiProperty({ enum: ['sms_segments', 'call_minutes'], example: 'sms_segments' }) entitlement_type!: string;
  @ApiProperty({ type: 'integer', example: 2 }) quantity!: number;
}

/** What caused a charge: the resource, the carrier facts and the transition that wrote it, the price rule, the bundles it drew. */
@ApiSchema({ name: 'UsageCause' })
export class UsageCause {
  @ApiProperty({ type: () => CauseResource }) resource!: CauseResource;
  @ApiProperty({ type: 'string', nullable: true, example: 'sending → sent', description: 'The guarded transition that made the usage billable' }) transition!: string | null;
  @ApiProperty({ enum: SETTLED_BY, nullable: true, description: 'Outbound SMS: what settled the send (its answer, a lookup, a late answer, a receipt)' }) settled_by!: SettledBy | null;
  @ApiProperty({ type: 'string', nullable: true, example: 'telnyx' }) carrier!: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: '40385f64-5717-4562-b3fc-2c963f66afa6', description: "The carrier's id of the message or call" }) carrier_resource_id!: string | null;
  @ApiProperty({ type: () => [CauseCarrierEvent], description: 'Empty for a send answer, a lookup, a rental, and legacy rows' }) carrier_events!: CauseCarrierEvent[];
  @ApiProperty({ type: () => PriceRule }) price_rule!: PriceRule;
  @ApiProperty({ type: () => [DrawDown], description: 'The bundles this row drew down, computed from the grants and the ledger as /v2/balances is' }) draw_downs!: DrawDown[];
  @ApiProperty({ example: false, description: 'Recorded before causes were kept: derived from the resource, carrier events unknown' }) legacy!: boolean;
}

/** A cause as a module hands it to UsageLedger.record: billing adds unit_price_micros and quantity to the rule. */
export type CauseInput = Omit<UsageCause, 'draw_downs' | 'legacy' | 'price_rule'> & { price_rule: Omit<PriceRule, 'unit_price_micros' | 'quantity'> };
