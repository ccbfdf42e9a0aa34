import type { Hangup } from './call-hangups.js';
import { answeredSeconds } from './call-leg.js';

/**
 * The sandbox's call log (GET /sandbox/calls/log): one JSON line per call session whose first leg
 * (the inbound caller, or the leg of an outbound call) has ended, in the order they ended, as
 * `audit:calls --carrier-log FILE` reads it. The words follow the carriers' call records: a call
 * is `completed` once answered, whatever ended it; the others never were.
 */
export type CallLogStatus = 'completed' | 'busy' | 'rejected' | 'no-answer' | 'canceled' | 'failed';

export interface CallLogLine {
  call_session_id: string;
  /** Who called and the number called (for an outbound call: our number and the callee), as a carrier's call record has them. */
  from: string;
  to: string;
  status: CallLogStatus;
  /** When the call's first leg started (ISO 8601, ms). */
  start_time: string;
  /** When the call's first leg ended. */
  end_time: string;
  /** From the answer of the first leg to its end, rounded to whole seconds; 0 when never answered. */
  duration_secs: number;
}

export interface EndedLeg {
  callSessionId: string;
  from: string;
  to: string;
  startedAt: Date;
  answeredAt?: Date;
  endedAt: Date;
  hangup: Hangup;
}

export function callLogStatus(leg: Pick<EndedLeg, 'answeredAt' | 'hangup'>): CallLogStatus {
  if (leg.answeredAt) return 'completed';
  switch (leg.hangup.cause) {
    case 'user_busy':
      return 'busy';
    case 'call_rejected':
      return 'rejected';
    case 'originator_cancel':
      return 'canceled';
    case 'unspecified':
      return 'failed';
    default:
      // timeout, time_limit, or our app hanging up a call it never answered.
      return 'no-answer';
  }
}

export function callLogLine(leg: EndedLeg): CallLogLine {
  return {
    call_session_id: leg.callSessionId,
    from: leg.from,
    to: leg.to,
    status: callLogStatus(leg),
    start_time: leg.startedAt.toISOString(),
    end_time: leg.endedAt.toISOString(),
    duration_secs: answeredSeconds(leg),
  };
}

/** Newline-delimited JSON, one line per call, ending with a newline (empty when there is none). */
export function formatCallLog(lines: readonly object[]): string {
  return lines.map((line) => `${JSON.stringify(line)}\n`).join('');
}
