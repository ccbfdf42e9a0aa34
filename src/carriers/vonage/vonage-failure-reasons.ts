import { failureReasonOf, type FailureReason } from '../failure-reason.js';

/**
 * Vonage Messages' error codes we act on: 1240 "Illegal Number: the user has already sent a STOP
 * opt-out message" (the Messages API's status error codes, vonage-messages-v1.json; Vonage's
 * "Messaging Opted-out Numbers" guide: the send is taken, 202, and the status webhook fails it).
 */
const REASONS: Record<string, FailureReason> = { '1240': 'recipient_opted_out' };

export const vonageFailureReason = (code: string | undefined) => failureReasonOf(REASONS, code);
