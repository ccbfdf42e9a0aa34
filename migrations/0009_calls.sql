-- Calls (module calls): one row per call, the legs we dialed for it, the timeline of carrier
-- events that touched it, and transcript fragments. The guards live on these rows: the ring
-- cursor (ring_plan) and status share the call row, so one WHERE clause checks both; the hangup
-- is guarded by ended_at IS NULL.

CREATE TABLE calls (
  id                 text PRIMARY KEY,
  account_id         text NOT NULL REFERENCES accounts(id),
  direction          text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
  from_number        text NOT NULL,
  to_number          text NOT NULL,
  status             text NOT NULL CHECK (status IN ('ringing', 'in_progress', 'completed', 'missed', 'failed')),
  carrier            text NOT NULL CHECK (carrier IN ('telnyx', 'twilio')),
  -- what the carrier's call log names the call by (Telnyx call_session_id, Twilio CallSid)
  carrier_call_id    text NOT NULL,
  -- the leg that is the call itself: the caller's (inbound) or the one our own side placed
  caller_control_id  text,
  -- a ring plan's copy at call time, with its cursor: {targets, fallback, next, attempt, declined, phase}
  ring_plan          jsonb,
  answered_leg       text,
  answered_at        timestamptz,
  bridged_at         timestamptz,
  ended_at           timestamptz,
  duration_seconds   integer CHECK (duration_seconds >= 0),
  billable_minutes   integer CHECK (billable_minutes >= 0),
  hangup_cause       text,
  transcribe         boolean NOT NULL DEFAULT false,
  voicemail_url      text,
  transcript         text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  -- one call per carrier call, however often its first event is delivered
  UNIQUE (carrier, carrier_call_id)
);
CREATE INDEX calls_account_idx ON calls (account_id, id DESC);

CREATE TABLE call_legs (
  id             text PRIMARY KEY,                 -- leg_…: the leg's command ids derive from it
  call_id        text NOT NULL REFERENCES calls(id),
  target_index   integer NOT NULL CHECK (target_index >= 0),
  attempt        integer NOT NULL CHECK (attempt >= 1),
  to_number      text NOT NULL,
  status         text NOT NULL CHECK (status IN ('dialing', 'ringing', 'answered', 'ended', 'failed')),
  control_id     text,                              -- the carrier's id for commands to this leg
  dialed_at      timestamptz NOT NULL DEFAULT now(),
  answered_at    timestamptz,
  ended_at       timestamptz,
  hangup_cause   text,
  -- a target is dialed at most once per attempt number, however often the decision is replayed
  UNIQUE (call_id, target_index, attempt)
);

CREATE TABLE call_timeline (
  id                 bigserial PRIMARY KEY,
  call_id            text NOT NULL REFERENCES calls(id),
  carrier_event_id   text NOT NULL UNIQUE,          -- one entry per stored carrier event
  event_type         text NOT NULL,
  leg                text,                          -- 'caller' or the leg id
  outcome            text NOT NULL CHECK (outcome IN ('applied', 'duplicate', 'superseded', 'ignored')),
  note               text,
  occurred_at        timestamptz NOT NULL,                 -- the carrier's clock, for reading only
  received_at        timestamptz NOT NULL,                 -- when ingest stored it: the timeline's order
  recorded_at        timestamptz NOT NULL DEFAULT now()    -- when it was processed
);
CREATE INDEX call_timeline_call_idx ON call_timeline (call_id, received_at);

CREATE TABLE call_transcript_fragments (
  id           bigserial PRIMARY KEY,
  call_id      text NOT NULL REFERENCES calls(id),
  occurred_at  timestamptz NOT NULL,
  text         text NOT NULL,
  -- a fragment re-delivered under a new event id is the same fragment: kept once
  UNIQUE (call_id, occurred_at, text)
);
