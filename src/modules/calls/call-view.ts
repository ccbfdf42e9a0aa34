import type { CarrierName } from '../../carriers/normalized-event.js';
import type { RingPlanState } from '../sequential-ring/ring-plan.js';

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

export interface LegView {
  id: string;
  target_index: number;
  attempt: number;
  to: string;
  status: LegStatus;
  dialed_at: string;
  answered_at: string | null;
  ended_at: string | null;
  hangup_cause: string | null;
}

/** A call as the REST API and the customer events show it. */
export interface CallView {
  id: string;
  record_type: 'call';
  direction: CallDirection;
  from: string;
  to: string;
  status: CallStatus;
  carrier: CarrierName;
  carrier_call_id: string | null;
  answered_at: string | null;
  ended_at: string | null;
  duration_seconds: number | null;
  billable_minutes: number | null;
  hangup_cause: string | null;
  transcribe: boolean;
  voicemail_url: string | null;
  transcript: string | null;
  ring_plan: Pick<RingPlanState, 'targets' | 'next' | 'fallback'> | null;
  legs: LegView[];
  created_at: string;
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
