/**
 * The details a message's status history carries (message_status_history.detail) where the status
 * alone does not say it: how a send's outcome became unknown, how that was resolved, and a
 * receipt that outran the carrier's answer. GET /v2/messages/:id shows them (StatusChange).
 */
export const OUTCOME_UNKNOWN = 'outcome_unknown';
export const SendResolution = {
  /** A status webhook naming our message (its reference) arrived first. */
  byReceipt: 'found_by_receipt',
  /** The carrier's lookup showed it. */
  byLookup: 'found_by_lookup',
  /** The carrier's answer to an earlier attempt arrived after all (a run past its lease). */
  answeredLate: 'answered_late',
  /** The carrier showed nothing within SEND_OUTCOME_WINDOW_SECONDS: sent once more. */
  resent: 'resent_after_nothing_found',
  /** Nothing shown after MAX_RESENDS_AFTER_NOTHING_FOUND resends either: failed. */
  gaveUp: 'nothing_found_after_resends',
  /** Nothing shown within the window, and the recipient opted out meanwhile: failed instead of sent again. */
  optedOut: 'opted_out_before_resend',
} as const;
/** A receipt naming a message still `sending` whose outcome was not (yet) unknown: it outran the carrier's answer. */
export const RECEIPT_BEFORE_ANSWER = 'receipt_before_answer';

/** A claim given back unsent, queued again: the run held it too long after it was decided to keep the number's pace (claimTooOld). */
export const CLAIM_TOO_OLD = 'claim_too_old_to_send';
