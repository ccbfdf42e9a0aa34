import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';

/**
 * The Call resource as the contract names it (docs/contract.md, "Voice"): the payload of the
 * call.* customer events and the body of GET /v2/calls/:id. Written ahead of the calls module so
 * the webhooks section of the API description is complete; that module owns it from then on
 * (adjust it to what its view really returns: the client test validates answers against it).
 */
const at = (example: string | null) => ({ type: 'string' as const, format: 'date-time', nullable: true, example });

@ApiSchema({ name: 'RingTarget' })
export class RingTarget {
  @ApiProperty({ example: '+15550003333', description: 'E.164' }) to!: string;
  @ApiProperty({ type: 'integer', minimum: 5, maximum: 120, default: 20, example: 20 }) timeout_secs!: number;
}

@ApiSchema({ name: 'RingFallback' })
export class RingFallback {
  @ApiProperty({ enum: ['hangup', 'voicemail', 'forward'], default: 'hangup', example: 'voicemail' }) action!: 'hangup' | 'voicemail' | 'forward';
  @ApiPropertyOptional({ example: '+15550004444', description: 'The number to forward to (action forward)' }) to?: string;
}

@ApiSchema({ name: 'RingPlan' })
export class RingPlan {
  @ApiProperty({ type: [RingTarget], minItems: 1, maxItems: 10 }) targets!: RingTarget[];
  @ApiProperty({ type: 'integer', minimum: 0, example: 0, description: 'Index of the target dialed now' }) next!: number;
  @ApiProperty({ type: RingFallback }) fallback!: RingFallback;
}

@ApiSchema({ name: 'CallLeg' })
export class CallLeg {
  @ApiProperty({ type: 'integer', minimum: 0, example: 0 }) target_index!: number;
  @ApiProperty({ example: '+15550003333' }) to!: string;
  @ApiProperty({ example: 'answered' }) status!: string;
  @ApiProperty(at('2026-11-03T10:15:00.000Z')) dialed_at!: string | null;
  @ApiProperty(at('2026-11-03T10:15:04.000Z')) answered_at!: string | null;
  @ApiProperty(at(null)) ended_at!: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: null }) hangup_cause!: string | null;
}

@ApiSchema({ name: 'Call' })
export class CallView {
  @ApiProperty({ example: 'call_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['call'] }) record_type!: 'call';
  @ApiProperty({ enum: ['inbound', 'outbound'], example: 'inbound' }) direction!: 'inbound' | 'outbound';
  @ApiProperty({ example: '+13125550001' }) from!: string;
  @ApiProperty({ example: '+15550001111' }) to!: string;
  @ApiProperty({ enum: ['ringing', 'in_progress', 'completed', 'missed', 'failed'], example: 'completed' }) status!: string;
  @ApiProperty({ enum: ['telnyx', 'twilio'], example: 'telnyx' }) carrier!: string;
  @ApiProperty({ type: 'string', nullable: true, example: 'v3:session-8b1f', description: "What the carrier's call log names the call by" }) carrier_call_id!: string | null;
  @ApiProperty(at('2026-11-03T10:15:04.000Z')) answered_at!: string | null;
  @ApiProperty(at('2026-11-03T10:17:10.000Z')) ended_at!: string | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 126 }) duration_seconds!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 3, description: 'ceil(duration / 60), at least 1 once answered' }) billable_minutes!: number | null;
  @ApiProperty({ type: 'string', nullable: true, example: 'normal_clearing' }) hangup_cause!: string | null;
  @ApiProperty({ example: false }) transcribe!: boolean;
  @ApiProperty({ type: 'string', nullable: true, example: null }) voicemail_url!: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: null }) transcript!: string | null;
  @ApiProperty({ type: () => RingPlan, nullable: true, description: 'null for a call without a plan (outbound)' }) ring_plan!: RingPlan | null;
  @ApiProperty({ type: [CallLeg] }) legs!: CallLeg[];
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
}
