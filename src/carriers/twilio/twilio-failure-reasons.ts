import { failureReasonOf, type FailureReason } from '../failure-reason.js';

/**
 * Twilio's error codes we act on: 21610 "Attempt to send to unsubscribed recipient" (the handset
 * texted STOP to Twilio; https://www.twilio.com/docs/api/errors/21610), answered to the send (400)
 * or as a failed status callback's ErrorCode.
 */
const REASONS: Record<string, FailureReason> = { '21610': 'recipient_opted_out' };

export const twilioFailureReason = (code: string | undefined) => failureReasonOf(REASONS, code);
