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
    /** New messages answered 429 + Retry-After: past their sending number's throughput (GET /sandbox/throughput). */
    throttled: number;
    /** The same, by sending number. */
    throttled_by_number: Record<string, number>;
    /** Messages accepted, by sending number. */
    accepted_by_number: Record<string, number>;
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
    /** Series still running or queued (wait for 0 before counting). */
    pending: number;
  };
  /** Telnyx Call Control emulation (its webhooks are counted in `webhooks` too). */
  calls: CallStats;
  /** Twilio Voice emulation (its status callbacks are counted in `webhooks` too). */
  twilio_voice: TwilioVoiceStats;
}

/** Counters of the emulated Twilio Voice (GET /sandbox/stats → `twilio_voice`). */
export interface TwilioVoiceStats {
  /** Inbound calls started (POST /sandbox/calls/inbound with "carrier":"twilio"). */
  calls: number;
  /** Requests for TwiML (voice URL, dial and record actions), copies and retries included. */
  requests: number;
  /** A TwiML request whose copies were answered differently: must stay 0. */
  mismatched_replies: number;
  /** Requests answered with no TwiML we could follow (or not 200). */
  bad_replies: number;
  /** Verbs followed, by name (Dial, Record, Hangup, Reject, Response). */
  verbs: Record<string, number>;
}

/** Counters of the emulated Telnyx Call Control (GET /sandbox/stats → `calls`). */
export interface CallStats {
  /** Caller legs started by POST /sandbox/calls/inbound. */
  inbound: number;
  dials: {
    /** POST /v2/calls received, valid or not. */
    requests: number;
    /** New legs dialed. */
    accepted: number;
    /** A command_id seen before: the same leg answered again, nothing dialed. */
    replayed: number;
    /** Refused: bad credentials (401) or a body Telnyx would refuse (422). */
    invalid: number;
    /** Answered with a behaviour's `dial_error`, by status. */
    errors: Record<string, number>;
    /** New legs per dialed number. */
    to: Record<string, number>;
    /** Dials linked to a caller leg that had already hung up. */
    after_caller_hangup: number;
    /** Dials into a call while another dialed leg of it still rang. */
    while_another_rings: number;
    /** Dials to a number that had declined (call_rejected / user_busy) earlier in the same call. */
    after_decline: number;
    /** Dialed legs that rang until their own timeout although their caller had hung up. */
    left_ringing: number;
    /**
     * A second physical leg for one intent: a dial whose command_id came back after Telnyx's
     * window (60 s), or a dial carrying the client_state of an earlier leg.
     */
    duplicate_legs: number;
  };
  commands: {
    /** POST /v2/calls/{id}/actions/{action} received, valid or not. */
    requests: number;
    /** Commands carried out, by action (replays and refusals not included). */
    by_action: Record<string, number>;
    /** A command_id seen before on that leg: the first answer again, no second effect. */
    replayed: number;
    /** 422 "Call has already ended". */
    ended: number;
    /** Unknown call_control_id (404). */
    not_found: number;
    /** Refused otherwise: credentials, body, the leg's state. */
    invalid: number;
  };
  /** Commands carried out whose answer was lost on purpose (`lose_command_answers`), by command. */
  lost_answers: Record<string, number>;
  /** Chaos `fail_rate` / `reject` applied to call-control requests (dials and commands). */
  faults: { reject: number; '500': number; '503': number; timeout: number };
  /** Call events generated, by event type (before chaos copies them). */
  events: Record<string, number>;
  /** Leg hangups by hangup_cause. */
  hangups: Record<string, number>;
  /** Inbound calls whose caller leg ended, by the number of legs dialed for them until then ("0", "1", ...). */
  legs_per_call: Record<string, number>;
  /** Legs alive now (a gauge: kept across a reset). */
  live_legs: number;
}

function emptyCallStats(): CallStats {
  return {
    inbound: 0,
    dials: {
      requests: 0, accepted: 0, replayed: 0, invalid: 0, errors: {}, to: {},
      after_caller_hangup: 0, while_another_rings: 0, after_decline: 0, left_ringing: 0, duplicate_legs: 0,
    },
    lost_answers: {},
    commands: { requests: 0, by_action: {}, replayed: 0, ended: 0, not_found: 0, invalid: 0 },
    faults: { reject: 0, '500': 0, '503': 0, timeout: 0 },
    events: {},
    hangups: {},
    legs_per_call: {},
    live_legs: 0,
  };
}

/** Adds one to `counts[key]`. */
export function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

export function emptyStats(): SandboxStats {
  return {
    sends: { requests: 0, accepted: 0, replayed: 0, failed: { '500': 0, '503': 0, timeout: 0 }, rejected: 0, invalid: 0, throttled: 0, throttled_by_number: {}, accepted_by_number: {} },
    inbound: 0,
    webhooks: {
      events: 0, deliveries: 0, duplicates: 0, resigned: 0, contradictions: 0, retries: 0,
      answered: { accepted: 0, duplicate: 0 }, statuses: {}, failed: 0, pending: 0,
    },
    calls: emptyCallStats(),
    twilio_voice: { calls: 0, requests: 0, mismatched_replies: 0, bad_replies: 0, verbs: {} },
  };
}
