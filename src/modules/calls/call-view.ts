import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { CarrierName } from '../../carriers/carrier-name.js';
import { RingSettingsView } from '../sequential-ring/voice-settings.view.js';
import type { RingPlanState } from '../sequential-ring/ring-plan.js';
import { isoTimestampSql } from '../../platform/database/cte-statement.js';

export const CALL_STATUSES = ['ringing', 'in_progress', 'completed', 'missed', 'failed'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];
export const CALL_DIRECTIONS = ['inbound', 'outbound'] as const;
export type CallDirection = (typeof CALL_DIRECTIONS)[number];
export const LEG_STATUSES = ['dialing', 'ringing', 'answered', 'ended', 'failed'] as const;
export type LegStatus = (typeof LEG_STATUSES)[number];

/** The calls row as our statements return it (RETURNING ${CALL_COLUMNS}). */
export interface CallRow {
  id: string;
  account_id: string;
  direction: CallDirection;
  from_number: string;
  to_number: string;
  status: CallStatus;
  carrier: CarrierName;
  carrier_call_id: string;
  caller_control_id: string | null;
  ring_plan: RingPlanState | null;
  answered_leg: string | null;
  answered_at: Date | null;
  bridged_at: Date | null;
  ended_at: Date | null;
  duration_seconds: number | null;
  billable_minutes: number | null;
  hangup_cause: string | null;
  transcribe: boolean;
  voicemail_url: string | null;
  transcript: string | null;
  created_at: Date;
}

export const CALL_COLUMNS = `id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, caller_control_id, ring_plan,
  answered_leg, answered_at, bridged_at, ended_at, duration_seconds, billable_minutes, hangup_cause, transcribe, voicemail_url, transcript, created_at`;

export interface LegRow {
  id: string;
  call_id: string;
  target_index: number;
  attempt: number;
  to_number: string;
  status: LegStatus;
  control_id: string | null;
  dialed_at: Date;
  answered_at: Date | null;
  ended_at: Date | null;
  hangup_cause: string | null;
}

export const LEG_COLUMNS = `id, call_id, target_index, attempt, to_number, status, control_id, dialed_at, answered_at, ended_at, hangup_cause`;

/**
 * toLegView in SQL, over a call_legs row: a customer event's legs, read by the statement that
 * writes the event. A spec holds the two to one shape.
 */
export const LEG_VIEW_JSON = `jsonb_build_object('id', id, 'target_index', target_index, 'attempt', attempt, 'to', to_number, 'status', status,
  'dialed_at', ${isoTimestampSql('dialed_at')}, 'answered_at', ${isoTimestampSql('answered_at')}, 'ended_at', ${isoTimestampSql('ended_at')}, 'hangup_cause', hangup_cause)`;

/**
 * toCallView in SQL, over a calls row, without its legs (`legs` empty, as the customer events'
 * statements add them): a customer event written by a set statement (CallEndsInSets). The plan
 * shows only the keys it has of targets, next and fallback, as toCallView's object does. A test
 * holds the two to one shape.
 */
export const CALL_VIEW_JSON = `jsonb_build_object('id', id, 'record_type', 'call', 'direction', direction, 'from', from_number, 'to', to_number, 'status', status, 'carrier', carrier,
  'carrier_call_id', CASE WHEN carrier_call_id = id THEN NULL ELSE carrier_call_id END, 'answered_at', ${isoTimestampSql('answered_at')}, 'ended_at', ${isoTimestampSql('ended_at')},
  'duration_seconds', duration_seconds, 'billable_minutes', billable_minutes, 'hangup_cause', hangup_cause, 'transcribe', transcribe, 'voicemail_url', voicemail_url,
  'transcript', transcript, 'ring_plan', (SELECT jsonb_object_agg(p.key, p.value) FROM jsonb_each(ring_plan) p WHERE p.key IN ('targets', 'next', 'fallback')),
  'legs', '[]'::jsonb, 'created_at', ${isoTimestampSql('created_at')})`;

/** The order a call's legs are shown in (the API's and the customer events'). */
export const LEG_ORDER = `dialed_at, target_index, attempt`;

const at = (example: string | null) => ({ type: 'string' as const, format: 'date-time', nullable: true, example });

@ApiSchema({ name: 'CallLeg' })
export class LegView {
  @ApiProperty({ example: 'leg_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ type: 'integer', minimum: 0, example: 0, description: "Index of the ring plan's target (the forward target: targets.length)" }) target_index!: number;
  @ApiProperty({ type: 'integer', minimum: 1, example: 1, description: 'Try of that target (a 408/503/504 is dialed once more)' }) attempt!: number;
  @ApiProperty({ example: '+15550002222' }) to!: string;
  @ApiProperty({ enum: LEG_STATUSES, example: 'answered' }) status!: LegStatus;
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) dialed_at!: string;
  @ApiProperty(at('2026-11-03T10:15:04.000Z')) answered_at!: string | null;
  @ApiProperty(at(null)) ended_at!: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: null }) hangup_cause!: string | null;
}

@ApiSchema({ name: 'CallRingPlan' })
export class CallRingPlanView extends RingSettingsView {
  @ApiProperty({ type: 'integer', minimum: 0, example: 1, description: 'Index of the target after the one ringing now' }) next!: number;
}

/** A call as the REST API and the customer events show it. */
@ApiSchema({ name: 'Call' })
export class CallView {
  @ApiProperty({ example: 'call_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['call'] }) record_type!: 'call';
  @ApiProperty({ enum: CALL_DIRECTIONS, example: 'inbound' }) direction!: CallDirection;
  @ApiProperty({ example: '+13125550001' }) from!: string;
  @ApiProperty({ example: '+15550001111' }) to!: string;
  @ApiProperty({ enum: CALL_STATUSES, example: 'completed', description: 'missed: ended before anyone answered' }) status!: CallStatus;
  @ApiProperty({ enum: ['telnyx', 'twilio'], example: 'telnyx' }) carrier!: CarrierName;
  @ApiProperty({ type: 'string', nullable: true, example: 'v3:session-8b1f', description: "What the carrier's call log names the call by; null until the carrier names it" })
  carrier_call_id!: string | null;
  @ApiProperty(at('2026-11-03T10:15:04.000Z')) answered_at!: string | null;
  @ApiProperty(at('2026-11-03T10:17:10.000Z')) ended_at!: string | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 126 }) duration_seconds!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 3, description: 'ceil(duration / 60), at least 1 once answered' }) billable_minutes!: number | null;
  @ApiProperty({ type: 'string', nullable: true, example: 'normal_clearing' }) hangup_cause!: string | null;
  @ApiProperty({ example: false }) transcribe!: boolean;
  @ApiProperty({ type: 'string', nullable: true, example: null }) voicemail_url!: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: null }) transcript!: string | null;
  @ApiProperty({ type: () => CallRingPlanView, nullable: true, description: 'null for a call without a plan' }) ring_plan!: CallRingPlanView | null;
  @ApiProperty({ type: [LegView] }) legs!: LegView[];
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
}

const iso = (value: Date | string | null): string | null => (value === null ? null : new Date(value).toISOString());

export function toLegView(leg: LegRow): LegView {
  return {
    id: leg.id,
    target_index: leg.target_index,
    attempt: leg.attempt,
    to: leg.to_number,
    status: leg.status,
    dialed_at: iso(leg.dialed_at)!,
    answered_at: iso(leg.answered_at),
    ended_at: iso(leg.ended_at),
    hangup_cause: leg.hangup_cause,
  };
}

export function toCallView(call: CallRow, legs: LegRow[]): CallView {
  return {
    id: call.id,
    record_type: 'call',
    direction: call.direction,
    from: call.from_number,
    to: call.to_number,
    status: call.status,
    carrier: call.carrier,
    // an outbound call is known by our id until the carrier names its session
    carrier_call_id: call.carrier_call_id === call.id ? null : call.carrier_call_id,
    answered_at: iso(call.answered_at),
    ended_at: iso(call.ended_at),
    duration_seconds: call.duration_seconds,
    billable_minutes: call.billable_minutes,
    hangup_cause: call.hangup_cause,
    transcribe: call.transcribe,
    voicemail_url: call.voicemail_url,
    transcript: call.transcript,
    ring_plan: call.ring_plan && { targets: call.ring_plan.targets, next: call.ring_plan.next, fallback: call.ring_plan.fallback },
    legs: legs.map(toLegView),
    created_at: iso(call.created_at)!,
  };
}
