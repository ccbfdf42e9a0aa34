/** What the sandbox has done since start (or the last reset): GET /sandbox/stats. */
export interface SandboxStats {
  sends: {
    /** Send-API requests received (both carriers). */
    requests: number;
    /** New messages accepted (each gets one webhook series). */
    accepted: number;
    /** Same Idempotency-Key again: same message id, no new series. */
    replayed: number;
    /** Answered 500 / 503, or held until the client gave up (the message was accepted all the same). */
    failed: { '500': number; '503': number; timeout: number };
    /** Refused with a 4xx by chaos (`reject`). */
    rejected: number;
    /** Wrong credentials or malformed request. */
    invalid: number;
  };
  /** Simulated inbound SMS (POST /sandbox/inbound). */
  inbound: number;
  webhooks: {
    /** Distinct carrier events before chaos (message.sent, message.finalized, message.received, contradictions). */
    events: number;
    /** HTTP requests made to the app, duplicates and retries included. */
    deliveries: number;
    /** Extra copies sent by `duplicate`, of which `resigned` under a new event id. */
    duplicates: number;
    resigned: number;
    /** Contradictory receipts (delivery_failed after delivered). */
    contradictions: number;
    /** Repeats after a failed delivery (non-2xx or no answer). */
    retries: number;
    /** The app's answers: {"status":"accepted"} (new event) and {"status":"duplicate"}. */
    answered: { accepted: number; duplicate: number };
    /** Answers by HTTP status ("network" when none came). */
    statuses: Record<string, number>;
    /** Deliveries given up after every retry. */
    failed: number;
    /** Series still running (wait for 0 before counting). */
    pending: number;
  };
}

export function emptyStats(): SandboxStats {
  return {
    sends: { requests: 0, accepted: 0, replayed: 0, failed: { '500': 0, '503': 0, timeout: 0 }, rejected: 0, invalid: 0 },
    inbound: 0,
    webhooks: {
      events: 0, deliveries: 0, duplicates: 0, resigned: 0, contradictions: 0, retries: 0,
      answered: { accepted: 0, duplicate: 0 }, statuses: {}, failed: 0, pending: 0,
    },
  };
}
