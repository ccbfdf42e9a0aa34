import { failureReasonOf, type FailureReason } from '../failure-reason.js';

/**
 * Telnyx's error codes we act on: 40300 "Blocked due to STOP message" (a block rule Telnyx keeps
 * after the handset texted STOP; https://developers.telnyx.com/api/errors/40300), answered to the
 * send (409, errors[0].code) or in a message.finalized webhook's errors[].
 */
const REASONS: Record<string, FailureReason> = { '40300': 'recipient_opted_out' };

export const telnyxFailureReason = (code: string | undefined) => failureReasonOf(REASONS, code);
