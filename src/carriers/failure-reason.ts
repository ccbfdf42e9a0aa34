/**
 * Why the carrier refused or failed a message, where it matters past the adapter: the recipient
 * opted out at the carrier (it keeps its own STOP list). Each adapter maps its own codes to it.
 */
export type FailureReason = 'recipient_opted_out';

/** `{ reason }` when a carrier's `reasons` table maps its error `code` to one, else nothing (spread into a receipt or a refusal). */
export function failureReasonOf(reasons: Readonly<Record<string, FailureReason>>, code: string | undefined): { reason?: FailureReason } {
  const reason = code === undefined ? undefined : reasons[code];
  return reason ? { reason } : {};
}
